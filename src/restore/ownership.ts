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

function ownerKey(group: string, kind: string, namespace: string, name: string): string {
  return `${group}\u0000${kind}\u0000${namespace}\u0000${name}`;
}

/** Index of the objects in a restore, by API group, kind, namespace ('' if cluster-scoped) and name. */
export function ownerIndex(objects: Iterable<KubeObject>): Set<string> {
  const out = new Set<string>();
  for (const o of objects) out.add(ownerKey(groupOf(o.apiVersion), o.kind, o.metadata.namespace ?? '', o.metadata.name));
  return out;
}

/**
 * The controller owner of `obj` that is in `index`, as `Kind name`, or undefined. Owners are looked
 * up in the object's own namespace, and among cluster-scoped objects.
 */
export function restoredController(obj: KubeObject, index: ReadonlySet<string>): string | undefined {
  const refs = obj.metadata.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  const ns = obj.metadata.namespace ?? '';
  for (const ref of refs) {
    if (!isRecord(ref) || ref.controller !== true) continue;
    const { apiVersion, kind, name } = ref;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string') continue;
    const g = groupOf(apiVersion);
    if (index.has(ownerKey(g, kind, ns, name)) || index.has(ownerKey(g, kind, '', name))) return `${kind} ${name}`;
  }
  return undefined;
}
