// Built-in action: a custom resource brings its CustomResourceDefinition, so a namespace backup can
// be restored into a cluster that lacks the CRD.
import type { BackupItemAction } from '../../plugin/api/index.js';
import { groupOfApiVersion } from '../../archive/index.js';
import { selector } from './selector.js';

export const CRD_GROUP_RESOURCE = 'customresourcedefinitions.apiextensions.k8s.io';

/** `crdByGroupKind` maps `<group>/<Kind>` to the CRD's name (`widgets.example.com`). */
export function customResourceDefinitionAction(crdByGroupKind: ReadonlyMap<string, string>): BackupItemAction {
  return {
    appliesTo: async () => selector({}),
    async execute({ item }) {
      const crd = crdByGroupKind.get(`${groupOfApiVersion(item.apiVersion)}/${item.kind}`);
      return { item, additionalItems: crd === undefined ? [] : [{ groupResource: CRD_GROUP_RESOURCE, namespace: '', name: crd }] };
    },
  };
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
