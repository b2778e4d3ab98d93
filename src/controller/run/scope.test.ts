import { describe, expect, it } from 'vitest';
import type { BackupSpec, RestoreSpec } from '../../apis/v1/index.js';
import { backupScope, restoreScope, scopeOverlap } from './scope.js';

const b = (spec: BackupSpec) => backupScope(spec);

describe('backup scopes', () => {
  it('lets backups of disjoint namespaces run together', () => {
    expect(scopeOverlap(b({ includedNamespaces: ['a'] }), b({ includedNamespaces: ['b'] }))).toBeUndefined();
    expect(scopeOverlap(b({ includedNamespaces: ['team-*'] }), b({ includedNamespaces: ['ops-*'] }))).toBeUndefined();
  });

  it('names the namespaces two backups share', () => {
    expect(scopeOverlap(b({ includedNamespaces: ['a', 'b', 'c'] }), b({ includedNamespaces: ['b', 'c', 'd'] }))).toBe('overlapping namespaces: b, c');
    expect(scopeOverlap(b({ includedNamespaces: ['team-*'] }), b({ includedNamespaces: ['*-prod'] }))).toBe('overlapping namespaces: any matching "team-*" and "*-prod"');
  });

  it('makes a whole-cluster backup overlap every other', () => {
    const whole = b({});
    expect(whole.cluster).toBe(true);
    expect(scopeOverlap(whole, b({ includedNamespaces: ['x'] }))).toBe('overlapping namespaces: x');
    expect(scopeOverlap(whole, b({}))).toBe('overlapping namespaces: every namespace both include; both include cluster-scoped resources');
    expect(scopeOverlap(whole, b({ excludedNamespaces: ['*'], includeClusterResources: true }))).toBe('both include cluster-scoped resources');
  });

  it('counts cluster-scoped resources only when both take them in full', () => {
    const a = b({ includedNamespaces: ['a'], includeClusterResources: true });
    expect(scopeOverlap(a, b({ includedNamespaces: ['b'], includeClusterResources: true }))).toBe('both include cluster-scoped resources');
    // Unset with a namespace filter: only the dependencies of the namespaces' items, which are only read.
    expect(scopeOverlap(a, b({ includedNamespaces: ['b'] }))).toBeUndefined();
    // All namespaces but some, cluster resources unset: not a whole-cluster backup.
    expect(b({ excludedNamespaces: ['kube-system'] }).cluster).toBe(false);
    expect(scopeOverlap(b({ excludedNamespaces: ['kube-system'] }), b({ includedNamespaces: ['kube-system'] }))).toBeUndefined();
  });
});

describe('restore scopes', () => {
  const backupOf = (...ns: string[]): BackupSpec => ({ includedNamespaces: ns });
  const r = (spec: Omit<RestoreSpec, 'backupName'>, backup: BackupSpec) => restoreScope({ backupName: 'x', ...spec }, backup);

  it('targets the namespaces both the restore and its backup admit', () => {
    expect(scopeOverlap(r({}, backupOf('a')), r({}, backupOf('b')))).toBeUndefined();
    expect(scopeOverlap(r({}, backupOf('a', 'b')), r({ includedNamespaces: ['b'] }, backupOf('b', 'c')))).toBe('overlapping namespaces: b');
    expect(scopeOverlap(r({ includedNamespaces: ['a'] }, backupOf('a', 'b')), r({}, backupOf('b')))).toBeUndefined();
  });

  it('compares target namespaces after namespaceMapping', () => {
    // Two restores of one backup into two copies: disjoint.
    expect(scopeOverlap(r({ namespaceMapping: { a: 'a-1' } }, backupOf('a')), r({ namespaceMapping: { a: 'a-2' } }, backupOf('a')))).toBeUndefined();
    // Mapped into the namespace the other restores as it is.
    expect(scopeOverlap(r({ namespaceMapping: { a: 'b' } }, backupOf('a')), r({}, backupOf('b')))).toBe('overlapping namespaces: b');
    // Both mapped to one target.
    expect(scopeOverlap(r({ namespaceMapping: { a: 't' } }, backupOf('a')), r({ namespaceMapping: { b: 't' } }, backupOf('b')))).toBe('overlapping namespaces: t');
    // A mapping of a namespace the filters leave out targets nothing.
    expect(scopeOverlap(r({ includedNamespaces: ['b'], namespaceMapping: { a: 't' } }, backupOf('a', 'b')), r({}, backupOf('t')))).toBeUndefined();
  });

  it('counts cluster-scoped restores only when the restore takes them and its backup took them in full', () => {
    const whole = r({}, {});
    expect(whole.cluster).toBe(true);
    expect(r({ includeClusterResources: true }, { includedNamespaces: ['a'], includeClusterResources: true }).cluster).toBe(true);
    // A namespace backup holds only the cluster-scoped dependencies of its items.
    expect(r({}, { includedNamespaces: ['a'] }).cluster).toBe(false);
    expect(r({ includeClusterResources: true }, { includedNamespaces: ['a'], includeClusterResources: false }).cluster).toBe(false);
    expect(r({ includedNamespaces: ['a'] }, {}).cluster).toBe(false);
    expect(scopeOverlap(r({ includedNamespaces: ['a'], includeClusterResources: true }, {}), r({ includedNamespaces: ['b'], includeClusterResources: true }, {})))
      .toBe('both include cluster-scoped resources');
  });
});
