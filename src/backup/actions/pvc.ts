// Built-in actions on volumes: a bound PersistentVolumeClaim brings its PersistentVolume, and a
// volume (or a claim not bound yet) its StorageClass. Both are cluster-scoped, so they are backed
// up as related items even when cluster resources are not listed in full.
import { GR, storageClassOf, stringField } from '../../kube/references.js';
import { clusterDependency, dependencyAction, itemName } from './dependency.js';

export const pvcVolumeAction = dependencyAction([GR.persistentVolumeClaims], (item) => {
  const pv = stringField(item, 'spec', 'volumeName');
  if (pv !== undefined) return [clusterDependency(GR.persistentVolumes, pv, `PersistentVolume "${pv}" is bound to ${itemName(item)}`)];
  // Bound, the claim's class is the volume's, which the volume brings.
  const sc = storageClassOf(item);
  return sc === undefined ? [] : [clusterDependency(GR.storageClasses, sc, `StorageClass "${sc}" is the class of ${itemName(item)}`, true)];
});

export const persistentVolumeStorageClassAction = dependencyAction([GR.persistentVolumes], (item) => {
  const sc = storageClassOf(item);
  // Static volumes often name a class only to match claims, with no StorageClass object.
  return sc === undefined ? [] : [clusterDependency(GR.storageClasses, sc, `StorageClass "${sc}" is the class of ${itemName(item)}`, true)];
});
