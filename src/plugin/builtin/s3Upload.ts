// Uploads to S3 that survive an outage: the body is cut into parts held in memory, each part is
// retried on its own until the store takes it (retryOutage), so an upload resumes from the last
// part the store acknowledged instead of starting over. A body smaller than one part is a single
// PutObject, retried whole. Memory is bounded by (parts in flight + the one being filled) x part size.
// Server-side encryption: the creating request (PutObject, CreateMultipartUpload) asks for it; with
// SSE-C every part, the completion and the HEAD after a lost answer carry the key as well.
// Every multipart upload is marked as Stowage's by a zero-byte object beside its key whose name only
// the holder of the location's secret key can compute (uploadMarkerKey): the sweep (s3Sweep.ts)
// aborts an upload only when that marker exists, so it never aborts another party's upload.
import crypto from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  ChecksumAlgorithm,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { log } from '../sdk/index.js';
import { createEncryption, customerKey, type CustomerKey, type ServerSideEncryption } from './awsSse.js';
import { isTransient, retryOutage } from './outage.js';

export interface UploadOptions {
  client: S3Client;
  windowMs: number;
  /** What set the window, for the error (outage.ts). */
  windowSource?: string;
  /** The host canceled the call: stop now, abort the multipart upload (later, if the store is down). */
  signal?: AbortSignal;
  /** Bytes per part (S3 wants at least 5 MiB for every part but the last). */
  partSize: number;
  /** Parts sent at once. */
  queueSize: number;
  sse: ServerSideEncryption;
}

/** Multipart uploads this process started and has not finished: the sweep never aborts them. */
export const liveUploads = new Set<string>();

/** What a marker's name is cut from: `<key>.stowage-upload-<32 hex digits>`. */
export const UPLOAD_MARKER_INFIX = '.stowage-upload-';

/**
 * The key of the marker that proves upload `uploadId` of `bucket/key` is Stowage's. Its name is an
 * HMAC over bucket, key and upload id, keyed by a key derived from the location's secret access key:
 * anyone may list upload ids and write objects into the bucket, but without that secret nobody can
 * name the marker of an upload, so no planted or copied object makes the sweep abort someone else's
 * upload. Whoever holds the secret could abort uploads directly anyway, so the marker grants nothing.
 */
export function uploadMarkerKey(secret: Buffer, bucket: string, key: string, uploadId: string): string {
  const mac = crypto.createHmac('sha256', secret).update(`${bucket}\0${key}\0${uploadId}`).digest('hex').slice(0, 32);
  return `${key}${UPLOAD_MARKER_INFIX}${mac}`;
}

/**
 * The marker secret of `client`'s credentials (undefined without a secret access key: then no upload
 * is marked and the sweep aborts nothing). Rotated credentials leave older marks unprovable, so an
 * upload orphaned before a rotation stays for the bucket's lifecycle rule to end, never aborted blindly.
 */
export async function markerSecret(client: S3Client): Promise<Buffer | undefined> {
  try {
    const creds = await client.config.credentials();
    if (creds.secretAccessKey === '') return undefined;
    return crypto.createHmac('sha256', creds.secretAccessKey).update('stowage.dev/aws multipart upload marker v1').digest();
  } catch {
    return undefined;
  }
}

/** Cuts `body` into buffers of exactly `size` bytes (the last may be shorter, never empty). */
export async function* parts(body: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  for await (const chunk of body) {
    let c = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (heldBytes + c.length >= size) {
      const take = size - heldBytes;
      held.push(c.subarray(0, take));
      yield Buffer.concat(held, size);
      held = [];
      heldBytes = 0;
      c = c.subarray(take);
    }
    if (c.length > 0) {
      // Copied: the source may reuse its buffer once we ask for the next chunk.
      held.push(Buffer.from(c));
      heldBytes += c.length;
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held, heldBytes);
}

function errName(err: unknown): string | undefined {
  return (err as { name?: string }).name;
}

async function checksummed(client: S3Client): Promise<boolean> {
  return (await client.config.requestChecksumCalculation()) === 'WHEN_SUPPORTED';
}

export async function uploadObject(o: UploadOptions, bucket: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
  const source = parts(body, o.partSize)[Symbol.asyncIterator]();
  try {
    const first = await source.next();
    const second = first.done === true ? first : await source.next();
    if (second.done === true) {
      const data = first.done === true ? Buffer.alloc(0) : first.value;
      await retryOutage(`PutObject ${bucket}/${key}`, retryOf(o), () =>
        o.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ContentLength: data.length, ...createEncryption(o.sse) }), { abortSignal: o.signal }),
      );
      return;
    }
    await multipart(o, bucket, key, [first.value as Buffer, second.value], source);
  } finally {
    await source.return?.(undefined);
  }
}

function retryOf(o: UploadOptions, signal: AbortSignal | undefined = o.signal): { windowMs: number; windowSource?: string; signal?: AbortSignal } {
  return { windowMs: o.windowMs, ...(o.windowSource !== undefined ? { windowSource: o.windowSource } : {}), ...(signal !== undefined ? { signal } : {}) };
}

/** The next part of the body, or the cancel's reason as soon as `signal` aborts (a cut stream may never end). */
async function nextOrAbort(rest: AsyncIterator<Buffer>, signal: AbortSignal | undefined): Promise<IteratorResult<Buffer>> {
  if (signal === undefined) return rest.next();
  signal.throwIfAborted();
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('the upload was canceled'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([rest.next(), aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

async function multipart(o: UploadOptions, bucket: string, key: string, head: Buffer[], rest: AsyncIterator<Buffer>): Promise<void> {
  const what = `multipart upload of ${bucket}/${key}`;
  const withChecksums = await checksummed(o.client);
  const created = await retryOutage(`CreateMultipartUpload ${bucket}/${key}`, retryOf(o), () =>
    o.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ...createEncryption(o.sse), ...(withChecksums ? { ChecksumAlgorithm: ChecksumAlgorithm.CRC32 } : {}) }), { abortSignal: o.signal }),
  );
  const uploadId = created.UploadId;
  if (uploadId === undefined) throw new Error(`CreateMultipartUpload ${bucket}/${key}: the store returned no upload id`);
  liveUploads.add(uploadId);
  const secret = await markerSecret(o.client);
  const marker = secret === undefined ? undefined : uploadMarkerKey(secret, bucket, key, uploadId);
  let markerVersion: string | undefined;
  const stop = new AbortController();
  // Parts stop on a failure elsewhere or on the host's cancel.
  const partSignal = o.signal !== undefined ? AbortSignal.any([stop.signal, o.signal]) : stop.signal;
  const done: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: { err: unknown } | undefined;
  const ssec = customerKey(o.sse);

  const send = (n: number, data: Buffer): void => {
    const p = retryOutage(`UploadPart ${n} of ${bucket}/${key}`, retryOf(o, partSignal), () =>
      o.client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: n, Body: data, ContentLength: data.length, ...ssec }), { abortSignal: partSignal }),
    ).then(
      (res) => {
        if (res.ETag === undefined) throw new Error(`UploadPart ${n} of ${bucket}/${key}: the store returned no ETag`);
        const { ETag, ChecksumCRC32, ChecksumCRC32C, ChecksumSHA1, ChecksumSHA256 } = res;
        done.push({ PartNumber: n, ETag, ...(ChecksumCRC32 !== undefined ? { ChecksumCRC32 } : {}), ...(ChecksumCRC32C !== undefined ? { ChecksumCRC32C } : {}), ...(ChecksumSHA1 !== undefined ? { ChecksumSHA1 } : {}), ...(ChecksumSHA256 !== undefined ? { ChecksumSHA256 } : {}) });
      },
    ).catch((err: unknown) => {
      failure ??= { err };
      stop.abort();
    }).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  try {
    // Written before any part: an upload whose writer dies after this point can be proved ours.
    if (marker !== undefined) {
      const put = await retryOutage(`PutObject ${bucket}/${marker}`, retryOf(o), () =>
        o.client.send(new PutObjectCommand({ Bucket: bucket, Key: marker, Body: Buffer.alloc(0), ContentLength: 0, ...createEncryption(o.sse) })),
      );
      markerVersion = put.VersionId;
    }
    let n = 0;
    for (const data of head) send(++n, data);
    for (;;) {
      while (inFlight.size >= o.queueSize && failure === undefined) await Promise.race(inFlight);
      if (failure !== undefined) break;
      const next = await nextOrAbort(rest, o.signal);
      if (next.done === true) break;
      send(++n, next.value);
    }
    await Promise.all(inFlight);
    if (failure !== undefined) throw failure.err;
    done.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
    await retryOutage(`CompleteMultipartUpload ${bucket}/${key}`, retryOf(o), async (attempt) => {
      try {
        await o.client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: done }, ...ssec }), { abortSignal: o.signal });
      } catch (err) {
        // A retry after an answer lost on the way back: the store finished the upload then.
        if (attempt > 0 && errName(err) === 'NoSuchUpload' && (await objectThere(o.client, bucket, key, done.length, ssec))) return;
        throw err;
      }
    });
    liveUploads.delete(uploadId);
    await removeMarker(o.client, bucket, marker, markerVersion);
  } catch (err) {
    stop.abort();
    await Promise.allSettled(inFlight);
    await abort(o.client, bucket, key, uploadId, what, () => removeMarker(o.client, bucket, marker, markerVersion));
    throw err;
  }
}

/**
 * One try: a marker left behind is a zero-byte object in the backup's folder, removed with it. In a
 * versioned bucket its own version is removed for good (no delete marker piles up per upload); where
 * retention forbids that (Object Lock), a plain delete hides it.
 */
export async function removeMarker(client: S3Client, bucket: string, marker: string | undefined, versionId?: string): Promise<void> {
  if (marker === undefined) return;
  try {
    if (versionId !== undefined) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: marker, VersionId: versionId }));
        return;
      } catch {
        // retained: fall through to a delete marker
      }
    }
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: marker }));
  } catch (err) {
    log.debug('could not remove the marker of a finished upload', { bucket, key: marker, error: (err as Error).message });
  }
}

/** Whether `key` is a multipart object of `partCount` parts (what a completed upload leaves). */
async function objectThere(client: S3Client, bucket: string, key: string, partCount: number, ssec: CustomerKey): Promise<boolean> {
  try {
    const h = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ...ssec }));
    return h.ETag?.replace(/"/g, '').endsWith(`-${partCount}`) === true;
  } catch {
    return false;
  }
}

/** First wait, and the cap, between tries to abort an upload while the store is down. */
const ABORT_RETRY_BASE_MS = 1000;
const ABORT_RETRY_CAP_MS = 30_000;

/**
 * One try now. During an outage it fails too: then it is tried again in the background, with
 * backoff, until the store answers (a canceled run's parts are gone soon after storage returns),
 * or the upload is old enough for the location's sweep to abort it (its marker stays for that).
 * `after` runs once the upload is aborted, now or later (it removes the upload's marker).
 */
async function abort(client: S3Client, bucket: string, key: string, uploadId: string, what: string, after: () => Promise<void>): Promise<void> {
  const once = (): Promise<unknown> => client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  try {
    await once();
    liveUploads.delete(uploadId);
    await after();
    return;
  } catch (err) {
    liveUploads.delete(uploadId);
    if (!isTransient(err)) {
      log.debug('could not abort the failed upload; a later sweep of the location aborts it', { upload: what, error: (err as Error).message });
      return;
    }
    log.debug('the store is unreachable: the failed upload is aborted once it answers', { upload: what, error: (err as Error).message });
  }
  void abortLater(once, what, after);
}

async function abortLater(once: () => Promise<unknown>, what: string, after: () => Promise<void>): Promise<void> {
  const started = Date.now();
  for (let attempt = 0; Date.now() - started < STALE_ABORT_RETRY_MS; attempt++) {
    // Unref'd: a plugin process that is asked to stop does not wait for this.
    await new Promise<void>((r) => setTimeout(r, Math.min(ABORT_RETRY_CAP_MS, ABORT_RETRY_BASE_MS * 2 ** attempt)).unref());
    try {
      await once();
      log.info('aborted an upload that failed while the store was unreachable', { upload: what });
      await after();
      return;
    } catch (err) {
      if (!isTransient(err)) return; // NoSuchUpload (done already) or refused: the sweep has the rest
    }
  }
}

/** How long the background abort keeps trying; after that the location's sweep of stale uploads takes over. */
const STALE_ABORT_RETRY_MS = 24 * 3600_000;
