// Uploads to S3 that survive an outage: the body is cut into parts held in memory, each part is
// retried on its own until the store takes it (retryOutage), so an upload resumes from the last
// part the store acknowledged instead of starting over. A body smaller than one part is a single
// PutObject, retried whole. Memory is bounded by (parts in flight + the one being filled) x part size.
// Server-side encryption: the creating request (PutObject, CreateMultipartUpload) asks for it; with
// SSE-C every part, the completion and the HEAD after a lost answer carry the key as well.
import {
  AbortMultipartUploadCommand,
  ChecksumAlgorithm,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
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
  } catch (err) {
    stop.abort();
    await Promise.allSettled(inFlight);
    await abort(o.client, bucket, key, uploadId, what);
    throw err;
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
 * or the upload is old enough for the location's sweep to abort it anyway.
 */
async function abort(client: S3Client, bucket: string, key: string, uploadId: string, what: string): Promise<void> {
  const once = (): Promise<unknown> => client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  try {
    await once();
    liveUploads.delete(uploadId);
    return;
  } catch (err) {
    liveUploads.delete(uploadId);
    if (!isTransient(err)) {
      log.debug('could not abort the failed upload; a later sweep of the location aborts it', { upload: what, error: (err as Error).message });
      return;
    }
    log.debug('the store is unreachable: the failed upload is aborted once it answers', { upload: what, error: (err as Error).message });
  }
  void abortLater(once, what);
}

async function abortLater(once: () => Promise<unknown>, what: string): Promise<void> {
  const started = Date.now();
  for (let attempt = 0; Date.now() - started < STALE_ABORT_RETRY_MS; attempt++) {
    // Unref'd: a plugin process that is asked to stop does not wait for this.
    await new Promise<void>((r) => setTimeout(r, Math.min(ABORT_RETRY_CAP_MS, ABORT_RETRY_BASE_MS * 2 ** attempt)).unref());
    try {
      await once();
      log.info('aborted an upload that failed while the store was unreachable', { upload: what });
      return;
    } catch (err) {
      if (!isTransient(err)) return; // NoSuchUpload (done already) or refused: the sweep has the rest
    }
  }
}

/** How long the background abort keeps trying; after that the location's sweep of stale uploads takes over. */
const STALE_ABORT_RETRY_MS = 24 * 3600_000;
