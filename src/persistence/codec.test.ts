import crypto from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { itemPath, ManifestTable, parseManifest } from '../archive/index.js';
import { gzipJson, jsonPieces, jsonSha256, readGzipJson, sha256Of } from './codec.js';

async function bytes(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

const samples: unknown[] = [
  null, 1, 'text "quoted"', [], {}, [1, undefined, () => 1, 'x'],
  { a: undefined, b: () => 1, c: Symbol('s'), d: [undefined], e: { f: undefined, g: 1 } },
  { when: new Date(0), withToJson: { toJSON: () => 'custom' }, nested: { deeper: { deepest: [1, { x: undefined }] } } },
  Object.assign(Object.create(null) as Record<string, unknown>, { 'ünïcode/path.json': 'ab'.repeat(32) }),
  { formatVersion: '1.1.0', entries: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`resources/configmaps/namespaces/n/c${i}.json`, 'f'.repeat(64)])) },
  { outcomes: Array.from({ length: 2000 }, (_, i) => ({ groupResource: 'secrets', namespace: 'n', name: `s${i}`, action: 'created', reason: 'created' })) },
];

describe('gzipJson', () => {
  it('writes exactly the text JSON.stringify writes, in pieces', () => {
    for (const v of samples) expect([...jsonPieces(v)].join('')).toBe(JSON.stringify(v));
  });

  it('cuts a large manifest into many small pieces rather than one string', () => {
    const big = samples[samples.length - 2];
    const pieces = [...jsonPieces(big)];
    expect(pieces.length).toBeGreaterThan(6000);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(200);
  });

  it('gzips what readGzipJson reads back, and serializes again for every read (a replayed upload)', async () => {
    const v = samples[samples.length - 1];
    const body = gzipJson(v);
    const first = await bytes(body);
    const second = await bytes(body);
    expect(first.equals(second)).toBe(true);
    expect(JSON.parse(gunzipSync(first).toString('utf8'))).toEqual(v);
    expect(await readGzipJson(gzipJson(v), 1 << 24, 'the results')).toEqual(v);
  });

  it('fails the read, instead of hanging it, on a value JSON cannot hold', async () => {
    await expect(bytes(gzipJson({ big: 1n }))).rejects.toThrow(/BigInt/);
  });

  it('jsonSha256 is the SHA-256 of the bytes gzipJson stores, inflated (what a signature covers)', async () => {
    const big = { entries: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`resources/cm/namespaces/n/é-${i}.json`, 'a'.repeat(64)])) };
    for (const v of [...samples, big]) {
      const inflated = gunzipSync(await bytes(gzipJson(v)));
      expect(jsonSha256(v)).toBe(crypto.createHash('sha256').update(inflated).digest('hex'));
      expect(await sha256Of((async function* () { yield inflated; })())).toBe(jsonSha256(v));
    }
  });

  it("writes a written manifest's compact table as the JSON of its entries object, piece by piece", async () => {
    const entries = new ManifestTable();
    entries.add('metadata/version', 'e'.repeat(64));
    for (let i = 0; i < 3000; i++) {
      const sha = crypto.createHash('sha256').update(String(i)).digest('hex');
      entries.add(itemPath('configmaps', 'n', `c-é${i}`), sha, i % 3 === 0 ? undefined : 'v1-preferredversion');
    }
    const manifest = { formatVersion: '1.1.0', tarball: { sha256: 'a'.repeat(64), bytes: 1 }, entries };
    const text = JSON.stringify(manifest);
    expect([...jsonPieces(manifest)].join('')).toBe(text);
    expect(Math.max(...[...jsonPieces(manifest)].map((p) => p.length))).toBeLessThan(200);
    const inflated = gunzipSync(await bytes(gzipJson(manifest)));
    expect(inflated.toString('utf8')).toBe(text);
    expect(jsonSha256(manifest)).toBe(crypto.createHash('sha256').update(inflated).digest('hex'));
    const back = parseManifest(JSON.parse(text));
    expect(Object.keys(back.entries)).toEqual([...entries].map(([p]) => p));
    expect(Object.keys(back.entries)).toHaveLength(1 + 1000 + 2 * 2000);
  });
});
