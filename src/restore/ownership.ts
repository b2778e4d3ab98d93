// Objects made by a controller are left to that controller when the controller is in the cluster.
//
// Why: a restored Deployment makes its own ReplicaSet, which makes its own Pods (likewise Job ->
// Pods, CronJob -> Jobs, StatefulSet/DaemonSet -> Pods and ControllerRevisions, Service ->
// EndpointSlices). Restoring the owned copies as well would leave orphans next to the controller's
// new objects (ownerReferences are stripped, because they name the old owner's uid), or duplicates.
// So an item whose ownerReferences hold a `controller: true` reference to an object that is also in
// this restore waits for that owner's outcome (restore.ts), and is skipped only when the owner is
// really in the cluster's hands: created by this restore ("owned by Deployment web, which this
// restore recreates"), already there ("which already exists in the cluster"), or itself left to a
// controller that is. When the owner fails or is skipped for another reason, or is not in the
// restore at all (filtered out, absent from the backup), the item is restored, orphaned.
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
export function ownerIndex<T extends OwnerCandidate>(objects: Iterable<T>, kinds?: ReadonlySet<string>): Map<string, T> {
  const out = new Map<string, T>();
  for (const o of objects) {
    const group = groupOf(o.apiVersion);
    if (kinds === undefined || kinds.has(kindKey(group, o.kind))) out.set(ownerKey(group, o.kind, o.namespace, o.name), o);
  }
  return out;
}

/** A controller owner found in the restore, and how reasons name it (`Deployment web`). */
export interface RestoredOwner<T> {
  owner: T;
  label: string;
}

/**
 * The controller owner (from `refs`, see controllerRefs) of an object in `namespace` that is in
 * `index`, or undefined. Owners are looked up in the object's own namespace, and among
 * cluster-scoped objects.
 */
export function restoredController<T>(refs: readonly ControllerRef[] | undefined, namespace: string, index: ReadonlyMap<string, T>): RestoredOwner<T> | undefined {
  for (const { apiVersion, kind, name } of refs ?? []) {
    const g = groupOf(apiVersion);
    const owner = index.get(ownerKey(g, kind, namespace, name)) ?? index.get(ownerKey(g, kind, '', name));
    if (owner !== undefined) return { owner, label: `${kind} ${name}` };
  }
  return undefined;
}

/** What became of an item's controller owner in this restore, as far as the owned item cares. */
export type OwnerFate =
  /** Created by this restore, or left to its own controller, which this restore recreates. */
  | 'recreated'
  /** Exists in the cluster already (matching the backup or not, updated or not). */
  | 'existing'
  /** Left to its own controller, which exists in the cluster already (a ReplicaSet of a live Deployment). */
  | 'controller-existing'
  /** Failed, skipped for another reason, or in a cycle: the owned item is restored, orphaned. */
  | 'absent';

/**
 * The owner's fate from its outcome (undefined when waiting for it would deadlock), the fate it was
 * left to when it is itself owned (`handed`), and whether its object was found in the cluster.
 */
export function ownerFate(outcome: { action: string } | undefined, handed: OwnerFate | undefined, existsLive: boolean): OwnerFate {
  if (outcome === undefined) return 'absent';
  if (handed !== undefined) return handed === 'recreated' ? 'recreated' : 'controller-existing';
  if (outcome.action === 'created') return 'recreated';
  return existsLive ? 'existing' : 'absent';
}

/** The reason an owned item is skipped, given its owner's fate; undefined when it is restored. */
export function ownedSkipReason(label: string, fate: OwnerFate, dryRun: boolean): string | undefined {
  switch (fate) {
    case 'recreated':
      return dryRun
        ? `owned by ${label}, which this restore would recreate; its controller would make a new one`
        : `owned by ${label}, which this restore recreates; its controller makes a new one`;
    case 'existing':
      return `owned by ${label}, which is already in the cluster; left to its controller`;
    case 'controller-existing':
      return `owned by ${label}, whose own controller is already in the cluster; left to them`;
    case 'absent':
      return undefined;
  }
}
