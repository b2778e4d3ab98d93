// The one check of a backup's records that both `stowage backup verify` and every restore make
// (the restore before it writes anything): the manifest (what the tarball holds, entry by entry;
// the tarball itself is compared with the manifest first), the resource list and the completeness
// record must describe the same items. A tarball swapped together with a manifest forged to match
// it passes the first comparison and fails this one. Pure: the callers read the three.
import { itemPath, parseItemPath, preferredVersionDir, versionOfApiVersion, type BackupManifest } from '../archive/index.js';
import type { PathDigest } from './pathDigest.js';
import type { ResourceList, ResourceRecord } from './results.js';

/** A resource-list entry is `ns/name` or `name`. */
function splitEntry(entry: string): { namespace: string | undefined; name: string } {
  const i = entry.indexOf('/');
  return i < 0 ? { namespace: undefined, name: entry } : { namespace: entry.slice(0, i), name: entry.slice(i + 1) };
}

/**
 * Every disagreement, each a sentence naming the item or resource. `records` is the results file's
 * completeness record, undefined for a backup made before it existed (then only the list and the
 * manifest are compared).
 */
export function checkAgreement(manifest: Pick<BackupManifest, 'entries'>, list: ResourceList, records: readonly ResourceRecord[] | undefined): string[] {
  const problems: string[] = [];
  const byGr = new Map((records ?? []).map((r) => [r.groupResource, r]));
  const listed = new Set<string>();
  for (const [gr, entries] of Object.entries(list)) {
    const record = byGr.get(gr);
    const version = record === undefined ? undefined : versionOfApiVersion(record.apiVersion);
    for (const entry of entries) {
      listed.add(`${gr}\u0000${entry}`);
      const { namespace, name } = splitEntry(entry);
      const classic = itemPath(gr, namespace, name);
      if (manifest.entries[classic] === undefined) problems.push(`${gr} "${entry}" is in the resource list but the manifest has no ${classic}`);
      if (version !== undefined) {
        const preferred = itemPath(gr, namespace, name, preferredVersionDir(version));
        if (manifest.entries[preferred] === undefined) problems.push(`${gr} "${entry}" is in the resource list but the manifest has no ${preferred}`);
        for (const other of record?.otherVersions ?? []) {
          const p = itemPath(gr, namespace, name, versionOfApiVersion(other));
          if (manifest.entries[p] === undefined) problems.push(`${gr} "${entry}" is recorded as stored at ${other} too, but the manifest has no ${p}`);
        }
      }
    }
  }
  for (const path of Object.keys(manifest.entries).sort()) {
    const p = parseItemPath(path);
    if (p === null || typeof p === 'string') continue;
    const entry = p.namespace === undefined ? p.name : `${p.namespace}/${p.name}`;
    if (!listed.has(`${p.groupResource}\u0000${entry}`)) {
      problems.push(`${path} is in the manifest but ${p.groupResource} "${entry}" is not in the resource list`);
      continue;
    }
    const record = byGr.get(p.groupResource);
    if (record === undefined || p.version === undefined) continue;
    const stored = versionOfApiVersion(record.apiVersion);
    const other = (record.otherVersions ?? []).map(versionOfApiVersion);
    if (p.preferred ? p.version !== stored : !other.includes(p.version)) {
      problems.push(`${path} is in the manifest but the completeness record has ${p.groupResource} at ${record.apiVersion}` +
        (other.length > 0 ? ` (and ${(record.otherVersions ?? []).join(', ')})` : ''));
    }
  }
  return [...problems, ...countProblems(list, records)];
}

/** The record's written counts against the resource list (the last part of checkAgreement). */
function countProblems(list: ResourceList, records: readonly ResourceRecord[] | undefined): string[] {
  const problems: string[] = [];
  if (records === undefined) return problems;
  const byGr = new Set(records.map((r) => r.groupResource));
  for (const r of records) {
    const n = list[r.groupResource]?.length ?? 0;
    if (r.written !== n) problems.push(`the completeness record says ${r.written} ${r.groupResource} written, the resource list holds ${n}`);
  }
  for (const gr of Object.keys(list).sort()) {
    if (!byGr.has(gr)) problems.push(`the resource list holds ${list[gr]?.length ?? 0} ${gr}, which the completeness record does not mention`);
  }
  return problems;
}

/** Whether checkAgreement looks at a manifest path at all (an item path): what a restore adds to its digest of the tarball. */
export function isCheckedPath(path: string): boolean {
  const p = parseItemPath(path);
  return p !== null && typeof p !== 'string';
}

/**
 * checkAgreement without the manifest's table: `manifest` is a digest (pathDigest) of the manifest's
 * paths that isCheckedPath takes. When it equals the digest of the paths the resource list and the
 * record promise, each of which reads back as the entry and version it was made from, the manifest
 * holds exactly those paths, so checkAgreement would find nothing but the record's counts: those are
 * returned. Undefined when the digest cannot say (no record, a difference, an odd entry): the caller
 * then runs checkAgreement on the manifest itself, for the same findings in the same words.
 */
export function agreementByDigest(manifest: PathDigest, list: ResourceList, records: readonly ResourceRecord[] | undefined): string[] | undefined {
  // Without a record only the classic copies are promised, and any copy of a listed item is allowed.
  if (records === undefined) return undefined;
  const promised = manifest.sibling();
  const byGr = new Map(records.map((r) => [r.groupResource, r]));
  for (const [gr, entries] of Object.entries(list)) {
    const record = byGr.get(gr);
    if (record === undefined) return undefined;
    const stored = versionOfApiVersion(record.apiVersion);
    const others = (record.otherVersions ?? []).map(versionOfApiVersion);
    for (const entry of entries) {
      const { namespace, name } = splitEntry(entry);
      const copies: [string | undefined, string | undefined, boolean][] = [
        [undefined, undefined, false], [preferredVersionDir(stored), stored, true], ...others.map((v): [string, string, boolean] => [v, v, false]),
      ];
      for (const [dir, version, preferred] of copies) {
        const path = itemPath(gr, namespace, name, dir);
        if (!readsBackAs(path, gr, entry, version, preferred)) return undefined;
        promised.add(path);
      }
    }
  }
  return promised.equals(manifest) ? countProblems(list, records) : undefined;
}

/** Whether checkAgreement, parsing the path, would find the list entry and version it was made from. */
function readsBackAs(path: string, gr: string, entry: string, version: string | undefined, preferred: boolean): boolean {
  const p = parseItemPath(path);
  if (p === null || typeof p === 'string' || p.groupResource !== gr || p.version !== version || p.preferred !== preferred) return false;
  return (p.namespace === undefined ? p.name : `${p.namespace}/${p.name}`) === entry;
}
