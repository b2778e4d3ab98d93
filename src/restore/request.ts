// RestoreRequest: everything one restore run decides up front (resolved filters, mapping, policy,
// priorities) and accumulates (per-item outcomes, results, counters, progress).
import type { Backup, LabelSelector, Restore, RestoreProgress, RestoreSummary } from '../apis/v1/index.js';
import { DEFAULT_RESTORE_PRIORITIES, type RestorePriorities } from '../config/config.js';
import { emptyResults, type RunResults } from '../persistence/results.js';
import { compileSelection } from '../selection/compile.js';
import { resourceFilter, type IncludesExcludes, type NamespaceFilter, type ResourceFilter, type ResourceLike } from '../selection/filters.js';
import type { NameFilter } from '../selection/names.js';

/** What happened to one item (for a dry run: what would happen). */
export type ItemAction = 'created' | 'updated' | 'skipped' | 'failed';

export interface ItemOutcome {
  groupResource: string;
  /** Target namespace ('' for cluster-scoped items). */
  namespace: string;
  name: string;
  action: ItemAction;
  /** Why: "created", "already exists and differs from the backup; left unchanged", the error, ... */
  reason: string;
  /** Dry run only: whether the apiserver validated the predicted create/update (server-side dry run). */
  validated?: boolean;
  /** What changed the item on the way (mapping actions, resource modifier rules), in order. */
  transforms?: string[];
  /** Dry run only: the transformed object as it would be written (a Secret's values redacted). */
  patched?: Record<string, unknown>;
  /** A created pod's restore hooks: init containers added, exec hooks run (a dry run's: would be). */
  hooks?: string[];
}

export interface RestoreRequest {
  readonly restore: Restore;
  readonly backup: Backup;
  readonly dryRun: boolean;
  readonly namespaces: NamespaceFilter;
  /** includedResources/excludedResources, or Velero's scope-specific lists (selection/scopedResources.ts). */
  readonly resources: ResourceFilter;
  /** includedNames/excludedNames (selection/names.ts), matched against the names in the backup. */
  readonly names: NameFilter;
  /** Whether cluster-scoped items are restored in full (with the scope-specific lists: those the resource filter takes). */
  readonly includeClusterScoped: boolean;
  /**
   * Whether cluster-scoped items related to restored namespaced items come along although the rest
   * do not: the CRDs of custom resources and the PVs of claims. Only includeClusterResources: false
   * (or excludedClusterScopedResources: ["*"]) turns this off.
   */
  readonly includeRelatedClusterScoped: boolean;
  /** OR-ed label selectors; empty means every item matches. */
  readonly selectors: readonly LabelSelector[];
  /** Source namespace -> target namespace. */
  readonly namespaceMapping: ReadonlyMap<string, string>;
  readonly existingResourcePolicy: 'none' | 'update';
  /** Resources whose status is restored (restoreStatus); nothing when restoreStatus is unset. */
  readonly restoreStatus: IncludesExcludes<ResourceLike | string> | undefined;
  readonly preserveNodePorts: boolean;
  readonly priorities: RestorePriorities;
  /** Filled by runRestore. */
  readonly outcomes: ItemOutcome[];
  readonly results: RunResults;
  readonly summary: RestoreSummary;
  readonly progress: RestoreProgress;
}

export interface RestoreRequestOptions {
  /** --restore-resource-priorities; defaults to the server's defaults. */
  priorities?: RestorePriorities;
}

export function newRestoreRequest(restore: Restore, backup: Backup, opts: RestoreRequestOptions = {}): RestoreRequest {
  const spec = restore.spec;
  const selection = compileSelection(spec);
  const rs = spec.restoreStatus;
  return {
    restore,
    backup,
    dryRun: spec.dryRun === true,
    namespaces: selection.namespaces,
    resources: selection.resources,
    names: selection.names,
    includeClusterScoped: selection.clusterScopedInFull,
    includeRelatedClusterScoped: selection.relatedClusterScoped,
    selectors: selection.labelSelectors,
    namespaceMapping: new Map(Object.entries(spec.namespaceMapping ?? {})),
    existingResourcePolicy: spec.existingResourcePolicy ?? 'none',
    // restoreStatus set with no includes selects nothing (as in Velero): status is opt-in per resource.
    restoreStatus: rs === undefined || (rs.includedResources ?? []).length === 0 ? undefined : resourceFilter(rs.includedResources, rs.excludedResources),
    preserveNodePorts: spec.preserveNodePorts === true,
    priorities: opts.priorities ?? DEFAULT_RESTORE_PRIORITIES,
    outcomes: [],
    results: emptyResults(),
    summary: { created: 0, updated: 0, skipped: 0, failed: 0 },
    progress: { totalItems: 0, itemsRestored: 0 },
  };
}

/** The namespace an item of `namespace` is restored into. */
export function targetNamespace(req: Pick<RestoreRequest, 'namespaceMapping'>, namespace: string): string {
  return req.namespaceMapping.get(namespace) ?? namespace;
}
