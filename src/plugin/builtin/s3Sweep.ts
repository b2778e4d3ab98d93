// Sweeping what killed uploads leave in an S3 location: incomplete multipart uploads under the
// location's prefix. An upload is only ours to abort when Stowage started it and no live writer can
// own it: its marker (s3Upload.ts uploadMarkerKey, which only the holder of the location's secret
// can name) exists, it was not started by this process, and it was initiated before this process
// started (its writer was a previous server or plugin process, which are gone: one server leads,
// one plugin process per executable) or so long ago that no upload can still be running (the host
// ends every PutObject within 6 h). Every other upload (another party's, under the same prefix or
// even at a key of Stowage's layout) is left alone. The store sweeps only a location it writes to
// (aws.ts: at its first write), so a ReadOnly or Velero location, which the server never writes,
// is never swept. Best effort: a failure is logged and the next sweep tries again.
import { AbortMultipartUploadCommand, ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { log } from '../sdk/index.js';
import { liveUploads, markerSecret, removeMarker, uploadMarkerKey } from './s3Upload.js';

/** Older than any upload can run (the host's PutObject deadline is 6 h). */
export const STALE_UPLOAD_AGE_MS = 24 * 3600_000;

/** When this process started (the clock of the sweep's "before this process started"). */
export const PROCESS_START_MS = Date.now() - Math.round(process.uptime() * 1000);

export interface PendingUpload {
  key: string;
  uploadId: string;
  initiated: Date | undefined;
}

/** The uploads to abort: not ours, and initiated before this process started or older than the stale age. */
export function staleUploads(
  uploads: readonly PendingUpload[],
  o: { processStartMs: number; nowMs: number; live: ReadonlySet<string>; staleAgeMs?: number },
): PendingUpload[] {
  const staleAge = o.staleAgeMs ?? STALE_UPLOAD_AGE_MS;
  return uploads.filter((u) => {
    if (o.live.has(u.uploadId) || u.initiated === undefined) return false;
    const at = u.initiated.getTime();
    return at < o.processStartMs || o.nowMs - at > staleAge;
  });
}

function notSupported(err: unknown): boolean {
  const e = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotImplemented' || e.Code === 'NotImplemented' || e.$metadata?.httpStatusCode === 501 || e.$metadata?.httpStatusCode === 405;
}

/**
 * Every incomplete multipart upload under `prefix`, page by page. The bucket's whole listing is
 * filtered here rather than asked for by Prefix: MinIO answers a Prefix that is not an exact object
 * key with no uploads at all (test/s3/semantics.test.ts), so a prefixed sweep there found nothing.
 */
async function listUploads(client: S3Client, bucket: string, prefix: string): Promise<PendingUpload[]> {
  const out: PendingUpload[] = [];
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    const res = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
    for (const u of res.Uploads ?? []) {
      if (u.Key !== undefined && u.UploadId !== undefined && u.Key.startsWith(prefix)) out.push({ key: u.Key, uploadId: u.UploadId, initiated: u.Initiated });
    }
    if (res.IsTruncated !== true) return out;
    keyMarker = res.NextKeyMarker;
    uploadIdMarker = res.NextUploadIdMarker;
  }
}

export interface SweepResult {
  supported: boolean;
  aborted: string[];
  /** Uploads that were candidates by age but carry no marker of Stowage's: another party's, left alone. */
  foreign: number;
}

/** Whether object `key` exists: listed rather than HEAD, so an SSE-C location needs no key for it. */
async function exists(client: S3Client, bucket: string, key: string): Promise<boolean> {
  const res = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: key, MaxKeys: 1 }));
  return (res.Contents ?? []).some((o) => o.Key === key);
}

/** Aborts Stowage's stale uploads under `prefix`; resolves with the keys it aborted. Never rejects. */
export async function sweepUploads(client: S3Client, bucket: string, prefix: string, nowMs = Date.now()): Promise<SweepResult> {
  let pending: PendingUpload[];
  try {
    pending = await listUploads(client, bucket, prefix);
  } catch (err) {
    if (notSupported(err)) {
      log.debug('the object store does not list multipart uploads, so uploads left by killed writers cannot be swept', { bucket, prefix });
      return { supported: false, aborted: [], foreign: 0 };
    }
    log.warn('could not list incomplete uploads to sweep them', { bucket, prefix, error: (err as Error).message });
    return { supported: true, aborted: [], foreign: 0 };
  }
  const secret = await markerSecret(client);
  const aborted: string[] = [];
  let foreign = 0;
  for (const u of staleUploads(pending, { processStartMs: PROCESS_START_MS, nowMs, live: liveUploads })) {
    const marker = secret === undefined ? undefined : uploadMarkerKey(secret, bucket, u.key, u.uploadId);
    try {
      if (marker === undefined || !(await exists(client, bucket, marker))) {
        foreign++;
        continue;
      }
      await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.key, UploadId: u.uploadId }));
      aborted.push(u.key);
      await removeMarker(client, bucket, marker);
    } catch (err) {
      log.warn('could not abort an incomplete upload left by a killed writer', { bucket, key: u.key, error: (err as Error).message });
    }
  }
  // One line per sweep, whatever it found: it says the sweep ran and what it left alone.
  log.info('swept incomplete uploads left by killed writers', { bucket, prefix, aborted: aborted.length, keys: aborted.slice(0, 10), foreign });
  return { supported: true, aborted, foreign };
}
