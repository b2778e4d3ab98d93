// Built-in action: a custom resource brings its CustomResourceDefinition, so a namespace backup can
// be restored into a cluster that lacks the CRD.
import { groupOfApiVersion } from '../../archive/index.js';
import { GR } from '../../kube/references.js';
import { clusterDependency, dependencyAction, itemName, type DependencyAction } from './dependency.js';

export const CRD_GROUP_RESOURCE = GR.customResourceDefinitions;

/** `crdByGroupKind` maps `<group>/<Kind>` to the CRD's name (`widgets.example.com`). */
export function customResourceDefinitionAction(crdByGroupKind: ReadonlyMap<string, string>): DependencyAction {
  return dependencyAction([], (item) => {
    const crd = crdByGroupKind.get(`${groupOfApiVersion(item.apiVersion)}/${item.kind}`);
    return crd === undefined ? [] : [clusterDependency(CRD_GROUP_RESOURCE, crd, `CustomResourceDefinition "${crd}" defines ${itemName(item)}`)];
  });
}

/** Builds the `<group>/<Kind>` -> CRD name table from listed CRDs. */
export function crdTable(crds: readonly unknown[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of crds) {
    const o = c as { metadata?: { name?: unknown }; spec?: { group?: unknown; names?: { kind?: unknown } } };
    const name = o.metadata?.name;
    const group = o.spec?.group;
    const kind = o.spec?.names?.kind;
    if (typeof name === 'string' && typeof group === 'string' && typeof kind === 'string') out.set(`${group}/${kind}`, name);
  }
  return out;
}
