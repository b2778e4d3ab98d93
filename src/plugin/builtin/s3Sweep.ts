// Sweeping what killed uploads leave in an S3 location: incomplete multipart uploads under the
// location's prefix. An upload is only ours to abort when no live writer can own it: it was not
// started by this process, and it was initiated before this process started (its writer was a
// previous server or plugin process, which are gone: one server leads, one plugin process per
// executable) or so long ago that no upload can still be running (the host ends every PutObject
// within 6 h). Best effort: a failure is logged and the next start sweeps again.
import { AbortMultipartUploadCommand, ListMultipartUploadsCommand, type S3Client } from '@aws-sdk/client-s3';
import { log } from '../sdk/index.js';
import { liveUploads } from './s3Upload.js';

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

/** Every incomplete multipart upload under `prefix`, page by page. */
async function listUploads(client: S3Client, bucket: string, prefix: string): Promise<PendingUpload[]> {
  const out: PendingUpload[] = [];
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    const res = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
    for (const u of res.Uploads ?? []) {
      if (u.Key !== undefined && u.UploadId !== undefined) out.push({ key: u.Key, uploadId: u.UploadId, initiated: u.Initiated });
    }
    if (res.IsTruncated !== true) return out;
    keyMarker = res.NextKeyMarker;
    uploadIdMarker = res.NextUploadIdMarker;
  }
}

export interface SweepResult {
  supported: boolean;
  aborted: string[];
}

/** Aborts the stale uploads under `prefix`; resolves with the keys it aborted. Never rejects. */
export async function sweepUploads(client: S3Client, bucket: string, prefix: string, nowMs = Date.now()): Promise<SweepResult> {
  let pending: PendingUpload[];
  try {
    pending = await listUploads(client, bucket, prefix);
  } catch (err) {
    if (notSupported(err)) {
      log.debug('the object store does not list multipart uploads, so uploads left by killed writers cannot be swept', { bucket, prefix });
      return { supported: false, aborted: [] };
    }
    log.warn('could not list incomplete uploads to sweep them', { bucket, prefix, error: (err as Error).message });
    return { supported: true, aborted: [] };
  }
  const aborted: string[] = [];
  for (const u of staleUploads(pending, { processStartMs: PROCESS_START_MS, nowMs, live: liveUploads })) {
    try {
      await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.key, UploadId: u.uploadId }));
      aborted.push(u.key);
    } catch (err) {
      log.warn('could not abort an incomplete upload left by a killed writer', { bucket, key: u.key, error: (err as Error).message });
    }
  }
  if (aborted.length > 0) log.info('aborted incomplete uploads left by killed writers', { bucket, prefix, count: aborted.length, keys: aborted.slice(0, 10) });
  return { supported: true, aborted };
}
