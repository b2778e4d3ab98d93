// stowage.dev/aws through the real plugin host against its own S3 server, which the tests stop and
// start: a download broken by an outage resumes at the byte it reached, a listing waits for the
// store to come back, and errors the store means (a missing bucket) are not retried.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import type { ObjectStore } from '../../src/plugin/api/index.js';
import { createPluginPool, type PluginHandle, type PluginPool } from '../../src/plugin/host/index.js';
import { memoryLogger, removeTempDirs, requireBuilt, RUN, selfCommand, tempDir, waitFor } from './support.js';

const SIZE = 64 * 1024 * 1024;

describe('stowage.dev/aws rides out an S3 outage', () => {
  let s3: S3Server;
  let pool: PluginPool;
  let handle: PluginHandle;
  let store: ObjectStore;
  const logs = memoryLogger();
  const data = crypto.randomBytes(SIZE);

  beforeAll(async () => {
    requireBuilt();
    s3 = await startS3Server({ buckets: ['vault'] });
    const credentialsFile = path.join(tempDir('creds'), 'cloud');
    fs.writeFileSync(credentialsFile, `[default]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n`, { mode: 0o600 });
    pool = await createPluginPool({ selfCommand: selfCommand().command, logger: logs.logger, logLevel: 'debug', objectStoreOutageMs: 20_000 });
    handle = pool.handle(RUN, logs.logger);
    store = await handle.objectStore('stowage.dev/aws', { bucket: 'vault', prefix: 'site', region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true', credentialsFile });
    async function* body(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < SIZE; i += 1024 * 1024) yield data.subarray(i, i + 1024 * 1024);
    }
    await store.putObject('vault', 'site/big', body());
  });
  afterAll(async () => {
    handle?.release();
    await pool?.shutdown();
    await s3?.close();
    removeTempDirs();
  });

  const retries = (): number => logs.entries.filter((e) => e.message.includes('object store unreachable; retrying')).length;
  /** Stops the store until the plugin has met the outage and said it retries (`during` runs meanwhile), then starts it. */
  const outage = async (during: () => void = () => undefined): Promise<void> => {
    const before = retries();
    await s3.stop();
    during();
    await waitFor('the plugin to retry on the outage', () => (retries() > before ? true : undefined), 30_000);
    await s3.start();
  };

  it('resumes a download at the byte it reached when the store goes away mid-stream', async () => {
    const it = (await store.getObject('vault', 'site/big'))[Symbol.asyncIterator]();
    const got: Buffer[] = [];
    let n = 0;
    // Read a little, so most of the object is still on the server's side when it stops.
    while (n < 4 * 1024 * 1024) {
      const r = await it.next();
      if (r.done === true) break;
      got.push(Buffer.from(r.value));
      n += r.value.length;
    }
    const stopped = outage();
    for (;;) {
      const r = await it.next();
      if (r.done === true) break;
      got.push(Buffer.from(r.value));
    }
    await stopped;
    const all = Buffer.concat(got);
    expect(all.length).toBe(SIZE);
    expect(all.equals(data)).toBe(true);
    const lines = JSON.stringify(logs.entries);
    expect(lines).toContain('object store unreachable; retrying');
    expect(lines).toMatch(/GetObject vault\/site\/big from byte \d+/);
  });

  it('a listing made while the store is down answers once it is back', async () => {
    let listing: Promise<string[]> | undefined;
    await outage(() => {
      listing = store.listObjects('vault', 'site/');
    });
    expect(await listing).toEqual(['site/big']);
  });

  it('does not retry what the store refuses: a missing bucket fails at once', async () => {
    const t0 = Date.now();
    await expect(store.listObjects('no-such-bucket', '')).rejects.toThrow(/bucket does not exist/i);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});
