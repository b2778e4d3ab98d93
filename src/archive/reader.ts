// Defensive streaming reader: source -> gunzip -> size meter -> tar-stream extract. It reads and
// validates the whole archive before returning, so a restore can refuse a hostile archive before it
// creates anything. Memory is bounded by the caps (parsed items are kept for the restore's ordering).
import { createHash } from 'node:crypto';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar-stream';
import { ArchiveError, isArchiveError } from './errors.js';
import { isSupportedFormatVersion, METADATA_VERSION_PATH } from './format.js';
import { checkItemAgainstPath, checkKinds, parseItemJson, type ArchiveItem } from './items.js';
import { parseItemPath, type ParsedItemPath } from './paths.js';

/** One tar entry as the extractor yields it (tar-stream does not export the type by name). */
type TarEntry = tar.Extract extends AsyncIterable<infer E> ? E : never;

export interface ReadLimits {
  /** Largest single entry, in bytes. */
  maxEntryBytes: number;
  /** Largest inflated (gunzipped) size of the whole tar stream, in bytes: stops gzip bombs. */
  maxTotalBytes: number;
  /** Most entries (files, directories and anything else) in the tar. */
  maxEntries: number;
}

export const DEFAULT_READ_LIMITS: Readonly<ReadLimits> = {
  maxEntryBytes: 8 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
  maxEntries: 500_000,
};

export interface ReadOptions {
  limits?: Partial<ReadLimits>;
  /** groupResource -> kind from the caller's discovery, to check custom resources' kinds. */
  knownKinds?: ReadonlyMap<string, string>;
}

export interface ArchiveContents {
  formatVersion: string;
  /** One entry per object: the preferred-version copy when there is one, else the classic copy. */
  items: ArchiveItem[];
  /** Copies at other (non-preferred) API versions. */
  alternateVersions: ArchiveItem[];
  /** Path -> SHA-256 (hex) of every file entry, to compare with the backup's manifest. */
  entries: Record<string, string>;
  /** SHA-256 and size of the gzipped stream as read. */
  tarball: { sha256: string; bytes: number };
  inflatedBytes: number;
  /** Files outside metadata/version and resources/ (allowed by the format's minor versions), skipped. */
  ignored: string[];
}

/** Reads and validates a gzipped tarball; rejects with an ArchiveError naming the reason and entry. */
export async function readArchive(source: AsyncIterable<Uint8Array>, opts: ReadOptions = {}): Promise<ArchiveContents> {
  const limits: ReadLimits = { ...DEFAULT_READ_LIMITS, ...opts.limits };
  const tarballHash = createHash('sha256');
  let tarballBytes = 0;
  async function* tap(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      tarballHash.update(chunk);
      tarballBytes += chunk.byteLength;
      yield chunk;
    }
  }
  let inflated = 0;
  const input = Readable.from(tap(), { objectMode: false });
  const gunzip = createGunzip();
  const meter = new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      inflated += chunk.byteLength;
      if (inflated > limits.maxTotalBytes) {
        cb(new ArchiveError('total-size-exceeded',
          `the tarball inflates to more than ${limits.maxTotalBytes} bytes (possible gzip bomb); refused`));
      } else cb(null, chunk);
    },
  });
  const extract = tar.extract();
  let upstreamError: unknown;
  const abortWith = (err: unknown): void => {
    upstreamError ??= err;
    extract.destroy(upstreamError instanceof Error ? upstreamError : new Error(String(upstreamError)));
  };
  input.on('error', abortWith); // a storage error: passed through unchanged
  gunzip.on('error', (e: Error) => abortWith(new ArchiveError('corrupt', `the tarball is not valid gzip: ${e.message}`)));
  meter.on('error', abortWith);
  extract.on('error', () => undefined); // surfaced by the iterator below
  input.pipe(gunzip).pipe(meter).pipe(extract);

  const state = newState();
  try {
    for await (const entry of extract) await readEntry(entry, limits, state);
  } catch (err) {
    if (isArchiveError(err)) throw err;
    if (upstreamError !== undefined) throw upstreamError;
    throw new ArchiveError('corrupt', `the tarball is not a valid tar stream: ${(err as Error).message}`);
  } finally {
    for (const s of [input, gunzip, meter]) s.destroy();
    extract.destroy();
  }

  if (state.version === undefined) {
    throw new ArchiveError('missing-version', `the tarball has no ${METADATA_VERSION_PATH} entry; it is not a backup archive`);
  }
  const items = [...state.slots.values()];
  checkKinds([...items, ...state.alternates], opts.knownKinds);
  return {
    formatVersion: state.version,
    items,
    alternateVersions: state.alternates,
    entries: state.entries,
    tarball: { sha256: tarballHash.digest('hex'), bytes: tarballBytes },
    inflatedBytes: inflated,
    ignored: state.ignored,
  };
}

interface ReadState {
  count: number;
  version: string | undefined;
  entries: Record<string, string>;
  slots: Map<string, ArchiveItem>;
  alternates: ArchiveItem[];
  ignored: string[];
}

function newState(): ReadState {
  return {
    count: 0,
    version: undefined,
    entries: Object.create(null) as Record<string, string>,
    slots: new Map(),
    alternates: [],
    ignored: [],
  };
}

async function readEntry(entry: TarEntry, limits: ReadLimits, st: ReadState): Promise<void> {
  const h = entry.header;
  st.count++;
  if (st.count > limits.maxEntries) {
    throw new ArchiveError('too-many-entries', `the tarball has more than ${limits.maxEntries} entries; refused`, h.name);
  }
  const path = checkEntryName(h.name);
  if (h.type === 'directory') {
    entry.resume();
    return;
  }
  if (path === '') throw new ArchiveError('invalid-path', `entry ${JSON.stringify(h.name)} has an empty path`, h.name);
  if (h.type === 'symlink' || h.type === 'link') {
    const what = h.type === 'symlink' ? 'a symbolic link' : 'a hard link';
    throw new ArchiveError('link-entry', `entry ${path} is ${what} (to "${h.linkname ?? ''}"); links are refused`, path);
  }
  if (h.type !== 'file' && h.type !== 'contiguous-file') {
    throw new ArchiveError('unsupported-entry', `entry ${path} is a ${h.type ?? 'unknown-type'} entry; only regular files are allowed`, path);
  }
  const size = h.size ?? 0;
  if (size > limits.maxEntryBytes) {
    throw new ArchiveError('entry-too-large', `entry ${path} is ${size} bytes, over the ${limits.maxEntryBytes}-byte cap`, path);
  }
  if (path in st.entries) throw new ArchiveError('duplicate-entry', `entry ${path} appears twice in the tarball`, path);
  const data = await readAll(entry, path, limits.maxEntryBytes);
  const sha256 = createHash('sha256').update(data).digest('hex');
  st.entries[path] = sha256;

  if (path === METADATA_VERSION_PATH) {
    const v = data.toString('utf8').trim();
    if (!isSupportedFormatVersion(v)) {
      throw new ArchiveError('unknown-version',
        `${METADATA_VERSION_PATH} says format ${JSON.stringify(v.slice(0, 40))}, which this version of Stowage cannot read (it reads 1.x)`, path);
    }
    st.version = v;
    return;
  }
  const parsed = parseItemPath(path);
  if (parsed === null) {
    st.ignored.push(path);
    return;
  }
  if (typeof parsed === 'string') throw new ArchiveError('invalid-path', `entry ${path} is not a valid item path: ${parsed}`, path);
  addItem(st, path, parsed, data, sha256);
}

function addItem(st: ReadState, path: string, p: ParsedItemPath, data: Buffer, sha256: string): void {
  const item = (object: ArchiveItem['object']): ArchiveItem => {
    const it: ArchiveItem = { path, groupResource: p.groupResource, name: p.name, object, sha256, bytes: data.byteLength };
    if (p.namespace !== undefined) it.namespace = p.namespace;
    if (p.versionDir !== undefined) it.versionDir = p.versionDir;
    return it;
  };
  if (p.version !== undefined && !p.preferred) {
    const obj = parseItemJson(path, data);
    checkItemAgainstPath(path, p, obj);
    st.alternates.push(item(obj));
    return;
  }
  // The classic copy and the preferred-version copy are the same object and must hold the same bytes.
  const key = `${p.groupResource}\u0000${p.namespace ?? ''}\u0000${p.name}`;
  const existing = st.slots.get(key);
  if (existing === undefined) {
    const obj = parseItemJson(path, data);
    checkItemAgainstPath(path, p, obj);
    st.slots.set(key, item(obj));
    return;
  }
  if (existing.sha256 !== sha256) {
    throw new ArchiveError('conflicting-copies', `entries ${existing.path} and ${path} hold different versions of one object`, path);
  }
  if (existing.versionDir !== undefined && p.preferred) {
    throw new ArchiveError('conflicting-copies', `entries ${existing.path} and ${path} are both preferred-version copies of one object`, path);
  }
  checkItemAgainstPath(path, p, existing.object);
  if (p.preferred) st.slots.set(key, item(existing.object));
}

/**
 * Returns the entry's path with `.` segments and empty segments removed ('' for the root), or throws when it is
 * absolute, climbs out with `..`, or contains characters a path we write never has.
 */
export function checkEntryName(raw: string): string {
  if (raw.includes('\u0000')) throw new ArchiveError('invalid-path', `entry name ${JSON.stringify(raw)} contains a NUL byte`, raw);
  if (raw.startsWith('/') || raw.startsWith('\\') || /^[A-Za-z]:/.test(raw)) {
    throw new ArchiveError('absolute-path', `entry ${raw} has an absolute path; refused`, raw);
  }
  const segments = raw.split(/[/\\]/);
  if (segments.includes('..')) throw new ArchiveError('path-traversal', `entry ${raw} climbs out of the archive with ".."; refused`, raw);
  if (raw.includes('\\')) throw new ArchiveError('invalid-path', `entry ${raw} contains a backslash`, raw);
  return segments.filter((s) => s !== '' && s !== '.').join('/');
}

async function readAll(entry: TarEntry, path: string, cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of entry as AsyncIterable<Buffer>) {
    n += chunk.byteLength;
    if (n > cap) throw new ArchiveError('entry-too-large', `entry ${path} is over the ${cap}-byte cap`, path);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, n);
}

