// Built-in actions on pods: back up the claims a pod mounts and the service account it runs as, so a
// backup selected by label still holds what the pod needs to start again.
import type { BackupItemAction, ResourceIdentifier } from '../../plugin/api/index.js';
import { field, selector, stringField } from './selector.js';

export const podVolumeClaimsAction: BackupItemAction = {
  appliesTo: async () => selector({ includedResources: ['pods'] }),
  async execute({ item }) {
    const ns = item.metadata.namespace ?? '';
    const volumes = field(item, 'spec', 'volumes');
    const claims = new Set<string>();
    for (const v of Array.isArray(volumes) ? volumes : []) {
      const claim = stringField(v, 'persistentVolumeClaim', 'claimName');
      if (claim !== undefined) claims.add(claim);
    }
    const additionalItems: ResourceIdentifier[] = [...claims].map((name) => ({ groupResource: 'persistentvolumeclaims', namespace: ns, name }));
    return { item, additionalItems };
  },
};

export const podServiceAccountAction: BackupItemAction = {
  appliesTo: async () => selector({ includedResources: ['pods'] }),
  async execute({ item }) {
    // serviceAccount is the deprecated spelling older clients still set.
    const sa = stringField(item, 'spec', 'serviceAccountName') ?? stringField(item, 'spec', 'serviceAccount');
    const additionalItems: ResourceIdentifier[] =
      sa === undefined ? [] : [{ groupResource: 'serviceaccounts', namespace: item.metadata.namespace ?? '', name: sa }];
    return { item, additionalItems };
  },
};
