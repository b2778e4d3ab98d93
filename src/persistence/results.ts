// Warnings and errors of a run, split by cluster and by namespace (the <b>-results.gz file), and the
// resource list (groupResource -> ["ns/name" | "name"]).

export interface ScopedMessages {
  cluster: string[];
  namespaces: Record<string, string[]>;
}

export interface RunResults {
  warnings: ScopedMessages;
  errors: ScopedMessages;
  /** Backups only: the completeness record, one entry per resource in scope, sorted by groupResource. */
  resources?: ResourceRecord[];
  /** Backups only: cluster-scoped items taken because a namespaced item in scope depends on them. */
  pulledIn?: PulledInRecord[];
  /** Backups only: every CSI snapshot the backup kept, one per volume. */
  volumeSnapshots?: VolumeSnapshotRecord[];
}

/** One volume's CSI snapshot in a backup (describe lists them). */
export interface VolumeSnapshotRecord {
  namespace: string;
  persistentVolumeClaim: string;
  persistentVolume: string;
  /** The VolumeSnapshot the backup created (deleted once its content was kept). */
  volumeSnapshot: string;
  volumeSnapshotContent: string;
  snapshotHandle: string;
  driver: string;
  volumeSnapshotClass: string;
  /** The content's restoreSize: bytes, or a quantity; absent when the driver gave none. */
  restoreSize?: string;
  /** When the snapshot was cut, RFC 3339. */
  creationTime?: string;
}

/** What a backup did with one resource in its scope. */
export interface ResourceRecord {
  /** `cronjobs.batch`, `configmaps`. */
  groupResource: string;
  /** The apiVersion its items were listed and stored at (`batch/v1beta1`). */
  apiVersion: string;
  /** Items the LISTs returned that passed the namespace filter. */
  listed: number;
  /** Items written to the tarball. */
  written: number;
  /** Other versions every item was also stored at (spec.includeAllGroupVersions). */
  otherVersions?: string[];
  /** Why some or all of its items could not be listed or written. */
  error?: string;
}

/** One cluster-scoped item pulled in by a dependency of a namespaced item. */
export interface PulledInRecord {
  groupResource: string;
  name: string;
  /** The item that needs it, as `groupResource "ns/name"`. */
  requiredBy: string;
  /** Why, in words: `ClusterRoleBinding "x" binds ServiceAccount "ns/sa"`. */
  reason: string;
}

/** groupResource (`deployments.apps`) -> sorted item names, `ns/name` or `name` for cluster-scoped. */
export type ResourceList = Record<string, string[]>;

export function emptyResults(): RunResults {
  return { warnings: { cluster: [], namespaces: {} }, errors: { cluster: [], namespaces: {} } };
}

/** Records a message against a namespace, or the cluster when namespace is undefined or ''. */
export function addResult(results: RunResults, kind: 'warnings' | 'errors', namespace: string | undefined, message: string): void {
  const scoped = results[kind];
  if (namespace === undefined || namespace === '') {
    scoped.cluster.push(message);
    return;
  }
  (scoped.namespaces[namespace] ??= []).push(message);
}

export function countResults(results: RunResults): { warnings: number; errors: number } {
  const count = (s: ScopedMessages): number => s.cluster.length + Object.values(s.namespaces).reduce((n, l) => n + l.length, 0);
  return { warnings: count(results.warnings), errors: count(results.errors) };
}

/** Builds a resource list from item identities, with names sorted for stable output. */
export function resourceListOf(items: Iterable<{ groupResource: string; namespace?: string; name: string }>): ResourceList {
  const out: ResourceList = {};
  for (const it of items) (out[it.groupResource] ??= []).push(it.namespace ? `${it.namespace}/${it.name}` : it.name);
  const sorted: ResourceList = {};
  for (const gr of Object.keys(out).sort()) sorted[gr] = (out[gr] ?? []).sort();
  return sorted;
}
