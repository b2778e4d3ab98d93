// Built-in backup item actions, run before plugin actions.
import { customResourceDefinitionAction } from './crd.js';
import { podServiceAccountAction, podVolumeClaimsAction } from './pod.js';
import { pvcVolumeAction } from './pvc.js';
import type { NamedBackupItemAction } from './resolve.js';

export { CRD_GROUP_RESOURCE, crdTable, customResourceDefinitionAction } from './crd.js';
export { podServiceAccountAction, podVolumeClaimsAction } from './pod.js';
export { pvcVolumeAction } from './pvc.js';
export { resolveActions, type NamedBackupItemAction, type ResolvedBackupItemAction } from './resolve.js';

/** The built-in actions; `crdByGroupKind` comes from listing the cluster's CRDs. */
export function builtinActions(crdByGroupKind: ReadonlyMap<string, string>): NamedBackupItemAction[] {
  return [
    { name: 'stowage.dev/pod-volume-claims', action: podVolumeClaimsAction },
    { name: 'stowage.dev/pod-service-account', action: podServiceAccountAction },
    { name: 'stowage.dev/pvc-volume', action: pvcVolumeAction },
    { name: 'stowage.dev/custom-resource-definition', action: customResourceDefinitionAction(crdByGroupKind) },
  ];
}
