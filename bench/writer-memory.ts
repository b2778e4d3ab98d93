// Live heap of the backup's tarball writer and manifest, per item, without a cluster: N ConfigMaps
// of 1-2 KiB go through the writer (the body is hashed and dropped, as an upload would stream it),
// then the manifest is serialized as the upload does. Run with --expose-gc:
//   node --expose-gc --import tsx bench/writer-memory.ts [N]
import { createHash } from 'node:crypto';
import { createTarballWriter, manifestFromDigest } from '../src/archive/index.js';
import { gzipJson } from '../src/persistence/codec.js';

const n = Number(process.argv[2] ?? 50_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run node with --expose-gc');
const live = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

async function main(): Promise<void> {
  const base = live();
  const w = createTarballWriter({ mtime: new Date(0), gzipLevel: 1 });
  const upload = (async () => {
    const h = createHash('sha256');
    for await (const c of w.body) h.update(c);
    return h.digest('hex');
  })();
  const pad = 'x'.repeat(1024);
  for (let i = 0; i < n; i++) {
    const ns = `bench-${i % 10}`;
    const name = `cm-${String(i).padStart(6, '0')}`;
    const item = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, uid: `uid-${i}` }, data: { pad: pad.slice(0, 1024 + (i % 1024)) } };
    await w.addItem({ groupResource: 'configmaps', namespace: ns, name }, item, { preferred: true });
  }
  const beforeFinish = live();
  const digest = await w.finish();
  await upload;
  const manifest = manifestFromDigest(digest);
  const kept = live();
  let bytes = 0;
  for await (const c of gzipJson(manifest)) bytes += c.byteLength;
  const after = live();
  const per = (x: number): string => ((x - base) / n).toFixed(0);
  process.stdout.write(
    `${n} items: live heap ${per(beforeFinish)} B/item before finish, ${per(kept)} B/item with the manifest, ${per(after)} after serializing it ` +
      `(${(bytes / 1048576).toFixed(1)} MiB gzipped); ` +
      `RSS peak ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB\n`,
  );
}
main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
