// The written tarball's table of entries (path -> SHA-256), kept compactly until the manifest is
// uploaded at the end of the backup, when the server's memory is highest. As an object of path ->
// hex strings it held two path strings and a 64-character string per item (~437 bytes an item live,
// 21 MB at 50k items); here an item's classic path is the only string, its preferred-version copy
// is the path with its version directory put in, and the digests are 32 bytes each in one Buffer.
import { JSON_PIECES, type JsonPiecesSource } from '../util/jsonPieces.js';
import { RESOURCES_DIR } from './format.js';

const DIGEST_BYTES = 32;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export class ManifestTable implements JsonPiecesSource {
  /** One path per record: an entry, or an item's classic copy followed by its preferred-version copy. */
  private readonly paths: string[] = [];
  /** Per record: 0 for a single entry, else the version directory of its second (preferred-version) path. */
  private readonly second: (string | 0)[] = [];
  /** The records' paths, for refusing a path written twice; the strings are the ones in `paths`. */
  private readonly held = new Set<string>();
  private digests = Buffer.allocUnsafe(DIGEST_BYTES * 1024);
  private entries = 0;

  /** Entries in the table (a record with a preferred-version copy counts two). */
  get size(): number {
    return this.entries;
  }

  /** Whether `path` was added as an entry of its own or as an item's classic copy. */
  holds(path: string): boolean {
    return this.held.has(path);
  }

  /**
   * Adds `path` with the SHA-256 (hex) of its bytes, and when `preferredDir` is given also the
   * item's copy under `resources/<gr>/<preferredDir>/`, with the same bytes, right after it.
   */
  add(path: string, sha256: string, preferredDir?: string): void {
    if (!SHA256_HEX.test(sha256)) throw new Error(`not a SHA-256 in hex: ${JSON.stringify(sha256)}`);
    if (preferredDir !== undefined && versionDirAt(path) < 0) throw new Error(`${path} is not an item path`);
    const i = this.paths.length;
    if ((i + 1) * DIGEST_BYTES > this.digests.length) {
      const grown = Buffer.allocUnsafe(this.digests.length * 2);
      this.digests.copy(grown);
      this.digests = grown;
    }
    this.digests.write(sha256, i * DIGEST_BYTES, DIGEST_BYTES, 'hex');
    this.paths.push(path);
    this.second.push(preferredDir ?? 0);
    this.held.add(path);
    this.entries += preferredDir === undefined ? 1 : 2;
  }

  /** Every entry as [path, SHA-256 in hex], in the order added (the tarball's). */
  *[Symbol.iterator](): Generator<[string, string]> {
    for (let i = 0; i < this.paths.length; i++) {
      const path = this.paths[i] as string;
      const sha = this.digests.toString('hex', i * DIGEST_BYTES, (i + 1) * DIGEST_BYTES);
      yield [path, sha];
      const dir = this.second[i];
      if (dir !== undefined && dir !== 0) yield [withVersionDir(path, dir), sha];
    }
  }

  /** The table as the manifest's `entries` object (as JSON.stringify and a parsed manifest have it). */
  toJSON(): Record<string, string> {
    const out = Object.create(null) as Record<string, string>;
    for (const [path, sha] of this) out[path] = sha;
    return out;
  }

  [JSON_PIECES](): Iterable<string> {
    return this.pieces();
  }

  private *pieces(): Generator<string> {
    yield '{';
    let first = true;
    for (const [path, sha] of this) {
      yield `${first ? '' : ','}${JSON.stringify(path)}:"${sha}"`;
      first = false;
    }
    yield '}';
  }
}

/** Where the version directory goes in an item path: right after `resources/<gr>`; -1 for another path. */
function versionDirAt(path: string): number {
  if (!path.startsWith(`${RESOURCES_DIR}/`)) return -1;
  return path.indexOf('/', RESOURCES_DIR.length + 1);
}

/** An item path with a version directory put in: `resources/<gr>/<dir>/...` (itemPath with `versionDir`). */
export function withVersionDir(path: string, dir: string): string {
  const at = versionDirAt(path);
  return `${path.slice(0, at)}/${dir}${path.slice(at)}`;
}
