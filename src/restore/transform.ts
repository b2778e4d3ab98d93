// Transformations every restored item goes through before the restore item actions: cluster-owned
// metadata is stripped, status dropped unless restoreStatus selects the resource, namespaces
// mapped (in the item and in the references that name a namespace), and the restore labels added.
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME, labelValue } from '../apis/v1/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { moveSubject, subjectAccounts } from '../kube/references.js';
import { arrayAt, cloneObject, isRecord, recordAt } from './objects.js';

/** Metadata the apiserver owns (or that would tie the copy to the old object); removed from every item. */
export const STRIPPED_METADATA = [
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'generation',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'ownerReferences',
  'managedFields',
] as const;

/** Set on Namespaces by the apiserver (1.21+) to the namespace's own name. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export function stripMetadata(obj: KubeObject): void {
  for (const k of STRIPPED_METADATA) delete obj.metadata[k];
}

export interface TransformOptions {
  /** Keep `status` (restoreStatus selects the resource). */
  keepStatus: boolean;
  mapNamespace: (namespace: string) => string;
  backupName: string;
  restoreName: string;
}

/**
 * A copy of an item from the backup, ready for the restore item actions. `groupResource` picks the
 * reference rewrites (RoleBinding and ClusterRoleBinding subjects, a PV's claimRef, a Namespace's name).
 */
export function prepareItem(groupResource: string, original: KubeObject, opts: TransformOptions): KubeObject {
  const obj = cloneObject(original);
  stripMetadata(obj);
  if (!opts.keepStatus) delete obj.status;
  mapNamespaces(groupResource, obj, opts.mapNamespace);
  addRestoreLabels(obj, opts.backupName, opts.restoreName);
  return obj;
}

export function addRestoreLabels(obj: KubeObject, backupName: string, restoreName: string): void {
  obj.metadata.labels = { ...obj.metadata.labels, [LABEL_BACKUP_NAME]: labelValue(backupName), [LABEL_RESTORE_NAME]: labelValue(restoreName) };
}

/**
 * A binding subject that names a service account of a mapped namespace names the restored account
 * instead (as Velero does), so a restored workload keeps the permissions its bindings gave it: as a
 * ServiceAccount subject, as its user name or through its namespace's group (kube/references.ts
 * reads all three). The cluster-wide group is left alone.
 */
function mapSubject(s: Record<string, unknown>, map: (ns: string) => string): void {
  const accounts = subjectAccounts(s);
  if (accounts === undefined) return;
  const to = map(accounts.namespace);
  if (to !== accounts.namespace) moveSubject(s, accounts, to);
}

/**
 * Applies the namespace mapping to the item's own namespace and to the references that name a
 * namespace: service-account subjects of RoleBindings and ClusterRoleBindings (mapSubject), a PersistentVolume's
 * claimRef, and a Namespace object's own name (and its kubernetes.io/metadata.name label).
 */
export function mapNamespaces(groupResource: string, obj: KubeObject, map: (ns: string) => string): void {
  const md = obj.metadata;
  if (typeof md.namespace === 'string' && md.namespace !== '') md.namespace = map(md.namespace);
  switch (groupResource) {
    case 'namespaces': {
      const to = map(md.name);
      if (to !== md.name) {
        md.name = to;
        if (md.labels !== undefined && Object.hasOwn(md.labels, NAMESPACE_NAME_LABEL)) md.labels[NAMESPACE_NAME_LABEL] = to;
      }
      break;
    }
    case 'rolebindings.rbac.authorization.k8s.io':
    case 'clusterrolebindings.rbac.authorization.k8s.io':
      for (const s of arrayAt(obj, 'subjects') ?? []) if (isRecord(s)) mapSubject(s, map);
      break;
    case 'persistentvolumes': {
      const claim = recordAt(recordAt(obj, 'spec') ?? {}, 'claimRef');
      if (claim !== undefined && typeof claim.namespace === 'string' && claim.namespace !== '') claim.namespace = map(claim.namespace);
      break;
    }
    default:
      break;
  }
}
