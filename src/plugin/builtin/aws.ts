// stowage.dev/aws: an object store on S3 or any S3-compatible endpoint. Uploads stream in parts
// (s3Upload.ts: no temp file, each part retried on its own); downloads stream and resume at the
// offset reached when the connection breaks; every call rides out an outage shorter than the window
// (outage.ts); signed URLs via the presigner. The `bucket` and `prefix` config keys say where the
// location lives (Stowage's own incomplete uploads are swept there at the store's first write, never
// at Init: a ReadOnly or Velero location is opened but never written, so nothing there is touched);
// callers still pass the bucket with every call and build keys with the prefix themselves. Server-side encryption (awsSse.ts) is
// applied to every write, and with SSE-C to every read too; an SSE-C location gives out no signed
// URLs (see createSignedURL), so downloads go through the server, which holds the key.
import https from 'node:https';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { fromIni } from '@aws-sdk/credential-provider-ini';
import type { ObjectStore, PluginConfig, ResumableGetObject } from '../api/index.js';
import { callOutageWindow, callSignal, log } from '../sdk/index.js';
import { parseAwsConfig } from './awsConfig.js';
import { customerKey, describeEncryption, type ServerSideEncryption } from './awsSse.js';
import { DEFAULT_OUTAGE_WINDOW_MS, isRefusal, isTransient, outageWindowMs, RefusedError, retryOutage } from './outage.js';
import { sweepUploads } from './s3Sweep.js';
import { uploadObject } from './s3Upload.js';

/** Multipart part size: 8 MiB parts, 4 in flight, bounds upload memory at ~40 MiB. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;
/** A store that does not accept the connection this fast is treated as unreachable (and retried). */
const CONNECT_TIMEOUT_MS = 10_000;

class NotFoundError extends Error {
  readonly code = 'NotFound';
}

/**
 * Why an SSE-C location signs no URLs. A presigned GET of an SSE-C object is valid only with the
 * customer key in the downloader's request headers (S3 keeps no copy of it), so signing one means
 * giving the key to whoever downloads. The server's download endpoint, which reads through this
 * store with the key, serves those downloads instead (controller/downloadRequest.ts falls back to
 * it when signing fails).
 */
export const SSE_C_NO_SIGNED_URLS =
  'signed URLs are not given out for a location with SSE-C (customerKeyEncryptionFile): S3 serves an SSE-C object only to a ' +
  'request that carries the customer key, and a signed URL would hand the key to the downloader; the server serves the download itself';

/** A download whose connection closed before the bytes its Content-Length promised. */
class CutShortError extends Error {}

interface OpenedBody {
  body: AsyncIterable<Uint8Array>;
  end: number | undefined;
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

function errName(err: unknown): string | undefined {
  return (err as { name?: string }).name;
}

/** The location's prefix as a key prefix: '' or 'a/b/'. */
function locationPrefix(prefix: string | undefined): string {
  const p = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return p === '' ? '' : `${p}/`;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<Uint8Array> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
}

export class AwsObjectStore implements ObjectStore, ResumableGetObject {
  private client: S3Client | undefined;
  private windowMs = DEFAULT_OUTAGE_WINDOW_MS;
  private sse: ServerSideEncryption = { kind: 'none' };
  /** Where to sweep at the first write after Init (undefined: nothing to sweep, or swept already). */
  private sweepAt: { bucket: string; prefix: string } | undefined;

  async init(config: PluginConfig): Promise<void> {
    const c = parseAwsConfig(config);
    this.windowMs = outageWindowMs();
    const clientConfig: S3ClientConfig = { region: c.region, forcePathStyle: c.forcePathStyle };
    if (c.endpoint !== undefined) clientConfig.endpoint = c.endpoint;
    const handler: { connectionTimeout: number; httpsAgent?: https.Agent } = { connectionTimeout: CONNECT_TIMEOUT_MS };
    if (c.insecureSkipTLSVerify || c.caCert !== undefined) {
      const agentOptions: https.AgentOptions = { keepAlive: true };
      if (c.insecureSkipTLSVerify) agentOptions.rejectUnauthorized = false;
      if (c.caCert !== undefined) agentOptions.ca = c.caCert;
      handler.httpsAgent = new https.Agent(agentOptions);
    }
    clientConfig.requestHandler = handler;
    if (c.credentialsFile !== undefined) {
      const creds: Parameters<typeof fromIni>[0] = { filepath: c.credentialsFile, configFilepath: c.credentialsFile, ignoreCache: true };
      if (c.profile !== undefined) creds.profile = c.profile;
      clientConfig.credentials = fromIni(creds);
    } else if (c.profile !== undefined) {
      clientConfig.profile = c.profile;
    }
    this.client?.destroy();
    this.client = new S3Client(clientConfig);
    this.sse = c.sse;
    log.info('aws object store ready', { region: c.region, endpoint: c.endpoint ?? 'aws', forcePathStyle: c.forcePathStyle, serverSideEncryption: describeEncryption(c.sse) });
    this.sweepAt = c.bucket === undefined ? undefined : { bucket: c.bucket, prefix: locationPrefix(c.prefix) };
  }

  /** Runs one S3 call, riding out an outage shorter than the window; the host's cancel ends it at once. */
  private call<T>(what: string, op: (s3: S3Client, signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    const s3 = this.s3();
    const o = this.retryOptions();
    return retryOutage(what, o, () => op(s3, o.signal));
  }

  /** This call's window (the host may ask for a shorter one) and its cancel signal. */
  private retryOptions(): { windowMs: number; windowSource?: string; signal?: AbortSignal } {
    const windowMs = callOutageWindow(this.windowMs);
    const signal = callSignal();
    return {
      windowMs,
      ...(windowMs < this.windowMs ? { windowSource: `the Stowage server asked this call to wait at most ${windowMs} ms: the run it belongs to was canceled` } : {}),
      ...(signal !== undefined ? { signal } : {}),
    };
  }

  private s3(): S3Client {
    if (this.client === undefined) throw new Error('aws object store: Init was not called');
    return this.client;
  }

  async putObject(bucket: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
    // In the background: a write must not wait on a slow listing (or an outage) of the bucket.
    const at = this.sweepAt;
    this.sweepAt = undefined;
    if (at !== undefined) void sweepUploads(this.s3(), at.bucket, at.prefix);
    try {
      await uploadObject({ client: this.s3(), ...this.retryOptions(), partSize: PART_SIZE, queueSize: QUEUE_SIZE, sse: this.sse }, bucket, key, body);
    } catch (err) {
      // Said apart from an outage, so a spooled log whose key the store refuses is not retried forever.
      if (isRefusal(err)) throw new RefusedError(`the object store refuses PutObject ${bucket}/${key}: ${err instanceof Error ? err.message || err.name : String(err)}`, { cause: err });
      throw err;
    }
  }

  async getObject(bucket: string, key: string): Promise<AsyncIterable<Uint8Array>> {
    return this.getObjectFrom(bucket, key, 0);
  }

  async getObjectFrom(bucket: string, key: string, offset: number): Promise<AsyncIterable<Uint8Array>> {
    const first = await this.call(`GetObject ${bucket}/${key}`, (_s3, signal) => this.openAt(bucket, key, offset, signal));
    return this.resuming(bucket, key, offset, first, callSignal());
  }

  /**
   * One GetObject from `offset`; NotFound and "nothing left" are answers, not failures. `end` is
   * the byte the body should reach (from its Content-Length), so a body cut short is noticed.
   */
  private async openAt(bucket: string, key: string, offset: number, signal: AbortSignal | undefined): Promise<OpenedBody> {
    try {
      const res = await this.s3().send(
        new GetObjectCommand({ Bucket: bucket, Key: key, ...customerKey(this.sse), ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}) }),
        { abortSignal: signal },
      );
      if (!isAsyncIterable(res.Body)) throw new Error(`GetObject ${bucket}/${key}: the response has no readable body`);
      return { body: res.Body, end: res.ContentLength !== undefined ? offset + res.ContentLength : undefined };
    } catch (err) {
      if (errName(err) === 'NoSuchKey' || httpStatus(err) === 404) throw new NotFoundError(`object ${bucket}/${key} not found`);
      // Asking for bytes from exactly the end of the object: nothing left to send.
      if (offset > 0 && httpStatus(err) === 416) return { body: Readable.from([]), end: undefined };
      throw err;
    }
  }

  /** Yields the object; a connection that breaks (or ends early) mid-body is reopened at the offset reached. */
  private async *resuming(bucket: string, key: string, offset: number, first: OpenedBody, signal: AbortSignal | undefined): AsyncGenerator<Uint8Array> {
    let at = offset;
    let cur = first;
    let brokenSince: number | undefined;
    for (;;) {
      const before = at;
      try {
        for await (const chunk of cur.body) {
          at += chunk.byteLength;
          yield chunk;
        }
        if (cur.end === undefined || at >= cur.end) return;
        throw new CutShortError(`GetObject ${bucket}/${key}: the body ended at byte ${at} of ${cur.end}`);
      } catch (err) {
        if (!isTransient(err) && !(err instanceof CutShortError)) throw err;
        // Bytes flowed since the last break: this is a new outage, counted from now.
        if (at > before || brokenSince === undefined) brokenSince = Date.now();
        const since = brokenSince;
        cur = await retryOutage(`GetObject ${bucket}/${key} from byte ${at}`, { windowMs: this.windowMs, since, ...(signal !== undefined ? { signal } : {}) }, () => this.openAt(bucket, key, at, signal));
      }
    }
  }

  async objectExists(bucket: string, key: string): Promise<boolean> {
    try {
      await this.call(`HeadObject ${bucket}/${key}`, (s3, signal) => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ...customerKey(this.sse) }), { abortSignal: signal }));
      return true;
    } catch (err) {
      if (errName(err) === 'NotFound' || httpStatus(err) === 404) return false;
      throw err;
    }
  }

  async listCommonPrefixes(bucket: string, prefix: string, delimiter: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const input = { Bucket: bucket, Prefix: prefix, Delimiter: delimiter, ContinuationToken: token };
      const res = await this.call(`ListObjectsV2 ${bucket}/${prefix}`, (s3, signal) => s3.send(new ListObjectsV2Command(input), { abortSignal: signal }));
      for (const p of res.CommonPrefixes ?? []) if (p.Prefix !== undefined) out.push(p.Prefix);
      token = res.IsTruncated === true ? res.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }

  async listObjects(bucket: string, prefix: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const input = { Bucket: bucket, Prefix: prefix, ContinuationToken: token };
      const res = await this.call(`ListObjectsV2 ${bucket}/${prefix}`, (s3, signal) => s3.send(new ListObjectsV2Command(input), { abortSignal: signal }));
      for (const o of res.Contents ?? []) if (o.Key !== undefined) out.push(o.Key);
      token = res.IsTruncated === true ? res.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }

  /**
   * Deletes the current version. In a versioned bucket (Object Lock implies one) S3 then only hides
   * the object behind a delete marker: the warning says so, in the log of the run that deleted it,
   * rather than letting the deletion pass for the data's removal.
   */
  async deleteObject(bucket: string, key: string): Promise<void> {
    const res = await this.call(`DeleteObject ${bucket}/${key}`, (s3, signal) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal }));
    if (res.DeleteMarker === true) {
      log.warn(`the bucket keeps object versions: deleting ${key} wrote a delete marker, and its data stays in a noncurrent version until the bucket's lifecycle rules or Object Lock retention remove it`, { bucket, key });
    }
  }

  /**
   * A presigned GET. For SSE-S3 and SSE-KMS it carries no encryption parameters: S3 decrypts for
   * any authorised GET, refuses encryption headers on one, and presigned URLs are SigV4, which
   * SSE-KMS objects require. SSE-C: refused (SSE_C_NO_SIGNED_URLS).
   */
  async createSignedURL(bucket: string, key: string, ttlSeconds: number): Promise<string> {
    if (this.sse.kind === 'customer') throw new Error(SSE_C_NO_SIGNED_URLS);
    return getSignedUrl(this.s3(), new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: ttlSeconds });
  }
}
