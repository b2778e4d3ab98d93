// Hand-built tarballs for tests: tar-stream writes whatever headers it is given, hostile ones
// included (links, devices, "..", absolute names, a size that lies). Used by the reader's unit test
// and the hostile-archive fixtures in test/fixtures; left out of the build (tsconfig.build.json).
import { gzipSync } from 'node:zlib';
import * as tar from 'tar-stream';

export interface RawEntry {
  name: string;
  /** File content; omitted for links and devices (a file without one is empty). */
  body?: string | Buffer;
  type?: 'file' | 'symlink' | 'link' | 'directory' | 'fifo' | 'character-device' | 'block-device';
  linkname?: string;
  /** Size stamped in the header (defaults to the body's length). */
  size?: number;
}

/** A tar stream holding exactly these entries, in order (no validation: hostile headers pass through). */
export async function rawTar(entries: readonly RawEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const out: Buffer[] = [];
  const done = (async () => {
    for await (const c of pack as AsyncIterable<Buffer>) out.push(c);
  })();
  for (const e of entries) {
    const type = e.type ?? 'file';
    const body = type === 'file' ? Buffer.from(e.body ?? '') : undefined;
    const header: Partial<tar.Header> & { name: string } = { name: e.name, type, mode: 0o644, mtime: new Date(0), size: e.size ?? body?.length ?? 0 };
    if (type !== 'file') header.linkname = e.linkname ?? '';
    if (type === 'character-device' || type === 'block-device') Object.assign(header, { devmajor: 1, devminor: 3 });
    await new Promise<void>((resolve, reject) => {
      const cb = (err?: Error | null): void => (err ? reject(err) : resolve());
      if (body === undefined) pack.entry(header, cb); // no body: the entry completes itself
      else pack.entry(header, body, cb);
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(out);
}

/** rawTar, gzipped: a backup tarball as a store holds it. */
export const gzTar = async (entries: readonly RawEntry[]): Promise<Buffer> => gzipSync(await rawTar(entries));
