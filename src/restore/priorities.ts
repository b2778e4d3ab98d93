// Restore order, Velero style: each high-priority entry is a tier of its own, in the configured
// order; then every other resource alphabetically, one tier each; then the low-priority tail (the
// entries after "-"), in order. Items of one tier are created in parallel; tiers run one after another.
import type { RestorePriorities } from '../config/config.js';
import { parseGroupResource, resourceEntryMatches, type ResourceLike } from '../selection/filters.js';

export interface RestoreTier {
  /** The priority entry that formed the tier, or the group-resource for the alphabetical middle. */
  label: string;
  groupResources: string[];
}

/**
 * The group-resources a priority entry stands for. An exact group-resource wins
 * (`replicasets.apps`); otherwise the entry may be a plural, kind, singular or short name, with or
 * without a group (`storageclasses` -> `storageclasses.storage.k8s.io`). A core-group match is
 * preferred over same-named resources of other groups, as kubectl resolves names.
 */
export function resolvePriorityEntry(entry: string, candidates: readonly ResourceLike[]): string[] {
  const e = entry.trim().toLowerCase();
  const grOf = (r: ResourceLike): string => (r.group === '' ? r.resource : `${r.resource}.${r.group}`);
  const exact = candidates.filter((r) => grOf(r) === e);
  if (exact.length > 0) return exact.map(grOf);
  const matches = candidates.filter((r) => resourceEntryMatches(e, r));
  const core = matches.filter((r) => r.group === '');
  return (core.length > 0 ? core : matches).map(grOf).sort();
}

/**
 * Splits group-resources into ordered tiers. `describe` gives discovery's view of a resource (kind,
 * singular and short names) so entries written as kinds or short names resolve too; without it the
 * group-resource alone is used.
 */
export function orderTiers(
  groupResources: Iterable<string>,
  priorities: RestorePriorities,
  describe: (groupResource: string) => ResourceLike = parseGroupResource,
): RestoreTier[] {
  const all = [...new Set(groupResources)].sort();
  const placed = new Set<string>();
  const candidates = (): ResourceLike[] => all.filter((gr) => !placed.has(gr)).map(describe);
  const take = (entry: string): RestoreTier | undefined => {
    const grs = resolvePriorityEntry(entry, candidates()).filter((gr) => !placed.has(gr));
    for (const gr of grs) placed.add(gr);
    return grs.length > 0 ? { label: entry, groupResources: grs } : undefined;
  };
  const high = priorities.high.map(take).filter((t): t is RestoreTier => t !== undefined);
  // The low tail is resolved before the middle, so its resources are not swallowed by it.
  const low = priorities.low.map(take).filter((t): t is RestoreTier => t !== undefined);
  const middle = all.filter((gr) => !placed.has(gr)).map((gr) => ({ label: gr, groupResources: [gr] }));
  return [...high, ...middle, ...low];
}
