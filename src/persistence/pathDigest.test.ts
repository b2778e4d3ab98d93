import { describe, expect, it } from 'vitest';
import { pathDigest, type PathDigest } from './pathDigest.js';
import type { ResourceList, ResourceRecord } from './results.js';
import { agreementByDigest, checkAgreement, isCheckedPath } from './verify.js';

const digestOf = (key: PathDigest, paths: readonly string[]): PathDigest => {
  const d = key.sibling();
  for (const p of paths) d.add(p);
  return d;
};

describe('pathDigest', () => {
  const base = pathDigest();
  it('is equal for the same paths in any order, and differs for a missing, extra, repeated or other path', () => {
    const a = ['resources/configmaps/namespaces/ns/a.json', 'resources/configmaps/namespaces/ns/b.json', 'resources/secrets/namespaces/ns/c.json'];
    expect(digestOf(base, a).equals(digestOf(base, [...a].reverse()))).toBe(true);
    expect(digestOf(base, a).equals(digestOf(base, a.slice(1)))).toBe(false);
    expect(digestOf(base, a).equals(digestOf(base, [...a, 'resources/secrets/namespaces/ns/d.json']))).toBe(false);
    // Repeated twice is not the same as once (XOR would cancel a pair out).
    expect(digestOf(base, [...a, a[0] as string, a[0] as string]).equals(digestOf(base, a))).toBe(false);
    expect(digestOf(base, a).equals(digestOf(base, [...a.slice(0, 2), 'resources/secrets/namespaces/ns/C.json']))).toBe(false);
  });

  it('compares only digests under one key', () => {
    const a = ['resources/configmaps/namespaces/ns/a.json'];
    expect(digestOf(pathDigest(), a).equals(digestOf(pathDigest(), a))).toBe(false);
    expect(pathDigest(Buffer.alloc(32)).equals(pathDigest(Buffer.alloc(32)))).toBe(false);
  });
});

describe('agreementByDigest', () => {
  const rec = (groupResource: string, apiVersion: string, n: number, more: Partial<ResourceRecord> = {}): ResourceRecord => ({ groupResource, apiVersion, listed: n, written: n, ...more });
  const records = [
    rec('configmaps', 'v1', 2), rec('widgets.example.com', 'example.com/v1', 1, { otherVersions: ['example.com/v1alpha1'] }),
    rec('namespaces', 'v1', 1), rec('secrets', 'v1', 0, { error: 'listing secrets failed: forbidden' }),
  ];
  const list: ResourceList = { configmaps: ['ns/a', 'ns/b'], 'widgets.example.com': ['ns/w1'], namespaces: ['ns'] };
  const good = [
    'metadata/version',
    'resources/configmaps/namespaces/ns/a.json', 'resources/configmaps/v1-preferredversion/namespaces/ns/a.json',
    'resources/configmaps/namespaces/ns/b.json', 'resources/configmaps/v1-preferredversion/namespaces/ns/b.json',
    'resources/widgets.example.com/namespaces/ns/w1.json', 'resources/widgets.example.com/v1-preferredversion/namespaces/ns/w1.json',
    'resources/widgets.example.com/v1alpha1/namespaces/ns/w1.json',
    'resources/namespaces/cluster/ns.json', 'resources/namespaces/v1-preferredversion/cluster/ns.json',
  ];
  /** The digest a restore makes of the tarball's entries. */
  const read = (paths: readonly string[]): PathDigest => digestOf(pathDigest(), paths.filter(isCheckedPath));
  const manifest = (paths: readonly string[]) => ({ entries: Object.fromEntries(paths.map((p) => [p, 'x'])) });

  it('settles a backup whose manifest, list and record agree, as checkAgreement does', () => {
    expect(checkAgreement(manifest(good), list, records)).toEqual([]);
    expect(agreementByDigest(read(good), list, records)).toEqual([]);
    expect(agreementByDigest(read([...good].reverse()), list, records)).toEqual([]);
  });

  it('gives the record\'s count problems in checkAgreement\'s words when the paths agree', () => {
    const off = records.map((r) => (r.groupResource === 'configmaps' ? { ...r, written: 3 } : r)).filter((r) => r.groupResource !== 'namespaces');
    // Without the namespaces record its copies are not promised: the digest cannot say, checkAgreement does.
    expect(agreementByDigest(read(good), list, off)).toBeUndefined();
    const counted = records.map((r) => (r.groupResource === 'configmaps' ? { ...r, written: 3 } : r));
    expect(agreementByDigest(read(good), list, counted)).toEqual(checkAgreement(manifest(good), list, counted));
    expect(agreementByDigest(read(good), list, counted)).toEqual(['the completeness record says 3 configmaps written, the resource list holds 2']);
  });

  it('cannot say (the caller runs checkAgreement) when any copy is missing or extra, or without a record', () => {
    for (const paths of [
      good.filter((p) => !p.includes('v1alpha1')),
      good.filter((p) => p !== 'resources/configmaps/v1-preferredversion/namespaces/ns/b.json'),
      [...good, 'resources/configmaps/namespaces/ns/intruder.json'],
      [...good, 'resources/namespaces/v2-preferredversion/cluster/ns.json'],
    ]) {
      expect(checkAgreement(manifest(paths), list, records)).not.toEqual([]);
      expect(agreementByDigest(read(paths), list, records)).toBeUndefined();
    }
    expect(agreementByDigest(read(good), list, undefined)).toBeUndefined();
  });

  it('cannot say for a list entry whose path would not read back as that entry', () => {
    // "ns/a/x" makes a path of four segments, which checkAgreement's parse does not take for the entry.
    const odd: ResourceList = { ...list, configmaps: ['ns/a', 'ns/b', 'ns/a/x'] };
    const paths = [...good, 'resources/configmaps/namespaces/ns/a/x.json', 'resources/configmaps/v1-preferredversion/namespaces/ns/a/x.json'];
    const counted = records.map((r) => (r.groupResource === 'configmaps' ? { ...r, written: 3 } : r));
    expect(agreementByDigest(read(paths), odd, counted)).toBeUndefined();
  });
});
