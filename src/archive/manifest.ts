// The backup manifest: SHA-256 of every file in the tarball and of the gzipped tarball, written next
// to the backup so a restore (or `stowage backup verify`) can prove the archive is the one written.
import type { ArchiveSummary } from './reader.js';
import type { ArchiveDigest } from './writer.js';

export interface BackupManifest {
  formatVersion: string;
  tarball: { sha256: string; bytes: number };
  /** Path in the tarball -> SHA-256 (hex) of that file's bytes. */
  entries: Record<string, string>;
}

export function manifestFromDigest(d: ArchiveDigest): BackupManifest {
  return { formatVersion: d.formatVersion, tarball: { ...d.tarball }, entries: { ...d.entries } };
}

/** Checks a manifest read back from storage has the expected shape. */
export function parseManifest(value: unknown): BackupManifest {
  const fail = (why: string): never => {
    throw new Error(`the backup manifest is malformed: ${why}`);
  };
  if (value === null || typeof value !== 'object') return fail('not an object');
  const m = value as Record<string, unknown>;
  if (typeof m.formatVersion !== 'string') fail('formatVersion is missing');
  const t = m.tarball as Record<string, unknown> | null | undefined;
  if (t === null || typeof t !== 'object' || typeof t.sha256 !== 'string' || typeof t.bytes !== 'number') fail('tarball is missing');
  const e = m.entries;
  if (e === null || typeof e !== 'object' || Array.isArray(e)) return fail('entries is missing');
  for (const [k, v] of Object.entries(e)) if (typeof v !== 'string') fail(`entry ${k} has no checksum`);
  return value as BackupManifest;
}

/**
 * Compares what was read with the manifest written at backup time. Returns the differences (at most
 * `max`, then a count), empty when the archive is exactly the one that was written.
 */
export function verifyManifest(contents: Pick<ArchiveSummary, 'tarball' | 'entries'>, manifest: BackupManifest, max = 10): string[] {
  const problems: string[] = [];
  if (contents.tarball.sha256 !== manifest.tarball.sha256) {
    problems.push(`the tarball's SHA-256 is ${contents.tarball.sha256}, the manifest says ${manifest.tarball.sha256}`);
  }
  for (const [path, sha] of Object.entries(manifest.entries)) {
    const got = Object.hasOwn(contents.entries, path) ? contents.entries[path] : undefined;
    if (got === undefined) problems.push(`${path} is in the manifest but not in the tarball`);
    else if (got !== sha) problems.push(`${path} has SHA-256 ${got}, the manifest says ${sha}`);
  }
  for (const path of Object.keys(contents.entries)) {
    if (!Object.hasOwn(manifest.entries, path)) problems.push(`${path} is in the tarball but not in the manifest`);
  }
  return problems.length <= max ? problems : [...problems.slice(0, max), `and ${problems.length - max} more differences`];
}
