// PersistentVolumes and PersistentVolumeClaims: binding state that names the old objects or the old
// node. A PV's claimRef keeps the claim's namespace and name (so the restored PVC binds to it) but
// not its uid and resourceVersion; a PVC loses the annotations the binder and scheduler set.
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { recordAt } from '../objects.js';
import { selectorFor } from './selector.js';

/** Annotations set by the PV controller and the scheduler on claims; the target cluster sets them again. */
export const PVC_BINDING_ANNOTATIONS = [
  'volume.kubernetes.io/selected-node',
  'pv.kubernetes.io/bind-completed',
  'pv.kubernetes.io/bound-by-controller',
];

export function restorePersistentVolume(item: KubeObject): KubeObject {
  const claimRef = recordAt(recordAt(item, 'spec') ?? {}, 'claimRef');
  if (claimRef !== undefined) {
    delete claimRef.uid;
    delete claimRef.resourceVersion;
  }
  return item;
}

export function restorePersistentVolumeClaim(item: KubeObject): KubeObject {
  const ann = item.metadata.annotations;
  if (ann !== undefined) {
    for (const k of PVC_BINDING_ANNOTATIONS) delete ann[k];
    if (Object.keys(ann).length === 0) delete item.metadata.annotations;
  }
  return item;
}

export const persistentVolumeAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['persistentvolumes'])),
  execute: ({ item }) => Promise.resolve({ item: restorePersistentVolume(item), additionalItems: [], skipRestore: false }),
};

export const persistentVolumeClaimAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['persistentvolumeclaims'])),
  execute: ({ item }) => Promise.resolve({ item: restorePersistentVolumeClaim(item), additionalItems: [], skipRestore: false }),
};
