// Built-in actions on RBAC: a ServiceAccount brings the ClusterRoleBindings that bind it, and a
// RoleBinding or ClusterRoleBinding the ClusterRole it grants, so a restored workload keeps its
// permissions. The bindings are listed once per backup (clusterRoleBindingIndex), not per account.
import { boundServiceAccounts, clusterRoleOf, GR, stringField } from '../../kube/references.js';
import { clusterDependency, dependencyAction, itemName, kindName, type DependencyAction } from './dependency.js';

/** A ClusterRoleBinding that binds a service account, and how its subject names it. */
export interface BindingOf {
  binding: string;
  /** How the subject names the account, when not as a ServiceAccount subject: `group "system:serviceaccounts:shop"`. */
  via?: string;
}

export interface ClusterRoleBindingIndex {
  /** `ns/name` of a ServiceAccount -> bindings naming it (as a ServiceAccount subject or its user name). */
  readonly byAccount: ReadonlyMap<string, readonly BindingOf[]>;
  /** Namespace -> bindings of the group of all its service accounts (`system:serviceaccounts:<ns>`). */
  readonly byNamespaceGroup: ReadonlyMap<string, readonly BindingOf[]>;
}

/** Indexes listed ClusterRoleBindings by the service accounts they bind (see boundServiceAccounts). */
export function clusterRoleBindingIndex(bindings: readonly unknown[]): ClusterRoleBindingIndex {
  const byAccount = new Map<string, BindingOf[]>();
  const byNamespaceGroup = new Map<string, BindingOf[]>();
  for (const crb of bindings) {
    const binding = stringField(crb, 'metadata', 'name');
    if (binding === undefined) continue;
    for (const { namespace, name, via } of boundServiceAccounts(crb)) {
      const [m, k] = name === undefined ? [byNamespaceGroup, namespace] : [byAccount, `${namespace}/${name}`];
      const list = m.get(k) ?? [];
      if (!list.some((x) => x.binding === binding)) list.push(via === undefined ? { binding } : { binding, via });
      m.set(k, list);
    }
  }
  return { byAccount, byNamespaceGroup };
}

export function serviceAccountBindingsAction(index: ClusterRoleBindingIndex): DependencyAction {
  return dependencyAction([GR.serviceAccounts], (item) => {
    const ns = item.metadata.namespace ?? '';
    const sa = kindName('ServiceAccount', ns, item.metadata.name);
    const found = [...(index.byAccount.get(`${ns}/${item.metadata.name}`) ?? []), ...(index.byNamespaceGroup.get(ns) ?? [])];
    return found.map(({ binding, via }) =>
      clusterDependency(GR.clusterRoleBindings, binding, via === undefined ? `ClusterRoleBinding "${binding}" binds ${sa}` : `ClusterRoleBinding "${binding}" binds ${sa} as ${via}`));
  });
}

export const bindingClusterRoleAction = dependencyAction([GR.roleBindings, GR.clusterRoleBindings], (item) => {
  const role = clusterRoleOf(item);
  return role === undefined ? [] : [clusterDependency(GR.clusterRoles, role, `ClusterRole "${role}" is the role of ${itemName(item)}`)];
});
