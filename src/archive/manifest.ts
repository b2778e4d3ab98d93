// The backup manifest: SHA-256 of every file in the tarball and of the gzipped tarball, written next
// to the backup so a restore (or `stowage backup verify`) can prove the archive is the one written.
import type { ArchiveSummary } from './reader.js';
import { ManifestTable } from './manifestTable.js';
import type { ArchiveDigest } from './writer.js';

export interface BackupManifest {
  formatVersion: string;
  tarball: { sha256: string; bytes: number };
  /** Path in the tarball -> SHA-256 (hex) of that file's bytes. */
  entries: Record<string, string>;
}

/**
 * The manifest of a tarball this process wrote: its entries stay in the writer's compact table
 * until they are serialized (the same JSON as a BackupManifest's).
 */
export interface WrittenManifest {
  formatVersion: string;
  tarball: { sha256: string; bytes: number };
  entries: ManifestTable;
}

/** A manifest read back (entries as an object) or one just written (entries in a table). */
export type AnyManifest = BackupManifest | WrittenManifest;

/** The manifest's entries as [path, SHA-256] pairs, in the order written. */
export function manifestEntries(m: Pick<AnyManifest, 'entries'>): Iterable<[string, string]> {
  return m.entries instanceof ManifestTable ? m.entries : Object.entries(m.entries);
}

/** The manifest of a written tarball. It shares the digest's table of entries (100k of them in a large backup) rather than copying it. */
export function manifestFromDigest(d: ArchiveDigest): WrittenManifest {
  return { formatVersion: d.formatVersion, tarball: { ...d.tarball }, entries: d.entries };
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

/** Checks entries against a manifest one by one, as they are read, without keeping them. */
export interface ManifestCheck {
  /** One file entry of the tarball: its path and the SHA-256 (hex) of its bytes. */
  entry(path: string, sha256: string): void;
  /** The differences found (at most `max`, then a count), once the whole tarball was read. */
  finish(tarball: { sha256: string }): string[];
}

/**
 * Streams the comparison of a tarball with its manifest: the manifest's entries are crossed off as
 * they are read, so memory holds what is left of the manifest, never a second table of the tarball.
 */
export function manifestCheck(manifest: AnyManifest, max = 10): ManifestCheck {
  // Only the table and the tarball's digest are kept: the caller may drop the manifest itself.
  const tarballSha = manifest.tarball.sha256;
  const expected = new Map<string, string>();
  for (const [path, sha256] of manifestEntries(manifest)) expected.set(path, sha256);
  const found = manifestFindings(max);
  return {
    entry(path, sha256) {
      found.entry(path, sha256, expected.get(path));
      expected.delete(path);
    },
    finish(tarball) {
      for (const path of expected.keys()) found.missing(path);
      expected.clear();
      return found.list(tarball.sha256, tarballSha);
    },
  };
}

/** The differences between a tarball and its manifest, in the words every check uses. */
export interface ManifestFindings {
  /** A tarball entry and what the manifest says of its path (undefined: nothing). */
  entry(path: string, sha256: string, want: string | undefined): void;
  /** A manifest entry the tarball does not hold. */
  missing(path: string): void;
  /** All of them: the tarball's digest first, at most `max`, then a count. */
  list(tarballSha: string, wantTarballSha: string): string[];
}

export function manifestFindings(max: number): ManifestFindings {
  const problems: string[] = [];
  let count = 0;
  const problem = (p: string): void => {
    count++;
    if (problems.length < max) problems.push(p);
  };
  return {
    entry(path, sha256, want) {
      if (want === undefined) problem(`${path} is in the tarball but not in the manifest`);
      else if (want !== sha256) problem(`${path} has SHA-256 ${sha256}, the manifest says ${want}`);
    },
    missing: (path) => problem(`${path} is in the manifest but not in the tarball`),
    list(tarballSha, wantTarballSha) {
      const all = [...problems];
      if (tarballSha !== wantTarballSha) all.unshift(`the tarball's SHA-256 is ${tarballSha}, the manifest says ${wantTarballSha}`);
      const total = count + (all.length - problems.length);
      return total <= max ? all : [...all.slice(0, max), `and ${total - max} more differences`];
    },
  };
}

/**
 * Compares what was read with the manifest written at backup time. Returns the differences (at most
 * `max`, then a count), empty when the archive is exactly the one that was written.
 */
export function verifyManifest(contents: Pick<ArchiveSummary, 'tarball' | 'entries'>, manifest: AnyManifest, max = 10): string[] {
  const check = manifestCheck(manifest, max);
  for (const path in contents.entries) check.entry(path, contents.entries[path] as string);
  return check.finish(contents.tarball);
}
