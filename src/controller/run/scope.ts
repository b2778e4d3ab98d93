// What part of the cluster a backup or restore touches, for deciding which runs may go at the same
// time (slots.ts). Two runs overlap when they may share a namespace, or both take cluster-scoped
// resources in full:
// - a backup's namespaces are its included/excluded namespaces (globs, empty = all); it takes
//   cluster-scoped resources in full when includeClusterResources is true, or unset with every
//   namespace included. The few cluster-scoped objects a namespace backup pulls in as dependencies
//   (a claim's volume, a custom resource's CRD) are only read, and do not count;
// - a restore's namespaces are the ones it writes to: the namespaces its filters and its backup's
//   both admit, each renamed by namespaceMapping. It writes cluster-scoped resources in full when
//   its includeClusterResources (decided as for a backup) says so and its backup took them in full.
//   Related cluster-scoped objects (the CRDs and volumes of restored items, the dependencies a
//   namespace backup holds) are created only when missing, and do not count.
// Resource filters and label selectors are not looked at: two runs of one namespace queue whatever
// kinds or labels they pick. A whole-cluster run overlaps every other run of its kind.
import type { BackupSpec, RestoreSpec } from '../../apis/v1/index.js';
import { includesClusterScoped, namespaceFilter } from '../../selection/filters.js';
import { namespaceOverlap, overlaps, type NamespaceLists, type NamespaceSet } from '../../selection/overlap.js';

export interface RunScope {
  namespaces: NamespaceSet;
  /** Takes (or writes) cluster-scoped resources in full. */
  cluster: boolean;
}

type Filters = Pick<BackupSpec, 'includedNamespaces' | 'excludedNamespaces' | 'includeClusterResources'>;

const listsOf = (f: Filters): NamespaceLists => ({ includes: f.includedNamespaces ?? [], excludes: f.excludedNamespaces ?? [] });

function takesClusterScoped(f: Filters): boolean {
  return includesClusterScoped(f.includeClusterResources, namespaceFilter(f.includedNamespaces, f.excludedNamespaces));
}

export function backupScope(spec: BackupSpec): RunScope {
  return { namespaces: { all: [listsOf(spec)] }, cluster: takesClusterScoped(spec) };
}

/** A restore's target namespaces: the sources both filters admit, unmapped ones as they are, mapped ones renamed. */
export function restoreScope(spec: RestoreSpec, backup: BackupSpec): RunScope {
  const sources = [listsOf(spec), listsOf(backup)];
  const mapping = Object.entries(spec.namespaceMapping ?? {});
  const admitted = (ns: string): boolean => sources.every((l) => namespaceFilter(l.includes, l.excludes).shouldInclude(ns));
  const renamed = mapping.filter(([from]) => admitted(from)).map(([, to]) => to);
  return {
    namespaces: { all: [...sources, { includes: [], excludes: mapping.map(([from]) => from) }], names: [...new Set(renamed)] },
    cluster: takesClusterScoped(spec) && takesClusterScoped(backup),
  };
}

const MAX_NAMES_SHOWN = 5;

/** Why two scopes overlap ("overlapping namespaces: a, b"), or undefined when they do not. */
export function scopeOverlap(a: RunScope, b: RunScope): string | undefined {
  const ns = namespaceOverlap(a.namespaces, b.namespaces);
  const parts: string[] = [];
  if (overlaps(ns)) {
    const shown = ns.names.slice(0, MAX_NAMES_SHOWN);
    if (ns.names.length > shown.length) shown.push(`and ${ns.names.length - shown.length} more`);
    const matching = ns.patterns.map((ps) => (ps.length === 0 ? 'any their include patterns may share'
      : ps.length === 1 && ps[0] === '*' ? 'every namespace both include' : `any matching ${ps.map((p) => `"${p}"`).join(' and ')}`));
    parts.push(`overlapping namespaces: ${[...shown, ...matching].join(', ')}`);
  }
  if (a.cluster && b.cluster) parts.push('both include cluster-scoped resources');
  return parts.length > 0 ? parts.join('; ') : undefined;
}
