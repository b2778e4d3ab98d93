// Objects made by a controller are left to that controller when their owner is restored too.
//
// Why: a restored Deployment makes its own ReplicaSet, which makes its own Pods (likewise Job ->
// Pods, CronJob -> Jobs, StatefulSet/DaemonSet -> Pods and ControllerRevisions, Service ->
// EndpointSlices). Restoring the owned copies as well would leave orphans next to the controller's
// new objects (ownerReferences are stripped, because they name the old owner's uid), or duplicates.
// So an item whose ownerReferences hold a `controller: true` reference to an object that is itself
// in this restore is skipped, and the log says which owner will recreate it. An item whose
// controller is not in the restore (filtered out, or absent from the backup) is restored, orphaned.
import type { KubeObject } from '../plugin/api/index.js';
import { groupOf, isRecord } from './objects.js';

/** A `controller: true` owner reference, as much of it as the check needs. */
export interface ControllerRef {
  apiVersion: string;
  kind: string;
  name: string;
}

/** An object in the restore, as the owner index needs it ('' namespace for cluster-scoped objects). */
export interface OwnerCandidate {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

function ownerKey(group: string, kind: string, namespace: string, name: string): string {
  // join() makes one flat string, not a rope of seven pieces.
  return [group, kind, namespace, name].join('\u0000');
}

function kindKey(group: string, kind: string): string {
  return [group, kind].join('\u0000');
}

/** The API group and kind of every owner `refs` name: the only objects worth indexing. */
export function ownerKinds(refs: Iterable<readonly ControllerRef[]>): Set<string> {
  const out = new Set<string>();
  for (const list of refs) for (const r of list) out.add(kindKey(groupOf(r.apiVersion), r.kind));
  return out;
}

/** The object's `controller: true` owner references, or undefined when it has none (the usual case). */
export function controllerRefs(obj: KubeObject): ControllerRef[] | undefined {
  const refs = obj.metadata.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  const out: ControllerRef[] = [];
  for (const ref of refs) {
    if (!isRecord(ref) || ref.controller !== true) continue;
    const { apiVersion, kind, name } = ref;
    if (typeof apiVersion === 'string' && typeof kind === 'string' && typeof name === 'string') out.push({ apiVersion, kind, name });
  }
  return out.length > 0 ? out : undefined;
}

/**
 * Index of the objects in a restore, by API group, kind, namespace and name; with `kinds` (see
 * ownerKinds), only objects of those kinds: most objects own nothing.
 */
export function ownerIndex(objects: Iterable<OwnerCandidate>, kinds?: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const o of objects) {
    const group = groupOf(o.apiVersion);
    if (kinds === undefined || kinds.has(kindKey(group, o.kind))) out.add(ownerKey(group, o.kind, o.namespace, o.name));
  }
  return out;
}

/**
 * The controller owner (from `refs`, see controllerRefs) of an object in `namespace` that is in
 * `index`, as `Kind name`, or undefined. Owners are looked up in the object's own namespace, and
 * among cluster-scoped objects.
 */
export function restoredController(refs: readonly ControllerRef[] | undefined, namespace: string, index: ReadonlySet<string>): string | undefined {
  for (const { apiVersion, kind, name } of refs ?? []) {
    const g = groupOf(apiVersion);
    if (index.has(ownerKey(g, kind, namespace, name)) || index.has(ownerKey(g, kind, '', name))) return `${kind} ${name}`;
  }
  return undefined;
}
