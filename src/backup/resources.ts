// Which discovered resources a backup lists. Besides the spec's filters, some resources are never
// backed up (the documented list below), and resources that cannot be listed, read and created are
// skipped because they could not be restored.
import type { ApiResource } from '../kube/index.js';
import { resourceEntryMatches, type IncludesExcludes, type ResourceLike } from '../selection/filters.js';
import { includedResourceEntries } from '../selection/scopedResources.js';
import type { BackupRequest } from './request.js';

/**
 * Resources never backed up, whatever the filters say:
 * - `events`, `events.events.k8s.io`: a transient record of what happened, re-emitted by the cluster;
 *   restoring them replays stale history (and they are often most of a namespace's objects).
 * - `componentstatuses`, `pods.metrics.k8s.io`, `nodes.metrics.k8s.io`: computed on read, not stored.
 * Stowage's own kinds (backups, restores, ...) ARE backed up, like Velero does, so a backup of the
 * server's namespace keeps its locations and schedules; the restore skips them instead.
 */
export const NEVER_BACKED_UP: readonly string[] = [
  'events',
  'events.events.k8s.io',
  'componentstatuses',
  'pods.metrics.k8s.io',
  'nodes.metrics.k8s.io',
];

/** Groups that serve only resources never backed up: their discovery failing leaves nothing out. */
export const NEVER_BACKED_UP_GROUPS: readonly string[] = ['metrics.k8s.io'];

/**
 * Old group-resources that serve the same objects as a newer one (on Kubernetes <= 1.21
 * `extensions/v1beta1` ingresses are the `networking.k8s.io` ones). Backing both up would restore
 * every object twice, so the old one is skipped while the newer one is served.
 */
export const SUPERSEDED_BY: Readonly<Record<string, string>> = {
  'ingresses.extensions': 'ingresses.networking.k8s.io',
  'networkpolicies.extensions': 'networkpolicies.networking.k8s.io',
  'podsecuritypolicies.extensions': 'podsecuritypolicies.policy',
  'deployments.extensions': 'deployments.apps',
  'daemonsets.extensions': 'daemonsets.apps',
  'replicasets.extensions': 'replicasets.apps',
};

const REQUIRED_VERBS = ['list', 'get', 'create'];

export interface ResourceSelection {
  namespaced: ApiResource[];
  /** Cluster-scoped resources listed in full (empty unless cluster resources are included). */
  cluster: ApiResource[];
  /** Whether Namespace objects of the included namespaces are backed up. */
  namespaces: ApiResource | undefined;
  /** Every resource skipped for a reason other than the spec's filters, with the reason (for the log). */
  skipped: { groupResource: string; reason: string }[];
}

/** Splits discovery's resources into what to list. `clusterScoped`: list cluster-scoped resources in full. */
export function selectResources(
  discovered: readonly ApiResource[],
  filter: IncludesExcludes<ResourceLike | string>,
  clusterScoped: boolean,
): ResourceSelection {
  const served = new Set(discovered.map((r) => r.groupResource));
  const out: ResourceSelection = { namespaced: [], cluster: [], namespaces: undefined, skipped: [] };
  for (const r of discovered) {
    if (NEVER_BACKED_UP.includes(r.groupResource)) {
      out.skipped.push({ groupResource: r.groupResource, reason: 'never backed up' });
      continue;
    }
    const newer = SUPERSEDED_BY[r.groupResource];
    if (newer !== undefined && served.has(newer)) {
      out.skipped.push({ groupResource: r.groupResource, reason: `the same objects are backed up as ${newer}` });
      continue;
    }
    const missing = REQUIRED_VERBS.filter((v) => !r.verbs.includes(v));
    if (missing.length > 0) {
      out.skipped.push({ groupResource: r.groupResource, reason: `the API does not allow ${missing.join(', ')}` });
      continue;
    }
    if (!filter.shouldInclude(r)) continue;
    if (r.groupResource === 'namespaces') out.namespaces = r;
    else if (r.namespaced) out.namespaced.push(r);
    else if (clusterScoped) out.cluster.push(r);
  }
  return out;
}

/** Whether an item named by an action (an "additional item") may be backed up under the filters. */
export function isBackupable(r: ApiResource): boolean {
  return !NEVER_BACKED_UP.includes(r.groupResource) && REQUIRED_VERBS.every((v) => r.verbs.includes(v));
}

/** The spec's include entries (either style) that name no resource discovery found (`*` matches anything). */
export function unservedIncludes(req: BackupRequest, discovered: readonly ApiResource[]): string[] {
  return includedResourceEntries(req.backup.spec).filter((e) => !discovered.some((r) => resourceEntryMatches(e, r)));
}

/**
 * Whether the resource filter could include a resource of `group` it has not seen (its group
 * version could not be discovered): true unless every include entry names another group.
 * An entry without a group (`widgets`, `Widget`) matches that name in every group.
 */
export function mayIncludeGroup(req: BackupRequest, group: string): boolean {
  if (NEVER_BACKED_UP_GROUPS.includes(group)) return false;
  const spec = req.backup.spec;
  const scoped = req.resources.style === 'scoped';
  // With the scope-specific lists, no namespaced includes means every namespaced resource.
  if (scoped && (spec.includedNamespaceScopedResources ?? []).length === 0) return true;
  const everyOfAScope = [...(spec.includedNamespaceScopedResources ?? []), ...(spec.includedClusterScopedResources ?? [])].some((e) => e.trim() === '*');
  if (scoped && everyOfAScope) return true;
  const includes = (scoped ? includedResourceEntries(spec) : (spec.includedResources ?? [])).map((e) => e.trim().toLowerCase());
  if (includes.length === 0 || includes.includes('*')) return true;
  return includes.some((e) => {
    const dot = e.indexOf('.');
    return dot < 0 ? true : e.slice(dot + 1) === group.toLowerCase();
  });
}
