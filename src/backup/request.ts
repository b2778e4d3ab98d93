// BackupRequest: everything one backup run decides up front (resolved filters) and accumulates
// (items seen, the resource list, results, counters).
import type { Backup } from '../apis/v1/index.js';
import { addResult, emptyResults, type ResourceList, type ResourceRecord, type RunResults } from '../persistence/results.js';
import { servedVersions, type ApiResource } from '../kube/index.js';
import { compileSelection, type Selection } from '../selection/compile.js';
import type { NamespaceFilter, ResourceFilter } from '../selection/filters.js';
import { labelSelectorToString } from '../selection/labels.js';
import type { NameFilter } from '../selection/names.js';

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
  /** includedResources/excludedResources, or Velero's scope-specific lists (selection/scopedResources.ts). */
  readonly resources: ResourceFilter;
  /**
   * The spec's includeClusterResources (null/undefined: "related only" unless all namespaces);
   * with the scope-specific lists, false when excludedClusterScopedResources is "*", else undefined.
   */
  readonly includeClusterResources: boolean | null | undefined;
  /** List cluster-scoped resources in full (those the resource filter takes: see listsInFull). */
  readonly listClusterScoped: boolean;
  /** includedNames/excludedNames (selection/names.ts). */
  readonly names: NameFilter;
  /** Label selectors in string form, one LIST each (orLabelSelectors); [''] when there is none. */
  readonly selectors: readonly string[];
  /** Whether the spec selects by label at all. */
  readonly selectsByLabel: boolean;
  /** groupResource or plural -> the `ns/name` (or `name`) to back up first, in order. */
  readonly orderedResources: ReadonlyMap<string, readonly string[]>;
  /** Items already handled (backed up, or being backed up), and those written: the resource list. */
  readonly seen: ItemTable;
  /** Items actions named that the filters leave out or that do not exist, so each is logged once. */
  readonly notTaken: Set<string>;
  /** Namespaces that had at least one item backed up. */
  readonly namespacesWithItems: Set<string>;
  readonly results: RunResults;
  readonly progress: BackupProgress;
  /** The completeness record being built, by groupResource (results.resources once the run ends). */
  readonly records: Map<string, ResourceRecord>;
  /**
   * spec.includeAllGroupVersions only: groupResource -> the `ns/name` (or `name`) of every item
   * written, so its other versions can be stored for exactly those items once the lists are done.
   */
  readonly writtenNames: Map<string, Set<string>> | undefined;
  /** Hooks run so far and those that failed (status.hookStatus). */
  readonly hookStatus: { hooksAttempted: number; hooksFailed: number };
}

export function itemKey(ref: ItemRef): string {
  // join() makes one flat string; a template literal keeps a rope of its parts, ~2x the memory in `seen`.
  return [ref.groupResource, ref.namespace, ref.name].join('/');
}

/** An item's resource-list entry: `ns/name`, or `name` for a cluster-scoped item. */
function entryOf(ref: ItemRef): string {
  // join() makes one flat string; a template literal keeps a rope of its parts, ~2x the memory in a Set.
  return ref.namespace === '' ? ref.name : [ref.namespace, ref.name].join('/');
}

/**
 * The items a backup has handled and those it wrote, by resource, as resource-list entries: one
 * string per item serves the check for repeats, the list and the includeAllGroupVersions names,
 * instead of a key, an ItemRef holding the name, and the list's own string at the end (~190 against
 * ~90 bytes an item, 100k items in a large backup).
 */
export class ItemTable {
  private readonly seen = new Map<string, Set<string>>();
  private readonly written = new Map<string, string[]>();

  has(ref: ItemRef): boolean {
    return this.seen.get(ref.groupResource)?.has(entryOf(ref)) === true;
  }

  /** Marks the item handled; returns its entry, or undefined when it was handled before. */
  add(ref: ItemRef): string | undefined {
    let entries = this.seen.get(ref.groupResource);
    if (entries === undefined) this.seen.set(ref.groupResource, (entries = new Set()));
    const entry = entryOf(ref);
    if (entries.has(entry)) return undefined;
    entries.add(entry);
    return entry;
  }

  /** Records an item written (its entry from add()). */
  wrote(groupResource: string, entry: string): void {
    const list = this.written.get(groupResource);
    if (list === undefined) this.written.set(groupResource, [entry]);
    else list.push(entry);
  }

  /** What was written, resources and names sorted (resourceListOf's order); the lists are sorted in place. */
  resourceList(): ResourceList {
    const out: ResourceList = {};
    for (const gr of [...this.written.keys()].sort()) out[gr] = (this.written.get(gr) ?? []).sort();
    return out;
  }
}

/** `selection` is the spec's, compiled once per run (the controller's scope check uses the same one). */
export function newBackupRequest(backup: Backup, selection: Selection = compileSelection(backup.spec)): BackupRequest {
  const spec = backup.spec;
  const labels = selection.labelSelectors;
  const selectors = labels.length === 0 ? [''] : [...new Set(labels.map(labelSelectorToString))];
  const ordered = new Map<string, string[]>();
  for (const [res, list] of Object.entries(spec.orderedResources ?? {})) {
    ordered.set(res.toLowerCase(), list.split(',').map((s) => s.trim()).filter((s) => s !== ''));
  }
  const scoped = selection.resources.style === 'scoped';
  return {
    backup,
    namespaces: selection.namespaces,
    resources: selection.resources,
    includeClusterResources: scoped ? (selection.relatedClusterScoped ? undefined : false) : spec.includeClusterResources,
    listClusterScoped: selection.clusterScopedInFull,
    names: selection.names,
    selectors,
    selectsByLabel: labels.length > 0,
    orderedResources: ordered,
    seen: new ItemTable(),
    notTaken: new Set(),
    namespacesWithItems: new Set(),
    results: emptyResults(),
    progress: { totalItems: 0, itemsBackedUp: 0 },
    records: new Map(),
    writtenNames: spec.includeAllGroupVersions === true ? new Map() : undefined,
    hookStatus: { hooksAttempted: 0, hooksFailed: 0 },
  };
}

/** Whether the backup LISTs the cluster-scoped resource in full (so an item of it is not "pulled in"). */
export function listsInFull(req: BackupRequest, res: ApiResource): boolean {
  return !res.namespaced && req.listClusterScoped && req.resources.shouldInclude(res);
}

/** Records an item-level problem in the results (by namespace) and returns the message. */
export function recordProblem(req: BackupRequest, kind: 'warnings' | 'errors', namespace: string, message: string): string {
  addResult(req.results, kind, namespace, message);
  return message;
}

/** The completeness record of a resource, made on first use at the version its items are read at. */
export function recordOf(req: BackupRequest, res: { groupResource: string; apiVersion: string }): ResourceRecord {
  let r = req.records.get(res.groupResource);
  if (r === undefined) {
    r = { groupResource: res.groupResource, apiVersion: res.apiVersion, listed: 0, written: 0 };
    req.records.set(res.groupResource, r);
  }
  return r;
}

/** Adds why a resource's items were (partly) not backed up to its record; the first few reasons are kept whole. */
export function recordResourceError(req: BackupRequest, res: { groupResource: string; apiVersion: string }, why: string): void {
  const r = recordOf(req, res);
  if (r.error === undefined) r.error = why;
  else if (!r.error.includes(why)) r.error = r.error.split('; ').length < 3 ? `${r.error}; ${why}` : r.error.endsWith('(and more)') ? r.error : `${r.error} (and more)`;
}

/** The versions besides `res.version` that items of `res` are also stored at (none unless includeAllGroupVersions). */
export function otherVersionsOf(req: BackupRequest, res: ApiResource): readonly string[] {
  if (req.writtenNames === undefined) return [];
  return servedVersions(res).filter((v) => v !== res.version);
}

export function writtenNamesOf(req: BackupRequest, res: ApiResource): Set<string> {
  const all = req.writtenNames as Map<string, Set<string>>;
  let names = all.get(res.groupResource);
  if (names === undefined) all.set(res.groupResource, (names = new Set()));
  return names;
}
