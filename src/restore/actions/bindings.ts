// RoleBindings and ClusterRoleBindings under a namespaceMapping: a subject naming a service account
// of a mapped namespace names the restored account instead (as Velero does), so the restored
// workload keeps the permissions its ClusterRoleBinding gave it. The account's user name
// (`system:serviceaccount:<ns>:<name>`) and namespace group (`system:serviceaccounts:<ns>`) follow too.
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { arrayAt, isRecord, recordAt } from '../objects.js';
import { selectorFor } from './selector.js';

const SA_USER_PREFIX = 'system:serviceaccount:';
const SA_GROUP_PREFIX = 'system:serviceaccounts:';

export function restoreBindingSubjects(item: KubeObject, mapping: ReadonlyMap<string, string>): KubeObject {
  if (mapping.size === 0) return item;
  for (const s of arrayAt(item, 'subjects') ?? []) {
    if (!isRecord(s) || typeof s.name !== 'string') continue;
    if (s.kind === 'ServiceAccount' && typeof s.namespace === 'string') {
      s.namespace = mapping.get(s.namespace) ?? s.namespace;
    } else if (s.kind === 'User' && s.name.startsWith(SA_USER_PREFIX)) {
      const [ns, ...rest] = s.name.slice(SA_USER_PREFIX.length).split(':');
      const to = ns === undefined ? undefined : mapping.get(ns);
      if (to !== undefined && rest.length === 1) s.name = `${SA_USER_PREFIX}${to}:${rest.join(':')}`;
    } else if (s.kind === 'Group' && s.name.startsWith(SA_GROUP_PREFIX)) {
      const to = mapping.get(s.name.slice(SA_GROUP_PREFIX.length));
      if (to !== undefined) s.name = `${SA_GROUP_PREFIX}${to}`;
    }
  }
  return item;
}

function mappingOf(restore: KubeObject): Map<string, string> {
  const m = recordAt(recordAt(restore, 'spec') ?? {}, 'namespaceMapping') ?? {};
  return new Map(Object.entries(m).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

export const bindingSubjectsAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['rolebindings.rbac.authorization.k8s.io', 'clusterrolebindings.rbac.authorization.k8s.io'])),
  execute: ({ item, restore }) => Promise.resolve({ item: restoreBindingSubjects(item, mappingOf(restore)), additionalItems: [], skipRestore: false }),
};
