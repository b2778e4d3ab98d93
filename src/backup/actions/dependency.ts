// Built-in actions are written as dependency rules: what an item needs, each with the reason in
// words. The action's additional items are the rule's dependencies; the reasons go to the backup's
// pulled-in record and log.
import type { BackupItemAction, KubeObject, ResourceIdentifier } from '../../plugin/api/index.js';
import { selector } from './selector.js';

export { GR } from '../../kube/references.js';

/** One item another item needs. */
export interface Dependency {
  id: ResourceIdentifier;
  /** Why, naming both: `StorageClass "fast" is the class of PersistentVolume "pv-1"`. */
  reason: string;
  /** Its absence is common and harmless (a static PV's class name with no StorageClass object): not a warning. */
  mayBeAbsent?: boolean;
}

/** A built-in action whose additional items are the dependencies of its items. */
export interface DependencyAction extends BackupItemAction {
  /** The item's dependencies, each once, in the order the action names them. */
  dependencies(item: KubeObject): Dependency[];
}

/** `resources` in group-resource form, matched whatever version serves them. */
export function dependencyAction(resources: readonly string[], rule: (item: KubeObject) => Dependency[]): DependencyAction {
  const dependencies = (item: KubeObject): Dependency[] => {
    const all = rule(item);
    // Most items name none or one (this runs on every item for the CRD action): no set for them.
    if (all.length < 2) return all;
    const seen = new Set<string>();
    return all.filter((d) => {
      const k = [d.id.groupResource, d.id.namespace, d.id.name].join('/');
      return seen.has(k) ? false : (seen.add(k), true);
    });
  };
  return {
    appliesTo: async () => selector({ includedResources: [...resources] }),
    async execute({ item }) {
      return { item, additionalItems: dependencies(item).map((d) => d.id) };
    },
    dependencies,
  };
}

/** `Kind "ns/name"`, or `Kind "name"` for a cluster-scoped object. */
export function kindName(kind: string, namespace: string | undefined, name: string): string {
  return namespace === undefined || namespace === '' ? `${kind} "${name}"` : `${kind} "${namespace}/${name}"`;
}

/** The item as `Kind "ns/name"`. */
export function itemName(item: KubeObject): string {
  return kindName(item.kind, item.metadata.namespace, item.metadata.name);
}

/** A cluster-scoped dependency. */
export function clusterDependency(groupResource: string, name: string, reason: string, mayBeAbsent = false): Dependency {
  return mayBeAbsent ? { id: { groupResource, namespace: '', name }, reason, mayBeAbsent } : { id: { groupResource, namespace: '', name }, reason };
}
