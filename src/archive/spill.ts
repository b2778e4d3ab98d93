// Spilling an archive to disk: while the reader validates the tarball, each item's raw bytes are
// appended to a private temporary file and only a small index entry stays in memory. A restore reads
// an item back (a positioned read) only when it is about to restore it, so its memory is bounded by
// its concurrency, not by the size of the backup.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { errorMessage } from '../util/errors.js';
import { itemPathOf, parseItemJson, type ArchiveObject, type ItemIdentity, type ItemKey } from './items.js';
import { scanArchive, type ArchiveSummary, type ReadOptions } from './reader.js';

/** An append-only temporary file. Secret data lands in it: mode 0600 in a 0700 directory, and unlinked at once. */
export interface SpillFile {
  /** Where the file was created (already unlinked, except where the platform forbids that). */
  readonly path: string;
  /** Appends bytes (the caller must not change them afterwards); returns their offset. Writes are batched; read() sees them all. */
  append(data: Uint8Array): Promise<number>;
  /** Writes out what append() still holds in memory; rejects when the disk refuses it (full, read-only). */
  flush(): Promise<void>;
  read(offset: number, length: number): Promise<Buffer>;
  /** Closes and deletes the file. Safe to call more than once. */
  close(): Promise<void>;
}

const WRITE_BATCH_BYTES = 1024 * 1024;

/**
 * Creates a spill file in `dir` (created with mode 0700 when missing). Fails with a message that
 * names the directory when it cannot be created or written.
 */
export async function createSpillFile(dir: string): Promise<SpillFile> {
  const path = join(dir, `spill-${randomBytes(12).toString('hex')}`);
  let fh: FileHandle;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    fh = await open(path, 'wx+', 0o600);
  } catch (err) {
    throw new Error(`cannot create a spill file in ${dir}: ${errorMessage(err)}`, { cause: err });
  }
  // Unlinked now, the bytes stay reachable through the handle and vanish with it, even if the process dies.
  const unlinked = await unlink(path).then(() => true, () => false);
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let size = 0;
  let written = 0;
  // Writes run one after another; a failed write fails every later append and read.
  let writing: Promise<void> = Promise.resolve();
  let closed: Promise<void> | undefined;

  const writeOut = async (buf: Buffer, at: number): Promise<void> => {
    for (let off = 0; off < buf.length;) {
      const { bytesWritten } = await fh.write(buf, off, buf.length - off, at + off);
      off += bytesWritten;
    }
    written = at + buf.length;
  };
  const flush = (): Promise<void> => {
    if (pendingBytes > 0) {
      const buf = Buffer.concat(pending, pendingBytes);
      const at = size - pendingBytes;
      pending = [];
      pendingBytes = 0;
      writing = writing.then(() => writeOut(buf, at));
    }
    return writing.catch((err: unknown) => {
      throw new Error(`writing the spill file in ${dir} failed: ${errorMessage(err)}`, { cause: err });
    });
  };

  return {
    path,
    async append(data) {
      if (closed !== undefined) throw new Error('the spill file is closed');
      const offset = size;
      pending.push(data);
      pendingBytes += data.byteLength;
      size += data.byteLength;
      if (pendingBytes >= WRITE_BATCH_BYTES) await flush();
      return offset;
    },
    flush,
    async read(offset, length) {
      if (closed !== undefined) throw new Error('the spill file is closed');
      if (offset < 0 || offset + length > size) throw new RangeError(`bytes ${offset}..${offset + length} are beyond the spill file's ${size} bytes`);
      if (offset + length > written) await flush();
      const buf = Buffer.alloc(length);
      for (let got = 0; got < length;) {
        const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) throw new Error(`the spill file in ${dir} is shorter than was written`);
        got += bytesRead;
      }
      return buf;
    },
    close() {
      closed ??= (async () => {
        pending = [];
        await writing.catch(() => undefined);
        try {
          await fh.close();
        } finally {
          if (!unlinked) await rm(path, { force: true });
        }
      })();
      return closed;
    },
  };
}

/**
 * An item spilled to disk: its identity, where its bytes are, and what the caller picked from the
 * object. Its path and SHA-256 are not kept (spilledPath rebuilds the path; the reader pairs copies by
 * digest and then drops it): at 50,000 items the two strings were ~9 MB of a restore's index.
 */
export interface SpilledItem<P> extends ItemKey {
  /** Offset of the item's bytes (`bytes` long) in the spill file. */
  offset: number;
  /** CRC-32 of the bytes as a signed 32-bit integer (stored inline by V8), checked when they are read back. */
  crc32: number;
  picked: P;
}

/** What spillArchive returns: the archive's summary and its items' index. */
export interface SpilledArchive<P> extends ArchiveSummary {
  items: SpilledItem<P>[];
  alternateVersions: SpilledItem<P>[];
}

export interface SpillOptions<P> extends ReadOptions {
  /** The little the caller needs of each object without reading it back (labels, owners, ...). Keep it small. */
  pick: (object: ArchiveObject, id: ItemIdentity) => P;
}

/** The tar path the item was read from. */
export function spilledPath(item: Pick<ItemIdentity, 'groupResource' | 'namespace' | 'name' | 'versionDir'>): string {
  return itemPathOf(item);
}

const checksum = (data: Uint8Array): number => crc32(data) | 0;

/**
 * Reads and validates a gzipped tarball like readArchive, appending each item's bytes to `spill`
 * instead of keeping the parsed object. Every reason to refuse the archive is found before it returns.
 */
export async function spillArchive<P>(
  source: AsyncIterable<Uint8Array>,
  spill: SpillFile,
  opts: SpillOptions<P>,
): Promise<SpilledArchive<P>> {
  const scanned = await scanArchive<SpilledItem<P>>(source, opts, async ({ id, object, data }) => {
    const picked = opts.pick(object, id);
    const offset = await spill.append(data);
    // A literal with every key in one order, not `{ ...id, ... }`: V8 gave each spread copy a hidden
    // class of its own, 14 MB of maps and descriptors at 50,000 items while the archive was read.
    // The index entry is made once, as it stays: no path or digest to copy it without later.
    return {
      groupResource: id.groupResource, namespace: id.namespace, name: id.name, versionDir: id.versionDir,
      apiVersion: id.apiVersion, kind: id.kind, bytes: id.bytes, offset, crc32: checksum(data), picked,
    };
  });
  // Every byte on disk before the caller goes on: a full disk fails the read, not items later on.
  await spill.flush();
  return scanned;
}

/** Reads a spilled item back, checking its bytes are still the ones read from the archive. */
export async function loadSpilled(spill: SpillFile, item: SpilledItem<unknown>): Promise<ArchiveObject> {
  const data = await spill.read(item.offset, item.bytes);
  if (checksum(data) !== item.crc32) {
    throw new Error(`the copy of ${spilledPath(item)} in the spill file changed after it was read from the archive`);
  }
  return parseItemJson(spilledPath(item), data);
}
