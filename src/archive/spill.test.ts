import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArchiveError } from './errors.js';
import { readArchive } from './reader.js';
import { createSpillFile, loadSpilled, spillArchive, spilledPath, type SpillFile } from './spill.js';
import { createTarballWriter, type ArchivableObject } from './writer.js';

let dir: string;
const open: SpillFile[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'spill-test-'));
});
afterEach(async () => {
  for (const f of open.splice(0)) await f.close();
  await rm(dir, { recursive: true, force: true });
});

async function spillIn(d: string): Promise<SpillFile> {
  const f = await createSpillFile(d);
  open.push(f);
  return f;
}

async function tarball(objects: { gr: string; obj: ArchivableObject & { metadata: { name: string; namespace?: string } } }[]): Promise<Buffer> {
  const w = createTarballWriter({ mtime: new Date(0) });
  const chunks: Uint8Array[] = [];
  const read = (async () => {
    for await (const c of w.body) chunks.push(c);
  })();
  for (const { gr, obj } of objects) await w.addItem({ groupResource: gr, namespace: obj.metadata.namespace, name: obj.metadata.name }, obj, { preferred: true });
  await w.finish();
  await read;
  return Buffer.concat(chunks);
}

async function* once(b: Buffer): AsyncGenerator<Uint8Array> {
  yield b;
}

describe('spill file', () => {
  it('reads back what was appended, across write batches, before and after they reach the disk', async () => {
    const f = await spillIn(dir);
    const parts = Array.from({ length: 40 }, (_, i) => Buffer.alloc(50_000 + i, i)); // ~2 MB: two batches and a pending tail
    const offsets: number[] = [];
    for (const p of parts) offsets.push(await f.append(p));
    expect(offsets[1]).toBe(50_000);
    for (const i of [0, 19, 20, 39]) expect((await f.read(offsets[i] ?? -1, parts[i]?.length ?? 0)).equals(parts[i] ?? Buffer.alloc(0))).toBe(true);
    await expect(f.read(offsets[39] ?? 0, 1_000_000)).rejects.toThrow(/beyond the spill file/);
  });

  it('is private: created 0600 in a 0700 directory it makes, and unlinked at once', async () => {
    const sub = join(dir, 'scratch', 'spill');
    const f = await spillIn(sub);
    await f.append(Buffer.from('{"kind":"Secret"}'));
    expect((await stat(sub)).mode & 0o777).toBe(0o700);
    expect(f.path.startsWith(`${sub}/spill-`)).toBe(true);
    // The file is gone from the directory while it is still in use; its bytes live on through the handle.
    expect(await readdir(sub)).toEqual([]);
    expect((await f.read(0, 17)).toString()).toBe('{"kind":"Secret"}');
    await f.close();
    await f.close();
    await expect(f.read(0, 1)).rejects.toThrow('the spill file is closed');
    await expect(f.append(Buffer.from('x'))).rejects.toThrow('the spill file is closed');
  });

  it('fails with a message naming the directory when it cannot be created there', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a directory');
    await expect(createSpillFile(join(file, 'spill'))).rejects.toThrow(`cannot create a spill file in ${join(file, 'spill')}: ENOTDIR`);
  });
});

describe('spillArchive', () => {
  const cm = (ns: string, name: string, labels?: Record<string, string>) => ({
    gr: 'configmaps', obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, data: { k: name.repeat(100) } },
  });

  it('keeps an index and what pick takes; each object reads back exactly as readArchive parses it', async () => {
    const gz = await tarball([
      cm('a', 'one', { app: 'web' }),
      cm('a', 'two'),
      { gr: 'namespaces', obj: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } } },
    ]);
    const f = await spillIn(dir);
    const spilled = await spillArchive(once(gz), f, { pick: (o, id) => ({ labels: o.metadata.labels, gr: id.groupResource }) });
    const whole = await readArchive(once(gz));
    expect(spilled.items.map((i) => spilledPath(i))).toEqual(whole.items.map((i) => i.path));
    expect(spilled.entries).toEqual(whole.entries);
    expect(spilled.tarball).toEqual(whole.tarball);
    expect(spilled.items.map((i) => i.picked)).toEqual([{ labels: { app: 'web' }, gr: 'configmaps' }, { labels: undefined, gr: 'configmaps' }, { labels: undefined, gr: 'namespaces' }]);
    for (const [i, it] of spilled.items.entries()) {
      expect(it).not.toHaveProperty('object');
      expect(await loadSpilled(f, it)).toEqual(whole.items[i]?.object);
    }
    // Only the first copy of each object is spilled (the preferred-version copy has the same bytes): offsets leave no gaps.
    let at = 0;
    for (const it of spilled.items) {
      expect(it.offset).toBe(at);
      at += it.bytes;
    }
  });

  it('reports a failure to spill as itself, not as a broken archive', async () => {
    const f = await spillIn(dir);
    await f.close();
    const err = await spillArchive(once(await tarball([cm('a', 'one')])), f, { pick: () => undefined }).then(() => undefined, (e: unknown) => e);
    expect(err).not.toBeInstanceOf(ArchiveError);
    expect(err).toMatchObject({ message: 'the spill file is closed' });
  });

  it('refuses to hand back bytes that differ from what was read', async () => {
    const f = await spillIn(dir);
    const { items } = await spillArchive(once(await tarball([cm('a', 'one')])), f, { pick: () => undefined });
    const item = items[0];
    if (item === undefined) throw new Error('no item');
    await expect(loadSpilled(f, { ...item, crc32: item.crc32 ^ 1 })).rejects.toThrow(
      'the copy of resources/configmaps/v1-preferredversion/namespaces/a/one.json in the spill file changed after it was read from the archive',
    );
  });
});
