// The built-in mapping actions (storage class, image, node labels), configured the Velero way by a
// labelled ConfigMap in the server's namespace (mappingConfig.ts) and built per run from it. They
// are restore item actions like the others; what each changed is kept with the item it returned
// (changesOf), so the restore records it in the item's outcome.
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { POD_SPEC_RESOURCES } from '../../kube/references.js';
import { mapImages, type ImageMode, type ImageRule } from './images.js';
import { mapNodeLabels, type NodeLabelRule } from './nodeLabels.js';
import { selectorFor } from './selector.js';
import { mapStorageClasses, STORAGE_CLASS_RESOURCES } from './storageClass.js';

export interface MappingConfig {
  storageClasses?: { source: string; map: ReadonlyMap<string, string> };
  images?: { source: string; mode: ImageMode; rules: readonly ImageRule[] };
  nodeLabels?: { source: string; rules: readonly NodeLabelRule[] };
}

const changes = new WeakMap<KubeObject, string[]>();

/** What the mapping actions changed in this object (the item an action returned), then forgets it. */
export function takeChanges(item: KubeObject): string[] {
  const c = changes.get(item) ?? [];
  changes.delete(item);
  return c;
}

/** Records what an action changed in the item it returns, so the restore keeps it in the item's outcome. */
export function noted(item: KubeObject, source: string, notes: string[]): KubeObject {
  if (notes.length > 0) changes.set(item, [...(changes.get(item) ?? []), ...notes.map((n) => `${n} (${source})`)]);
  return item;
}

/** The group-resource of an item, from its apiVersion and kind, for the resources the mappings touch. */
const KIND_RESOURCES: Record<string, string> = {
  PersistentVolumeClaim: 'persistentvolumeclaims', PersistentVolume: 'persistentvolumes', StatefulSet: 'statefulsets.apps',
};

function action(resources: readonly string[], apply: (item: KubeObject) => KubeObject): RestoreItemAction {
  return {
    appliesTo: () => Promise.resolve(selectorFor([...resources])),
    execute: ({ item }) => Promise.resolve({ item: apply(item), additionalItems: [], skipRestore: false }),
  };
}

/** The mapping actions the configuration asks for, in a fixed order: storage class, images, node labels. */
export function mappingActions(config: MappingConfig): { name: string; action: RestoreItemAction }[] {
  const out: { name: string; action: RestoreItemAction }[] = [];
  const sc = config.storageClasses;
  if (sc !== undefined) {
    out.push({
      name: 'stowage.dev/change-storage-class',
      action: action(STORAGE_CLASS_RESOURCES, (item) => noted(item, sc.source, mapStorageClasses(KIND_RESOURCES[item.kind] ?? '', item, sc.map))),
    });
  }
  const img = config.images;
  if (img !== undefined) {
    out.push({ name: 'stowage.dev/change-image-name', action: action(POD_SPEC_RESOURCES, (item) => noted(item, img.source, mapImages(item, img.rules, img.mode))) });
  }
  const nl = config.nodeLabels;
  if (nl !== undefined) {
    out.push({ name: 'stowage.dev/change-node-selector', action: action(POD_SPEC_RESOURCES, (item) => noted(item, nl.source, mapNodeLabels(item, nl.rules))) });
  }
  return out;
}
