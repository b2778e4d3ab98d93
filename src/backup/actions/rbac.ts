// Built-in actions on RBAC: a ServiceAccount brings the ClusterRoleBindings that bind it, and a
// RoleBinding or ClusterRoleBinding the ClusterRole it grants, so a restored workload keeps its
// permissions. The bindings are listed once per backup (clusterRoleBindingIndex), not per account.
import { clusterDependency, dependencyAction, GR, itemName, kindName, type DependencyAction } from './dependency.js';
import { field, stringField } from './selector.js';

const SA_USER_PREFIX = 'system:serviceaccount:';
const SA_GROUP_PREFIX = 'system:serviceaccounts:';

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

/**
 * Indexes listed ClusterRoleBindings by the service accounts they bind. The cluster-wide group
 * `system:serviceaccounts` is left out: it binds every account in the cluster, so it is cluster
 * configuration rather than something a namespace depends on.
 */
export function clusterRoleBindingIndex(bindings: readonly unknown[]): ClusterRoleBindingIndex {
  const byAccount = new Map<string, BindingOf[]>();
  const byNamespaceGroup = new Map<string, BindingOf[]>();
  const add = (m: Map<string, BindingOf[]>, k: string, b: BindingOf): void => {
    const list = m.get(k) ?? [];
    if (!list.some((x) => x.binding === b.binding)) list.push(b);
    m.set(k, list);
  };
  for (const crb of bindings) {
    const binding = stringField(crb, 'metadata', 'name');
    const subjects = field(crb, 'subjects');
    if (binding === undefined || !Array.isArray(subjects)) continue;
    for (const s of subjects) {
      const kind = stringField(s, 'kind');
      const name = stringField(s, 'name');
      if (name === undefined) continue;
      if (kind === 'ServiceAccount') {
        const ns = stringField(s, 'namespace');
        if (ns !== undefined) add(byAccount, `${ns}/${name}`, { binding });
      } else if (kind === 'User' && name.startsWith(SA_USER_PREFIX)) {
        const [ns, sa, ...rest] = name.slice(SA_USER_PREFIX.length).split(':');
        if (ns !== undefined && ns !== '' && sa !== undefined && sa !== '' && rest.length === 0) add(byAccount, `${ns}/${sa}`, { binding, via: `user "${name}"` });
      } else if (kind === 'Group' && name.startsWith(SA_GROUP_PREFIX) && name.length > SA_GROUP_PREFIX.length) {
        add(byNamespaceGroup, name.slice(SA_GROUP_PREFIX.length), { binding, via: `group "${name}"` });
      }
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
  const role = stringField(item, 'roleRef', 'name');
  if (stringField(item, 'roleRef', 'kind') !== 'ClusterRole' || role === undefined) return [];
  return [clusterDependency(GR.clusterRoles, role, `ClusterRole "${role}" is the role of ${itemName(item)}`)];
});
