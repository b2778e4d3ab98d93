// Built-in action: a bound PersistentVolumeClaim brings its PersistentVolume (cluster-scoped, so it is
// backed up as a related item even when cluster resources are not listed in full).
import type { BackupItemAction } from '../../plugin/api/index.js';
import { selector, stringField } from './selector.js';

export const pvcVolumeAction: BackupItemAction = {
  appliesTo: async () => selector({ includedResources: ['persistentvolumeclaims'] }),
  async execute({ item }) {
    const pv = stringField(item, 'spec', 'volumeName');
    return { item, additionalItems: pv === undefined ? [] : [{ groupResource: 'persistentvolumes', namespace: '', name: pv }] };
  },
};
