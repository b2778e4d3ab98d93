// Built-in backup item actions, run before plugin actions.
import { customResourceDefinitionAction } from './crd.js';
import type { DependencyAction } from './dependency.js';
import { podServiceAccountAction, podVolumeClaimsAction } from './pod.js';
import { persistentVolumeStorageClassAction, pvcVolumeAction } from './pvc.js';
import { bindingClusterRoleAction, serviceAccountBindingsAction, type ClusterRoleBindingIndex } from './rbac.js';
import type { NamedBackupItemAction } from './resolve.js';
import { podClassesAction, statefulSetStorageClassesAction } from './template.js';

export { CRD_GROUP_RESOURCE, crdTable, customResourceDefinitionAction } from './crd.js';
export { GR, itemName, kindName, type Dependency, type DependencyAction } from './dependency.js';
export { podServiceAccountAction, podVolumeClaimsAction } from './pod.js';
export { persistentVolumeStorageClassAction, pvcVolumeAction } from './pvc.js';
export { bindingClusterRoleAction, clusterRoleBindingIndex, serviceAccountBindingsAction, type ClusterRoleBindingIndex } from './rbac.js';
export { podClassesAction, statefulSetStorageClassesAction } from './template.js';
export { resolveActions, type NamedBackupItemAction, type ResolvedBackupItemAction } from './resolve.js';

export interface BuiltinTables {
  /** `<group>/<Kind>` -> CRD name, from listing the cluster's CRDs. */
  crdByGroupKind: ReadonlyMap<string, string>;
  /**
   * ClusterRoleBindings by the service accounts they bind; only listed when the backup takes
   * cluster-scoped items as dependencies (otherwise it lists the bindings in full, or not at all).
   */
  clusterRoleBindings?: ClusterRoleBindingIndex;
}

/** A built-in action, with its reasons for the pulled-in record. */
function builtin(name: string, action: DependencyAction): NamedBackupItemAction {
  return {
    name,
    action,
    explain: (item, id) => action.dependencies(item).find((d) => d.id.groupResource === id.groupResource && d.id.namespace === id.namespace && d.id.name === id.name),
  };
}

/** The built-in actions. */
export function builtinActions(tables: BuiltinTables): NamedBackupItemAction[] {
  const out = [
    builtin('stowage.dev/pod-volume-claims', podVolumeClaimsAction),
    builtin('stowage.dev/pod-service-account', podServiceAccountAction),
    builtin('stowage.dev/pod-classes', podClassesAction),
    builtin('stowage.dev/statefulset-storage-classes', statefulSetStorageClassesAction),
    builtin('stowage.dev/pvc-volume', pvcVolumeAction),
    builtin('stowage.dev/pv-storage-class', persistentVolumeStorageClassAction),
    builtin('stowage.dev/binding-cluster-role', bindingClusterRoleAction),
    builtin('stowage.dev/custom-resource-definition', customResourceDefinitionAction(tables.crdByGroupKind)),
  ];
  if (tables.clusterRoleBindings !== undefined) {
    out.push(builtin('stowage.dev/service-account-cluster-role-bindings', serviceAccountBindingsAction(tables.clusterRoleBindings)));
  }
  return out;
}
