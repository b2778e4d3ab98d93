// What a Kubernetes object refers to, read from its JSON: the pod spec of a workload, a volume's
// StorageClass, a binding's ClusterRole and the service accounts it binds. Shared by the backup's
// dependency actions and the restore's choice of related cluster-scoped items, so both follow the
// same relations.

/** obj[k1][k2]... when every step is an object, else undefined. */
export function field(obj: unknown, ...path: string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/** A non-empty string at the path, else undefined. */
export function stringField(obj: unknown, ...path: string[]): string | undefined {
  const v = field(obj, ...path);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export const GR = {
  serviceAccounts: 'serviceaccounts',
  persistentVolumeClaims: 'persistentvolumeclaims',
  persistentVolumes: 'persistentvolumes',
  storageClasses: 'storageclasses.storage.k8s.io',
  priorityClasses: 'priorityclasses.scheduling.k8s.io',
  runtimeClasses: 'runtimeclasses.node.k8s.io',
  clusterRoles: 'clusterroles.rbac.authorization.k8s.io',
  clusterRoleBindings: 'clusterrolebindings.rbac.authorization.k8s.io',
  roleBindings: 'rolebindings.rbac.authorization.k8s.io',
  statefulSets: 'statefulsets.apps',
  customResourceDefinitions: 'customresourcedefinitions.apiextensions.k8s.io',
} as const;

/** Resources that hold a pod spec, by group-resource (any served version: cronjobs at batch/v1beta1 or v1). */
export const POD_SPEC_RESOURCES: readonly string[] = [
  'pods', 'podtemplates', 'replicationcontrollers', 'deployments.apps', GR.statefulSets, 'daemonsets.apps',
  'replicasets.apps', 'jobs.batch', 'cronjobs.batch',
];

/** The pod spec: `spec` of a Pod, `template.spec` of a PodTemplate, the job template's of a CronJob, else `spec.template.spec`. */
export function podSpecOf(obj: unknown): unknown {
  switch (field(obj, 'kind')) {
    case 'Pod':
      return field(obj, 'spec');
    case 'PodTemplate':
      return field(obj, 'template', 'spec');
    case 'CronJob':
      return field(obj, 'spec', 'jobTemplate', 'spec', 'template', 'spec');
    default:
      return field(obj, 'spec', 'template', 'spec');
  }
}

/** The PriorityClass and RuntimeClass a pod spec names. */
export function podClassesOf(obj: unknown): { priorityClass?: string; runtimeClass?: string } {
  const spec = podSpecOf(obj);
  const priorityClass = stringField(spec, 'priorityClassName');
  const runtimeClass = stringField(spec, 'runtimeClassName');
  return { ...(priorityClass !== undefined ? { priorityClass } : {}), ...(runtimeClass !== undefined ? { runtimeClass } : {}) };
}

/** The beta annotation older manifests still use in place of storageClassName. */
export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

/** A claim's or volume's class: spec.storageClassName, else the beta annotation; undefined for '' (no class). */
export function storageClassOf(obj: unknown): string | undefined {
  return stringField(obj, 'spec', 'storageClassName') ?? stringField(obj, 'metadata', 'annotations', BETA_STORAGE_CLASS_ANNOTATION);
}

/** A StatefulSet's volume claim templates that name a class. */
export function claimTemplateClasses(sts: unknown): { template: string; storageClass: string }[] {
  const templates = field(sts, 'spec', 'volumeClaimTemplates');
  const out: { template: string; storageClass: string }[] = [];
  for (const t of Array.isArray(templates) ? templates : []) {
    const storageClass = storageClassOf(t);
    if (storageClass !== undefined) out.push({ template: stringField(t, 'metadata', 'name') ?? '', storageClass });
  }
  return out;
}

/** The ClusterRole a RoleBinding or ClusterRoleBinding grants; undefined when it grants a Role. */
export function clusterRoleOf(binding: unknown): string | undefined {
  return stringField(binding, 'roleRef', 'kind') === 'ClusterRole' ? stringField(binding, 'roleRef', 'name') : undefined;
}

/** Service accounts a binding's subject stands for. */
export interface BoundAccounts {
  namespace: string;
  /** The account; undefined: every account of the namespace (the group `system:serviceaccounts:<ns>`). */
  name?: string;
  /** How the subject names them, when not as a ServiceAccount subject: `group "system:serviceaccounts:shop"`. */
  via?: string;
}

const SA_USER_PREFIX = 'system:serviceaccount:';
const SA_GROUP_PREFIX = 'system:serviceaccounts:';

/** The service accounts one binding subject stands for; undefined when it names none. */
export function subjectAccounts(s: unknown): BoundAccounts | undefined {
  const kind = stringField(s, 'kind');
  const name = stringField(s, 'name');
  if (name === undefined) return undefined;
  if (kind === 'ServiceAccount') {
    const namespace = stringField(s, 'namespace');
    return namespace === undefined || namespace === '' ? undefined : { namespace, name };
  }
  if (kind === 'User' && name.startsWith(SA_USER_PREFIX)) {
    const [namespace, sa, ...rest] = name.slice(SA_USER_PREFIX.length).split(':');
    return namespace !== undefined && namespace !== '' && sa !== undefined && sa !== '' && rest.length === 0 ? { namespace, name: sa, via: `user "${name}"` } : undefined;
  }
  if (kind === 'Group' && name.startsWith(SA_GROUP_PREFIX) && name.length > SA_GROUP_PREFIX.length) {
    return { namespace: name.slice(SA_GROUP_PREFIX.length), via: `group "${name}"` };
  }
  return undefined;
}

/** Rewrites a subject that subjectAccounts() read as `accounts` to name the same accounts in namespace `to`, in the same spelling. */
export function moveSubject(s: Record<string, unknown>, accounts: BoundAccounts, to: string): void {
  if (s.kind === 'ServiceAccount') s.namespace = to;
  else if (s.kind === 'User') s.name = `${SA_USER_PREFIX}${to}:${accounts.name ?? ''}`;
  else s.name = `${SA_GROUP_PREFIX}${to}`;
}

/**
 * The service accounts a binding binds: ServiceAccount subjects, their user names
 * (`system:serviceaccount:<ns>:<name>`) and namespace groups (`system:serviceaccounts:<ns>`). The
 * cluster-wide group `system:serviceaccounts` is left out: it binds every account in the cluster, so
 * it is cluster configuration rather than something a namespace depends on.
 */
export function boundServiceAccounts(binding: unknown): BoundAccounts[] {
  const subjects = field(binding, 'subjects');
  return (Array.isArray(subjects) ? subjects : []).map(subjectAccounts).filter((a): a is BoundAccounts => a !== undefined);
}

/**
 * The cluster-scoped objects an object of `groupResource` needs, by group-resource and name: a pod
 * spec's PriorityClass and RuntimeClass, a StatefulSet's claim templates' StorageClasses, a claim's
 * volume (or class, unbound), a volume's class, a binding's ClusterRole. (A custom resource's CRD
 * and the bindings of a ServiceAccount are found the other way round, from the CRD and the binding.)
 */
export function clusterReferences(groupResource: string, obj: unknown): { groupResource: string; name: string }[] {
  const out: { groupResource: string; name: string }[] = [];
  if (POD_SPEC_RESOURCES.includes(groupResource)) {
    const { priorityClass, runtimeClass } = podClassesOf(obj);
    if (priorityClass !== undefined) out.push({ groupResource: GR.priorityClasses, name: priorityClass });
    if (runtimeClass !== undefined) out.push({ groupResource: GR.runtimeClasses, name: runtimeClass });
  }
  if (groupResource === GR.statefulSets) for (const t of claimTemplateClasses(obj)) out.push({ groupResource: GR.storageClasses, name: t.storageClass });
  if (groupResource === GR.persistentVolumeClaims) {
    const pv = stringField(obj, 'spec', 'volumeName');
    const sc = storageClassOf(obj);
    if (pv !== undefined) out.push({ groupResource: GR.persistentVolumes, name: pv });
    else if (sc !== undefined) out.push({ groupResource: GR.storageClasses, name: sc });
  }
  if (groupResource === GR.persistentVolumes) {
    const sc = storageClassOf(obj);
    if (sc !== undefined) out.push({ groupResource: GR.storageClasses, name: sc });
  }
  if (groupResource === GR.roleBindings || groupResource === GR.clusterRoleBindings) {
    const role = clusterRoleOf(obj);
    if (role !== undefined) out.push({ groupResource: GR.clusterRoles, name: role });
  }
  return out;
}
