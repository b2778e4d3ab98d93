// BackupRequest: everything one backup run decides up front (resolved filters) and accumulates
// (items seen, the resource list, results, counters).
import type { Backup } from '../apis/v1/index.js';
import { addResult, emptyResults, type RunResults } from '../persistence/results.js';
import {
  includesClusterScoped,
  namespaceFilter,
  resourceFilter,
  type IncludesExcludes,
  type NamespaceFilter,
  type ResourceLike,
} from '../util/filters.js';
import { labelSelectorToString } from '../util/labels.js';

/** Items carrying this label (value "true") are left out of every backup. */
export const LABEL_EXCLUDE_FROM_BACKUP = 'stowage.dev/exclude-from-backup';

export interface ItemRef {
  groupResource: string;
  /** '' for cluster-scoped items. */
  namespace: string;
  name: string;
}

export interface BackupProgress {
  totalItems: number;
  itemsBackedUp: number;
}

export interface BackupRequest {
  readonly backup: Backup;
  readonly namespaces: NamespaceFilter;
  readonly resources: IncludesExcludes<ResourceLike | string>;
  /** The spec's includeClusterResources as given (null/undefined: "related only" unless all namespaces). */
  readonly includeClusterResources: boolean | null | undefined;
  /** List cluster-scoped resources in full. */
  readonly listClusterScoped: boolean;
  /** Label selectors in string form, one LIST each (orLabelSelectors); [''] when there is none. */
  readonly selectors: readonly string[];
  /** Whether the spec selects by label at all. */
  readonly selectsByLabel: boolean;
  /** groupResource or plural -> the `ns/name` (or `name`) to back up first, in order. */
  readonly orderedResources: ReadonlyMap<string, readonly string[]>;
  /** Identities of items already handled (backed up, or being backed up). */
  readonly seen: Set<string>;
  /** Items actions named that the filters leave out or that do not exist, so each is logged once. */
  readonly notTaken: Set<string>;
  /** Items backed up, for the resource list. */
  readonly backedUp: ItemRef[];
  /** Namespaces that had at least one item backed up. */
  readonly namespacesWithItems: Set<string>;
  readonly results: RunResults;
  readonly progress: BackupProgress;
}

export function itemKey(ref: ItemRef): string {
  // join() makes one flat string; a template literal keeps a rope of its parts, ~2x the memory in `seen`.
  return [ref.groupResource, ref.namespace, ref.name].join('/');
}

export function newBackupRequest(backup: Backup): BackupRequest {
  const spec = backup.spec;
  const namespaces = namespaceFilter(spec.includedNamespaces, spec.excludedNamespaces);
  const or = (spec.orLabelSelectors ?? []).map(labelSelectorToString);
  const single = labelSelectorToString(spec.labelSelector);
  // An empty selector among the OR-ed ones selects everything, so the others do not matter.
  const selectors = or.length > 0 ? (or.includes('') ? [''] : [...new Set(or)]) : [single];
  const ordered = new Map<string, string[]>();
  for (const [res, list] of Object.entries(spec.orderedResources ?? {})) {
    ordered.set(res.toLowerCase(), list.split(',').map((s) => s.trim()).filter((s) => s !== ''));
  }
  return {
    backup,
    namespaces,
    resources: resourceFilter(spec.includedResources, spec.excludedResources),
    includeClusterResources: spec.includeClusterResources,
    listClusterScoped: includesClusterScoped(spec.includeClusterResources, namespaces),
    selectors,
    selectsByLabel: selectors.some((s) => s !== ''),
    orderedResources: ordered,
    seen: new Set(),
    notTaken: new Set(),
    backedUp: [],
    namespacesWithItems: new Set(),
    results: emptyResults(),
    progress: { totalItems: 0, itemsBackedUp: 0 },
  };
}

/** Records an item-level problem in the results (by namespace) and returns the message. */
export function recordProblem(req: BackupRequest, kind: 'warnings' | 'errors', namespace: string, message: string): string {
  addResult(req.results, kind, namespace, message);
  return message;
}
