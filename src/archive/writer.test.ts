import { createHash, randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import * as tar from 'tar-stream';
import { canonicalJson } from './json.js';
import { manifestFromDigest, verifyManifest } from './manifest.js';
import { readArchive } from './reader.js';
import { createTarballWriter, type ArchivableObject } from './writer.js';

async function collect(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

async function* chunked(buf: Buffer, size = 4096): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function tarNames(gz: Buffer): Promise<string[]> {
  const ex = tar.extract();
  const names: string[] = [];
  const done = (async () => {
    for await (const e of ex) {
      names.push(e.header.name);
      e.resume();
    }
  })();
  ex.end(gunzipSync(gz));
  await done;
  return names;
}

const cm = (ns: string, name: string, data: Record<string, string> = {}): ArchivableObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data });

describe('tarball writer', () => {
  it('writes metadata/version first, then classic and preferred-version copies, and reads back identically', async () => {
    const w = createTarballWriter({ mtime: new Date(0) });
    const upload = collect(w.body);
    const deploy = { kind: 'Deployment', apiVersion: 'apps/v1', metadata: { namespace: 'shop', name: 'web' }, spec: { replicas: 2 } };
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } };
    const shaDeploy = await w.addItem({ groupResource: 'deployments.apps', namespace: 'shop', name: 'web' }, deploy, { preferred: true });
    await w.addItem({ groupResource: 'namespaces', name: 'shop' }, ns, { preferred: true });
    await w.addItem({ groupResource: 'configmaps', namespace: 'shop', name: 'c' }, cm('shop', 'c', { k: 'v' }), { preferred: false });
    const digest = await w.finish();
    const gz = await upload;

    expect(await tarNames(gz)).toEqual([
      'metadata/version',
      'resources/deployments.apps/namespaces/shop/web.json',
      'resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json',
      'resources/namespaces/cluster/shop.json',
      'resources/namespaces/v1-preferredversion/cluster/shop.json',
      'resources/configmaps/namespaces/shop/c.json',
    ]);
    expect(shaDeploy).toBe(createHash('sha256').update(canonicalJson(deploy)).digest('hex'));
    expect(digest.items).toBe(3);
    expect(digest.formatVersion).toBe('1.1.0');
    const table = digest.entries.toJSON();
    expect(Object.keys(table)).toEqual(await tarNames(gz));
    expect(digest.entries.size).toBe(6);
    expect(table['metadata/version']).toBe(createHash('sha256').update('1.1.0').digest('hex'));
    expect(table['resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json']).toBe(shaDeploy);
    expect(digest.tarball).toEqual({ sha256: createHash('sha256').update(gz).digest('hex'), bytes: gz.length });

    const back = await readArchive(chunked(gz, 7));
    expect(back.formatVersion).toBe('1.1.0');
    expect(back.entries).toEqual(table);
    expect(back.tarball).toEqual(digest.tarball);
    expect(verifyManifest(back, manifestFromDigest(digest))).toEqual([]);
    const byPath = new Map(back.items.map((i) => [i.path, i]));
    expect(byPath.get('resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json')?.object).toEqual(deploy);
    expect(byPath.get('resources/configmaps/namespaces/shop/c.json')?.object).toEqual(cm('shop', 'c', { k: 'v' }));
    expect(back.items).toHaveLength(3);
    expect(back.alternateVersions).toEqual([]);
  });

  it('is deterministic: the same items and mtime give the same bytes', async () => {
    const once = async (): Promise<Buffer> => {
      const w = createTarballWriter({ mtime: new Date('2024-01-01T00:00:00Z') });
      const out = collect(w.body);
      for (let i = 0; i < 50; i++) await w.addItem({ groupResource: 'configmaps', namespace: 'a', name: `c${i}` }, cm('a', `c${i}`, { i: String(i) }), { preferred: true });
      await w.finish();
      return out;
    };
    const [a, b] = [await once(), await once()];
    expect(a.equals(b)).toBe(true);
  });

  it('uses pax headers for long names, which read back intact', async () => {
    const name = `n-${'x'.repeat(230)}`;
    const w = createTarballWriter();
    const out = collect(w.body);
    await w.addItem({ groupResource: 'configmaps', namespace: 'some-long-namespace-name', name }, cm('some-long-namespace-name', name), { preferred: true });
    await w.finish();
    const back = await readArchive(chunked(await out));
    expect(back.items.map((i) => i.name)).toEqual([name]);
  });

  it('detects tampering with one byte through the manifest', async () => {
    const w = createTarballWriter({ gzipLevel: 0 });
    const out = collect(w.body);
    await w.addItem({ groupResource: 'configmaps', namespace: 'a', name: 'c' }, cm('a', 'c', { value: 'AAAA' }), { preferred: false });
    const digest = await w.finish();
    const raw = gunzipSync(await out);
    const at = raw.indexOf('AAAA');
    raw[at] = 'B'.charCodeAt(0);
    const { gzipSync } = await import('node:zlib');
    const back = await readArchive(chunked(gzipSync(raw)));
    const problems = verifyManifest(back, manifestFromDigest(digest));
    expect(problems[0]).toMatch(/^the tarball's SHA-256 is [0-9a-f]{64}, the manifest says/);
    expect(problems[1]).toMatch(/^resources\/configmaps\/namespaces\/a\/c\.json has SHA-256 [0-9a-f]{64}, the manifest says/);
    expect(problems).toHaveLength(2);
  });

  it('respects backpressure: the producer never runs far ahead of a slow consumer', async () => {
    // Level 0 stores instead of compressing, so gzip bytes ~ tar bytes and the gap measures buffering.
    const w = createTarballWriter({ gzipLevel: 0 });
    let produced = 0;
    let consumed = 0;
    let maxAhead = 0;
    const consumer = (async () => {
      for await (const chunk of w.body) {
        consumed += chunk.byteLength;
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 0; i < 3000; i++) {
      const payload = randomBytes(768).toString('base64');
      const item = cm('ns', `c${i}`, { payload });
      await w.addItem({ groupResource: 'configmaps', namespace: 'ns', name: `c${i}` }, item, { preferred: false });
      produced += 512 + Math.ceil(canonicalJson(item).length / 512) * 512;
      maxAhead = Math.max(maxAhead, produced - consumed);
    }
    await w.finish();
    await consumer;
    expect(produced).toBeGreaterThan(6_000_000);
    // The 1 MiB write coalescing plus ~16 KiB in each of the pack, zlib and the generator (about 1.04 MiB
    // measured): far below the 6 MB written, and independent of the item count.
    expect(maxAhead).toBeLessThan(1.25 * 1024 * 1024);
  });

  it('rejects pending and later addItem calls, and finish, when aborted (e.g. the upload failed)', async () => {
    const w = createTarballWriter();
    // Nobody reads the body: past the 1 MiB coalescing buffer and zlib's, the pack fills up and addItem blocks.
    const pending: Promise<string>[] = [];
    for (let i = 0; i < 1000; i++) {
      pending.push(w.addItem({ groupResource: 'configmaps', namespace: 'n', name: `c${i}` }, cm('n', `c${i}`, { p: randomBytes(1024).toString('hex') }), { preferred: false }));
    }
    const settled = await Promise.race([Promise.allSettled(pending).then(() => 'settled'), new Promise((r) => setTimeout(() => r('blocked'), 100))]);
    expect(settled).toBe('blocked');
    w.abort(new Error('upload failed: connection refused'));
    const results = await Promise.allSettled(pending);
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(String((rejected[0] as PromiseRejectedResult).reason)).toMatch(/upload failed: connection refused/);
    await expect(w.addItem({ groupResource: 'configmaps', namespace: 'n', name: 'late' }, cm('n', 'late'), { preferred: false })).rejects.toThrow(/upload failed/);
    await expect(w.finish()).rejects.toThrow(/upload failed/);
  });

  it('releases the producer when the consumer stops reading early', async () => {
    const w = createTarballWriter({ gzipLevel: 0 });
    const consumer = (async () => {
      for await (const _chunk of w.body) break;
    })();
    const adds: Promise<string>[] = [];
    for (let i = 0; i < 500; i++) adds.push(w.addItem({ groupResource: 'configmaps', namespace: 'n', name: `c${i}` }, cm('n', `c${i}`, { p: 'x'.repeat(2048) }), { preferred: false }));
    await consumer;
    const results = await Promise.allSettled(adds);
    expect(results.some((r) => r.status === 'rejected' && /stopped reading/.test(String(r.reason)))).toBe(true);
    await expect(w.finish()).rejects.toThrow(/stopped reading/);
  });

  it('refuses the same item twice and a second read of the body', async () => {
    const w = createTarballWriter();
    const out = collect(w.body);
    await w.addItem({ groupResource: 'configmaps', namespace: 'n', name: 'a' }, cm('n', 'a'), { preferred: false });
    await expect(w.addItem({ groupResource: 'configmaps', namespace: 'n', name: 'a' }, cm('n', 'a'), { preferred: false }))
      .rejects.toThrow('tarball already holds resources/configmaps/namespaces/n/a.json');
    await w.finish();
    await out;
    await expect(collect(w.body)).rejects.toThrow('only once');
  });
});
