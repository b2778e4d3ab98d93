// Built-in actions on pods and pod templates: the claims a pod mounts and the service account it
// runs as, so a backup selected by label still holds what the pod needs to start again.
import { field, GR, podSpecOf, POD_SPEC_RESOURCES, stringField } from '../../kube/references.js';
import { dependencyAction, itemName, kindName, type Dependency } from './dependency.js';

export const podVolumeClaimsAction = dependencyAction(['pods'], (item) => {
  const ns = item.metadata.namespace ?? '';
  const volumes = field(item, 'spec', 'volumes');
  const out: Dependency[] = [];
  for (const v of Array.isArray(volumes) ? volumes : []) {
    const claim = stringField(v, 'persistentVolumeClaim', 'claimName');
    if (claim !== undefined) {
      out.push({ id: { groupResource: GR.persistentVolumeClaims, namespace: ns, name: claim }, reason: `${kindName('PersistentVolumeClaim', ns, claim)} is mounted by ${itemName(item)}` });
    }
  }
  return out;
});

export const podServiceAccountAction = dependencyAction(POD_SPEC_RESOURCES, (item) => {
  const spec = podSpecOf(item);
  // serviceAccount is the deprecated spelling older clients still set.
  const sa = stringField(spec, 'serviceAccountName') ?? stringField(spec, 'serviceAccount');
  if (sa === undefined) return [];
  const ns = item.metadata.namespace ?? '';
  return [{ id: { groupResource: GR.serviceAccounts, namespace: ns, name: sa }, reason: `${kindName('ServiceAccount', ns, sa)} is the service account of ${itemName(item)}` }];
});
