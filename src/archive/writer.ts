// Streaming tarball writer: items -> tar-stream pack -> gzip -> `body`, consumed by ObjectStore.putObject.
// Each addItem() resolves only once the pack has accepted its bytes, and the pack only accepts bytes
// as fast as the consumer reads `body`, so memory stays flat however many items are written.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import * as tar from 'tar-stream';
import { sha256Hex } from './digest.js';
import { FORMAT_VERSION, METADATA_VERSION_PATH } from './format.js';
import { canonicalJson } from './json.js';
import { ManifestTable, withVersionDir } from './manifestTable.js';
import { itemPath, preferredVersionDir, versionOfApiVersion } from './paths.js';

/** A Kubernetes object as JSON (only `apiVersion` is needed here). */
export interface ArchivableObject {
  apiVersion: string;
  [k: string]: unknown;
}

export interface ItemId {
  groupResource: string;
  /** Undefined or '' for cluster-scoped items. */
  namespace?: string;
  name: string;
}

/** What was written: checksums of every file in the tarball and of the gzipped tarball itself. */
export interface ArchiveDigest {
  formatVersion: string;
  tarball: { sha256: string; bytes: number };
  /** Path -> SHA-256 (hex) of the file's bytes, for every file (metadata/version and both copies of items), in the tarball's order. */
  entries: ManifestTable;
  /** Distinct items written. */
  items: number;
}

export interface TarballWriter {
  /** The gzipped tarball. Consume it exactly once, concurrently with the addItem() calls. */
  readonly body: AsyncIterable<Uint8Array>;
  /**
   * Adds an item as canonical JSON, at its classic path and (when `preferred`, i.e. it was read at
   * its group's preferred version) also under `<version>-preferredversion/`. Resolves once the
   * bytes were accepted; returns the SHA-256 of the item's JSON.
   */
  addItem(id: ItemId, item: ArchivableObject, opts: { preferred: boolean }): Promise<string>;
  /**
   * Adds a copy of an item already added, read at another API version, under
   * `resources/<gr>/<version>/` only (the version of its apiVersion). Not counted as another item.
   */
  addVersionCopy(id: ItemId, item: ArchivableObject): Promise<string>;
  /** Ends the tarball; resolves once the consumer has read every byte of `body`. */
  finish(): Promise<ArchiveDigest>;
  /** Stops writing: pending and later addItem() calls reject, and so does reading `body`. */
  abort(err: Error): void;
}

export interface TarballWriterOptions {
  /** Modification time stamped on every entry (defaults to now). */
  mtime?: Date;
  /** zlib level, 1 (fast) .. 9 (small). Default 6. */
  gzipLevel?: number;
}

/** Input per zlib write. */
const COALESCE_BYTES = 1024 * 1024;
/** zlib's output buffer: each one it fills is another callback on the main thread. */
const GZIP_CHUNK_BYTES = 256 * 1024;

export function createTarballWriter(opts: TarballWriterOptions = {}): TarballWriter {
  const mtime = opts.mtime ?? new Date();
  const pack = tar.pack();
  const gzip = createGzip({ level: opts.gzipLevel ?? 6, chunkSize: GZIP_CHUNK_BYTES });
  const tarballHash = createHash('sha256');
  const entries = new ManifestTable();
  let tarballBytes = 0;
  let items = 0;
  let failure: Error | undefined;
  let consumed = false;
  let finished: { resolve: (d: ArchiveDigest) => void; reject: (e: Error) => void } | undefined;
  const done = new Promise<ArchiveDigest>((resolve, reject) => {
    finished = { resolve, reject };
  });
  // Nobody may be awaiting finish() yet when the stream fails; the rejection is still delivered later.
  done.catch(() => undefined);

  const fail = (err: Error): void => {
    if (failure) return;
    failure = err;
    pack.destroy(err);
    gzip.destroy(err);
    finished?.reject(err);
  };
  pack.on('error', (err: Error) => fail(err));
  gzip.on('error', (err: Error) => fail(err));
  // zlib sends every write to its thread pool, and tar-stream emits 512-byte headers and small bodies:
  // writing those one by one costs a thread-pool round trip each (~0.3 ms). Coalescing them into
  // ~128 KiB writes made a 5,000-item tarball several times faster; 1 MiB writes with 256 KiB output
  // buffers cut the main thread's zlib time by 5x again (32 MiB of list JSON: 270 -> 50 ms), which
  // matters because compression runs beside the main thread and the slower of the two sets the pace.
  // Backpressure still holds: while the pump waits for 'drain' it stops reading the pack, and the
  // pack stops accepting entries.
  const pump = async (): Promise<void> => {
    let batch: Buffer[] = [];
    let size = 0;
    const flush = async (): Promise<void> => {
      if (size === 0) return;
      const buf = Buffer.concat(batch, size);
      batch = [];
      size = 0;
      if (!gzip.write(buf)) await once(gzip, 'drain');
    };
    for await (const chunk of pack as AsyncIterable<Buffer>) {
      batch.push(chunk);
      size += chunk.byteLength;
      if (size >= COALESCE_BYTES) await flush();
    }
    await flush();
    gzip.end();
  };
  pump().catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));

  /** Queues one file in the pack; resolves once the pack accepted its bytes. */
  const packEntry = (path: string, data: Buffer): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const sink = pack.entry({ name: path, size: data.byteLength, mode: 0o644, mtime, type: 'file' }, data, (err?: Error | null) =>
        err ? reject(failure ?? err) : resolve(),
      );
      // A destroyed pack destroys its entries too; the callback above reports that.
      sink.on('error', () => undefined);
    });

  /**
   * Writes `data` (whose SHA-256 is `sha256`) at `path`, and with `preferredDir` also at the item's
   * preferred-version path: both copies are queued at once, so they are adjacent in the tarball as
   * in the table, and share one digest there.
   */
  const writeEntry = async (path: string, data: Buffer, sha256: string, preferredDir?: string): Promise<void> => {
    if (failure) throw failure;
    if (entries.holds(path)) throw new Error(`tarball already holds ${path}`);
    entries.add(path, sha256, preferredDir);
    const classic = packEntry(path, data);
    if (preferredDir === undefined) return classic;
    const preferred = packEntry(withVersionDir(path, preferredDir), data);
    // Both are awaited; the second's rejection must not go unhandled while the first is awaited.
    preferred.catch(() => undefined);
    await classic;
    await preferred;
  };

  // The version file goes first so a reader learns the format before any item.
  const version = Buffer.from(FORMAT_VERSION);
  const versionWritten = writeEntry(METADATA_VERSION_PATH, version, sha256Hex(version));
  versionWritten.catch(() => undefined);

  async function* read(): AsyncGenerator<Uint8Array> {
    if (consumed) throw new Error('the tarball body can be read only once');
    consumed = true;
    let complete = false;
    try {
      for await (const chunk of gzip as AsyncIterable<Buffer>) {
        tarballHash.update(chunk);
        tarballBytes += chunk.byteLength;
        yield chunk;
      }
      complete = true;
      if (failure) throw failure;
      finished?.resolve({
        formatVersion: FORMAT_VERSION,
        tarball: { sha256: tarballHash.digest('hex'), bytes: tarballBytes },
        entries,
        items,
      });
    } catch (err) {
      fail(err instanceof Error ? err : new Error(String(err)));
      throw failure ?? err;
    } finally {
      // The consumer stopped early (return() on the iterator): release the producers.
      if (!complete) fail(failure ?? new Error('the tarball consumer stopped reading before the end'));
    }
  }

  return {
    body: { [Symbol.asyncIterator]: () => read() },
    async addItem(id, item, { preferred }) {
      const data = Buffer.from(canonicalJson(item));
      const sha256 = sha256Hex(data);
      const dir = preferred ? preferredVersionDir(versionOfApiVersion(item.apiVersion)) : undefined;
      await writeEntry(itemPath(id.groupResource, id.namespace, id.name), data, sha256, dir);
      items++;
      return sha256;
    },
    async addVersionCopy(id, item) {
      const data = Buffer.from(canonicalJson(item));
      const sha256 = sha256Hex(data);
      await writeEntry(itemPath(id.groupResource, id.namespace, id.name, versionOfApiVersion(item.apiVersion)), data, sha256);
      return sha256;
    },
    async finish() {
      await versionWritten;
      if (failure) throw failure;
      pack.finalize();
      return done;
    },
    abort: fail,
  };
}
