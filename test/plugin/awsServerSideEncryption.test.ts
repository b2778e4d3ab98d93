// Server-side encryption of stowage.dev/aws (serverSideEncryption, kmsKeyId,
// customerKeyEncryptionFile), through the real plugin process, checked on the wire: a recording
// proxy in front of the S3 server keeps every request's headers. s3rver does not implement SSE (it
// stores the bytes as sent), so what is proved is what S3 would be asked for, plus a round trip.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { ObjectStore, PluginConfig } from '../../src/plugin/api/index.js';
import { createPluginPool, type PluginHandle, type PluginPool } from '../../src/plugin/host/index.js';
import { SSE_C_NO_SIGNED_URLS } from '../../src/plugin/builtin/aws.js';
import { UPLOAD_MARKER_INFIX } from '../../src/plugin/builtin/s3Upload.js';
import { s3Operation, startRecordingProxy, type RecordedRequest, type RecordingProxy } from '../support/recordingProxy.js';
import { memoryLogger, removeTempDirs, requireBuilt, RUN, selfCommand, tempDir } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

const SSE = 'x-amz-server-side-encryption';
const KMS_KEY = 'x-amz-server-side-encryption-aws-kms-key-id';
const C_ALG = 'x-amz-server-side-encryption-customer-algorithm';
const C_KEY = 'x-amz-server-side-encryption-customer-key';
const C_MD5 = 'x-amz-server-side-encryption-customer-key-md5';

async function* bytes(...parts: Buffer[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield p;
}

async function read(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of body) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

/** The encryption headers of a request (present ones only). */
function sseHeaders(r: RecordedRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) if (k.startsWith(SSE) && typeof v === 'string') out[k] = v;
  return out;
}

describe('stowage.dev/aws server-side encryption on the wire', () => {
  // s3rver, not the shared MinIO: these tests check what is asked for on the wire, with made-up KMS
  // key ids and SSE-C through a TLS proxy in front of plain HTTP. MinIO enforces SSE (it refuses
  // SSE-S3/KMS without a configured KMS, and SSE-C over plain HTTP); s3rver stores the bytes as sent.
  let s3: S3Server;
  const bucket = `sse-${crypto.randomBytes(3).toString('hex')}`;
  const customerKey = crypto.randomBytes(32);
  const keyB64 = customerKey.toString('base64');
  const keyMd5 = crypto.createHash('md5').update(customerKey).digest('base64');
  // 20 MiB: three parts of the store's 8 MiB multipart uploads.
  const big = crypto.randomBytes(20 * 1024 * 1024);
  const server = memoryLogger();
  const run = memoryLogger();
  const proxies: RecordingProxy[] = [];
  let pool: PluginPool;
  let handle: PluginHandle;
  let credentialsFile: string;
  let keyFile: string;

  beforeAll(async () => {
    s3 = await startS3Server();
    const direct = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    await direct.send(new CreateBucketCommand({ Bucket: bucket }));
    direct.destroy();
    const dir = tempDir('sse');
    credentialsFile = path.join(dir, 'cloud');
    fs.writeFileSync(credentialsFile, `[default]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n`, { mode: 0o600 });
    keyFile = path.join(dir, 'customer-key');
    fs.writeFileSync(keyFile, customerKey, { mode: 0o600 });
    pool = await createPluginPool({ selfCommand: selfCommand().command, logger: server.logger });
    handle = pool.handle(RUN, run.logger);
  });
  afterAll(async () => {
    handle?.release();
    await pool?.shutdown();
    for (const p of proxies) await p.close();
    await s3?.close();
  });

  async function open(sse: PluginConfig, tls: boolean): Promise<{ store: ObjectStore; proxy: RecordingProxy }> {
    const proxy = await startRecordingProxy(s3.endpoint, { tls });
    proxies.push(proxy);
    const store = await handle.objectStore('stowage.dev/aws', {
      bucket, prefix: 'p', region: s3.region, s3Url: proxy.endpoint, s3ForcePathStyle: 'true', credentialsFile,
      ...(proxy.caCert !== undefined ? { caCert: proxy.caCert } : {}),
      ...sse,
    });
    return { store, proxy };
  }

  /** Writes a small and a multipart object, reads both back, checks one exists; returns what reached the store. */
  async function exercise(store: ObjectStore, proxy: RecordingProxy, prefix: string): Promise<Map<string, RecordedRequest[]>> {
    proxy.requests.length = 0;
    await store.putObject(bucket, `p/${prefix}/small`, bytes(Buffer.from('small object')));
    await store.putObject(bucket, `p/${prefix}/big`, bytes(big.subarray(0, 5_000_000), big.subarray(5_000_000)));
    expect((await read(await store.getObject(bucket, `p/${prefix}/small`))).toString()).toBe('small object');
    expect((await read(await store.getObject(bucket, `p/${prefix}/big`))).equals(big)).toBe(true);
    expect(await store.objectExists(bucket, `p/${prefix}/small`)).toBe(true);
    expect(await store.objectExists(bucket, `p/${prefix}/none`)).toBe(false);
    const byOp = new Map<string, RecordedRequest[]>();
    for (const r of proxy.requests.filter((x) => x.path.startsWith(`/${bucket}/p/${prefix}/`))) {
      byOp.set(s3Operation(r), [...(byOp.get(s3Operation(r)) ?? []), r]);
    }
    // The small object, and the multipart upload's marker (s3Upload.ts), removed once it completed.
    expect(byOp.get('PutObject')?.map((r) => r.path.includes(UPLOAD_MARKER_INFIX))).toEqual([false, true]);
    expect(byOp.get('DeleteObject')?.map((r) => r.path.includes(UPLOAD_MARKER_INFIX))).toEqual([true]);
    expect(byOp.get('CreateMultipartUpload')).toHaveLength(1);
    expect(byOp.get('UploadPart')).toHaveLength(3);
    expect(byOp.get('CompleteMultipartUpload')).toHaveLength(1);
    expect(byOp.get('GetObject')?.length).toBeGreaterThanOrEqual(2);
    expect(byOp.get('HeadObject')).toHaveLength(2);
    return byOp;
  }

  const headersOf = (byOp: Map<string, RecordedRequest[]>, op: string): Record<string, string>[] => (byOp.get(op) ?? []).map(sseHeaders);

  it('AES256: asks for SSE-S3 when creating objects, sends no encryption headers on parts and reads, and signs plain GET URLs', async () => {
    const { store, proxy } = await open({ serverSideEncryption: 'AES256' }, false);
    const byOp = await exercise(store, proxy, 'aes');
    for (const op of ['PutObject', 'CreateMultipartUpload']) for (const h of headersOf(byOp, op)) expect(h, op).toEqual({ [SSE]: 'AES256' });
    // S3 answers 400 to SSE-S3/KMS headers on these.
    for (const op of ['UploadPart', 'CompleteMultipartUpload', 'GetObject', 'HeadObject']) for (const h of headersOf(byOp, op)) expect(h, op).toEqual({});

    proxy.requests.length = 0;
    const url = new URL(await store.createSignedURL(bucket, 'p/aes/small', 60));
    expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect([...url.searchParams.keys()].filter((k) => k.toLowerCase().includes('server-side-encryption'))).toEqual([]);
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('small object');
    expect(proxy.requests.map((r) => [s3Operation(r), sseHeaders(r)])).toEqual([['GetObject', {}]]);
  });

  it('aws:kms with kmsKeyId: names the key when creating objects, and nothing on parts, reads or signed URLs', async () => {
    const { store, proxy } = await open({ serverSideEncryption: 'aws:kms', kmsKeyId: 'alias/stowage-backups' }, false);
    const byOp = await exercise(store, proxy, 'kms');
    for (const op of ['PutObject', 'CreateMultipartUpload']) for (const h of headersOf(byOp, op)) expect(h, op).toEqual({ [SSE]: 'aws:kms', [KMS_KEY]: 'alias/stowage-backups' });
    for (const op of ['UploadPart', 'CompleteMultipartUpload', 'GetObject', 'HeadObject']) for (const h of headersOf(byOp, op)) expect(h, op).toEqual({});
    const url = new URL(await store.createSignedURL(bucket, 'p/kms/small', 60));
    // SSE-KMS objects can only be read with SigV4.
    expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect(await (await fetch(url)).text()).toBe('small object');

    // kmsKeyId alone means aws:kms (Velero's rule).
    const alone = await open({ kmsKeyId: 'alias/other' }, false);
    await alone.store.putObject(bucket, 'p/kms/alone', bytes(Buffer.from('x')));
    expect(alone.proxy.requests.filter((r) => s3Operation(r) === 'PutObject').map(sseHeaders)).toEqual([{ [SSE]: 'aws:kms', [KMS_KEY]: 'alias/other' }]);
  });

  it('SSE-C: sends the key (base64, with its MD5) on every write, part, completion and read, and gives out no signed URL', async () => {
    const { store, proxy } = await open({ customerKeyEncryptionFile: keyFile }, true);
    const byOp = await exercise(store, proxy, 'ssec');
    const want = { [C_ALG]: 'AES256', [C_KEY]: keyB64, [C_MD5]: keyMd5 };
    for (const op of ['PutObject', 'CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload', 'GetObject', 'HeadObject']) {
      const all = headersOf(byOp, op);
      expect(all.length, op).toBeGreaterThan(0);
      for (const h of all) expect(h, op).toEqual(want);
    }
    await expect(store.createSignedURL(bucket, 'p/ssec/small', 60)).rejects.toThrow(SSE_C_NO_SIGNED_URLS);
  });

  it('refuses invalid combinations at Init with the reason, never the key', async () => {
    const init = (config: PluginConfig): Promise<unknown> =>
      handle.objectStore('stowage.dev/aws', { bucket, region: s3.region, s3Url: 'https://127.0.0.1:1', s3ForcePathStyle: 'true', ...config }).catch((e: unknown) => e);
    const prefix = 'ObjectStore stowage.dev/aws (executable stowage run-plugins): Init failed: aws object store: ';
    const short = path.join(tempDir('sse-bad'), 'short');
    fs.writeFileSync(short, customerKey.subarray(0, 31));
    const cases: [PluginConfig, string][] = [
      [{ serverSideEncryption: 'aws:kms:dsse' }, 'serverSideEncryption must be AES256 or aws:kms, not "aws:kms:dsse"'],
      [{ serverSideEncryption: 'AES256', kmsKeyId: 'k' }, 'kmsKeyId needs serverSideEncryption aws:kms'],
      [{ customerKeyEncryptionFile: keyFile, kmsKeyId: 'k' }, 'customerKeyEncryptionFile (SSE-C) cannot be combined with kmsKeyId'],
      [{ customerKeyEncryptionFile: short }, `customerKeyEncryptionFile ${short} holds 31 bytes; an SSE-C key is exactly 32 raw bytes`],
      [{ customerKeyEncryptionFile: `${keyFile}.absent` }, `customerKeyEncryptionFile ${keyFile}.absent cannot be read (ENOENT)`],
      [{ customerKeyEncryptionFile: keyFile, s3Url: s3.endpoint }, 'customerKeyEncryptionFile (SSE-C) needs an https:// s3Url'],
    ];
    for (const [config, message] of cases) {
      const err = await init(config);
      expect(err, message).toBeInstanceOf(Error);
      expect((err as Error).message).toContain(prefix + message);
      expect((err as Error).message).not.toContain(keyB64);
    }
  });

  it('never logs the customer key', () => {
    const text = JSON.stringify([...server.entries, ...run.entries]);
    expect(text).not.toContain(keyB64);
    expect(text).not.toContain(customerKey.toString('hex'));
    expect(run.entries.some((e) => e.message === 'aws object store ready' && e.serverSideEncryption === 'SSE-C')).toBe(true);
  });
});
