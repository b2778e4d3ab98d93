// The built-in object stores served by `stowage run-plugins`, through the real plugin host: the S3
// store against the local S3 server, and the stowage binary itself.
import crypto from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ObjectStore } from '../../src/plugin/api/index.js';
import { createPluginPool, pluginEnv, type PluginHandle, type PluginPool } from '../../src/plugin/host/index.js';
import { BIN, memoryLogger, removeTempDirs, requireBuilt, RUN, selfCommand, tempDir } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

async function* text(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield Buffer.from(p);
}

async function read(body: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of body) out.push(Buffer.from(c));
  return Buffer.concat(out).toString();
}

describe('stowage.dev/aws against an S3 server', () => {
  const s3 = inject('s3');
  const bucket = `plugin-aws-${crypto.randomBytes(3).toString('hex')}`;
  let direct: S3Client;
  let pool: PluginPool;
  let handle: PluginHandle;
  let store: ObjectStore;
  let credentialsFile: string;
  const server = memoryLogger();
  const run = memoryLogger();

  beforeAll(async () => {
    direct = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await direct.send(new CreateBucketCommand({ Bucket: bucket }));
    credentialsFile = path.join(tempDir('creds'), 'cloud');
    fs.writeFileSync(credentialsFile, `[backup]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n`, { mode: 0o600 });
    pool = await createPluginPool({ selfCommand: selfCommand().command, logger: server.logger });
    handle = pool.handle(RUN, run.logger);
    store = await handle.objectStore('stowage.dev/aws', {
      bucket,
      prefix: 'cluster-a',
      region: s3.region,
      s3Url: s3.endpoint,
      s3ForcePathStyle: 'true',
      credentialsFile,
      profile: 'backup',
    });
  });
  afterAll(async () => {
    handle.release();
    await pool.shutdown();
    direct.destroy();
  });

  it('puts, gets, lists, checks and deletes objects', async () => {
    await store.putObject(bucket, 'cluster-a/backups/b1/b1.tar.gz', text('tar', 'ball'));
    await store.putObject(bucket, 'cluster-a/backups/b2/stowage-backup.json', text('{}'));
    await direct.send(new PutObjectCommand({ Bucket: bucket, Key: 'cluster-a/restores/r1/log.gz', Body: 'log' }));
    expect(await read(await store.getObject(bucket, 'cluster-a/backups/b1/b1.tar.gz'))).toBe('tarball');
    const res = await direct.send(new GetObjectCommand({ Bucket: bucket, Key: 'cluster-a/backups/b1/b1.tar.gz' }));
    expect(await res.Body?.transformToString()).toBe('tarball');
    expect(await store.objectExists(bucket, 'cluster-a/backups/b2/stowage-backup.json')).toBe(true);
    expect(await store.objectExists(bucket, 'cluster-a/backups/none')).toBe(false);
    // (s3rver 3.7 finds common prefixes only for keys one level below them, so no deeper layout here.)
    expect(await store.listCommonPrefixes(bucket, 'cluster-a/backups/', '/')).toEqual(['cluster-a/backups/b1/', 'cluster-a/backups/b2/']);
    expect((await store.listObjects(bucket, 'cluster-a/')).sort()).toEqual([
      'cluster-a/backups/b1/b1.tar.gz',
      'cluster-a/backups/b2/stowage-backup.json',
      'cluster-a/restores/r1/log.gz',
    ]);
    await store.deleteObject(bucket, 'cluster-a/backups/b2/stowage-backup.json');
    expect(await store.objectExists(bucket, 'cluster-a/backups/b2/stowage-backup.json')).toBe(false);
  });

  it('streams a multipart upload larger than one part', async () => {
    const piece = crypto.randomBytes(1024 * 1024);
    async function* big(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 20; i++) yield piece;
    }
    await store.putObject(bucket, 'cluster-a/big', big());
    const want = crypto.createHash('sha256');
    for (let i = 0; i < 20; i++) want.update(piece);
    const got = crypto.createHash('sha256');
    for await (const c of await store.getObject(bucket, 'cluster-a/big')) got.update(c);
    expect(got.digest('hex')).toBe(want.digest('hex'));
  });

  it('creates a signed URL that downloads the object until it expires', async () => {
    await store.putObject(bucket, 'cluster-a/signed.txt', text('signed content'));
    const url = await store.createSignedURL(bucket, 'cluster-a/signed.txt', 60);
    expect(url).toContain('X-Amz-Signature=');
    expect(url).toContain('X-Amz-Expires=60');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('signed content');
  });

  it("reports a missing object with code 'NotFound'", async () => {
    const err: unknown = await store.getObject(bucket, 'cluster-a/missing').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: string }).code).toBe('NotFound');
    expect((err as Error).message).toContain(`object ${bucket}/cluster-a/missing not found`);
  });

  it("reports a key the store can never take with code 'Refused', across the plugin process, at once", async () => {
    const key = `cluster-a/backups/${'x'.repeat(253)}/${'x'.repeat(253)}-logs.gz`;
    const err = await store.putObject(bucket, key, text('never stored')).then(() => undefined, (e: unknown) => e);
    expect(err).toMatchObject({ code: 'Refused', message: expect.stringContaining('the object store refuses PutObject') });
    // Not an outage: nothing was retried.
    expect([...run.entries, ...server.entries].map((e) => JSON.stringify(e)).join('\n')).not.toContain('object store unreachable; retrying');
  });

  it('fails Init clearly on bad config, and wrong credentials fail the call without leaking them', async () => {
    await expect(handle.objectStore('stowage.dev/aws', { bucket, secretAccessKey: 'hunter2' })).rejects.toThrow(
      'ObjectStore stowage.dev/aws (executable stowage run-plugins): Init failed: aws object store: unknown config key(s) secretAccessKey',
    );
    const wrong = path.join(tempDir('creds'), 'wrong');
    fs.writeFileSync(wrong, '[default]\naws_access_key_id=NOPE\naws_secret_access_key=very-secret-value\n');
    const bad = await handle.objectStore('stowage.dev/aws', { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true', credentialsFile: wrong });
    const err: unknown = await bad.listObjects(bucket, '').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^ObjectStore stowage\.dev\/aws \(executable stowage run-plugins\): ListObjects failed: /);
    expect((err as Error).message).not.toContain('very-secret-value');
  });

  it('never logs credentials', () => {
    const text = JSON.stringify([...server.entries, ...run.entries]);
    expect(text).not.toContain('very-secret-value');
    expect(text).not.toContain('aws_secret_access_key');
    expect(text).not.toContain(credentialsFile);
    expect(run.entries.some((e) => e.message === 'aws object store ready' && e.plugin === 'stowage.dev/aws')).toBe(true);
  });
});

describe('the stowage binary', () => {
  it('run-plugins by hand says it is started by the server and exits non-zero', () => {
    const r = spawnSync(process.execPath, [BIN, 'run-plugins'], { encoding: 'utf8', env: { PATH: process.env.PATH }, timeout: 30_000 });
    expect(r.stderr).toContain('This binary is a Stowage plugin. It is started by the Stowage server, not by hand.');
    expect(r.status).not.toBe(0);
  });

  it('serves the built-ins as `stowage run-plugins` under the plugin host', async () => {
    const pool = await createPluginPool({ selfCommand: [process.execPath, BIN, 'run-plugins'], logger: memoryLogger().logger });
    const h = pool.handle(RUN);
    try {
      expect(pool.plugins.map((p) => `${p.kind} ${p.name} ${p.executable}`)).toEqual([
        'ObjectStore stowage.dev/aws stowage run-plugins',
        'ObjectStore stowage.dev/filesystem stowage run-plugins',
      ]);
      const root = tempDir('bin-fs');
      const fsStore = await h.objectStore('stowage.dev/filesystem', { root });
      await fsStore.putObject('b', 'k', text('via the binary'));
      expect(fs.readFileSync(path.join(root, 'b/k'), 'utf8')).toBe('via the binary');
    } finally {
      h.release();
      await pool.shutdown();
    }
  });

  it('prints the handshake when started with the cookie', async () => {
    const child = spawn(process.execPath, [BIN, 'run-plugins'], { env: pluginEnv({ logLevel: 'info', parent: process.env }), stdio: ['pipe', 'pipe', 'ignore'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      expect(line).toMatch(/^1\|1\|unix\|\/.+\/plugin\.sock\|grpc$/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
