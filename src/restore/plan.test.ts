import { describe, expect, it } from 'vitest';
import { newBackup, newRestore, type RestoreSpec } from '../apis/v1/index.js';
import type { ArchiveObject } from '../archive/index.js';
import type { ApiResource } from '../kube/index.js';
import { buildPlan, itemFacts, RestoreRefusedError, type ArchivedItem, type RestorePlan } from './plan.js';
import { newRestoreRequest } from './request.js';

function res(group: string, version: string, resource: string, kind: string, namespaced: boolean): ApiResource {
  const gr = group === '' ? resource : `${resource}.${group}`;
  return { group, version, resource, kind, namespaced, verbs: ['create', 'get', 'list'], groupResource: gr, apiVersion: group === '' ? version : `${group}/${version}`, shortNames: [], singularName: kind.toLowerCase() };
}

const DISCOVERED: ApiResource[] = [
  res('', 'v1', 'namespaces', 'Namespace', false),
  res('', 'v1', 'configmaps', 'ConfigMap', true),
  res('', 'v1', 'pods', 'Pod', true),
  res('', 'v1', 'events', 'Event', true),
  res('', 'v1', 'nodes', 'Node', false),
  { ...res('', 'v1', 'persistentvolumes', 'PersistentVolume', false), shortNames: ['pv'] },
  res('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true),
  res('apps', 'v1', 'deployments', 'Deployment', true),
  res('apps', 'v1', 'replicasets', 'ReplicaSet', true),
  res('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  res('stowage.dev', 'v1', 'backups', 'Backup', true),
];

/** An index entry as the reader makes it: the plan sees only the identity and the picked facts. */
function item(groupResource: string, obj: ArchiveObject): ArchivedItem {
  const ns = obj.metadata.namespace;
  const it: ArchivedItem = {
    groupResource, name: obj.metadata.name, apiVersion: obj.apiVersion, kind: obj.kind,
    bytes: 0, offset: 0, crc32: 0, picked: itemFacts(obj, { groupResource }),
  };
  if (ns !== undefined) it.namespace = ns;
  return it;
}

const o = (apiVersion: string, kind: string, name: string, namespace?: string, extra: Record<string, unknown> = {}): ArchiveObject => ({
  apiVersion, kind, metadata: { name, ...(namespace !== undefined ? { namespace } : {}), ...((extra.metadata as object | undefined) ?? {}) }, ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'metadata')),
});

const CRD = o('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'widgets.example.com', undefined, {
  spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true }] },
});

const ITEMS: ArchivedItem[] = [
  item('namespaces', o('v1', 'Namespace', 'app', undefined, { metadata: { labels: { team: 'a' } } })),
  item('configmaps', o('v1', 'ConfigMap', 'cfg', 'app', { metadata: { labels: { tier: 'web' } } })),
  item('configmaps', o('v1', 'ConfigMap', 'cfg', 'other')),
  item('deployments.apps', o('apps/v1', 'Deployment', 'web', 'app')),
  item('replicasets.apps', o('apps/v1', 'ReplicaSet', 'web-1', 'app', { metadata: { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u', controller: true }] } })),
  item('pods', o('v1', 'Pod', 'web-1-a', 'app', { metadata: { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u2', controller: true }] } })),
  item('events', o('v1', 'Event', 'e1', 'app')),
  item('nodes', o('v1', 'Node', 'n1')),
  item('backups.stowage.dev', o('stowage.dev/v1', 'Backup', 'b0', 'app')),
  item('persistentvolumes', o('v1', 'PersistentVolume', 'pv1', undefined, { spec: { claimRef: { namespace: 'app', name: 'data' } } })),
  item('persistentvolumes', o('v1', 'PersistentVolume', 'pv-other', undefined, { spec: { claimRef: { namespace: 'other', name: 'data' } } })),
  item('persistentvolumeclaims', o('v1', 'PersistentVolumeClaim', 'data', 'app')),
  item('customresourcedefinitions.apiextensions.k8s.io', CRD),
  item('widgets.example.com', o('example.com/v1', 'Widget', 'w1', 'app')),
];

function plan(spec: RestoreSpec, items = ITEMS): RestorePlan {
  const req = newRestoreRequest(newRestore('r1', 'stowage', { backupName: 'b1', ...spec }), newBackup('b1', 'stowage'));
  return buildPlan(items, req, DISCOVERED);
}

const keys = (p: RestorePlan): string[] => [...p.items.values()].map((i) => `${i.groupResource} ${i.namespace}/${i.name}`).sort();

describe('buildPlan', () => {
  it('restores everything restorable, never nodes, events or stowage.dev kinds', () => {
    const p = plan({});
    expect(keys(p)).toEqual([
      'configmaps app/cfg', 'configmaps other/cfg', 'customresourcedefinitions.apiextensions.k8s.io /widgets.example.com',
      'deployments.apps app/web', 'namespaces /app', 'namespaces /other', 'persistentvolumeclaims app/data', 'persistentvolumes /pv-other',
      'persistentvolumes /pv1', 'pods app/web-1-a',
      'replicasets.apps app/web-1', 'widgets.example.com app/w1',
    ]);
    expect([...p.neverRestored.keys()].sort()).toEqual(['backups.stowage.dev', 'events', 'nodes']);
    // 'other' has no Namespace object in the backup: a bare one is created for its items.
    expect(p.namespaces.get('other')?.synthesized).toBe(true);
    expect(p.namespaces.get('app')?.synthesized).toBeUndefined();
  });

  it('links controller-owned items to their controller when it is in the restore, and skips none of them up front', () => {
    const p = plan({});
    const find = (gr: string, name: string) => [...p.items.values()].find((i) => i.groupResource === gr && i.name === name);
    // The executor decides once it knows the owner's outcome (ownership.ts): nothing is skipped by the plan.
    expect(find('replicasets.apps', 'web-1')?.owner).toMatchObject({ label: 'Deployment web', owner: find('deployments.apps', 'web') });
    expect(find('pods', 'web-1-a')?.owner).toMatchObject({ label: 'ReplicaSet web-1', owner: find('replicasets.apps', 'web-1') });
    expect(find('deployments.apps', 'web')?.owner).toBeUndefined();
    expect([...p.items.values()].filter((i) => i.skip !== undefined)).toEqual([]);
    // Without the Deployment in the restore, the ReplicaSet has no owner to wait for (it is restored orphaned); its pods still have it.
    const q = plan({ excludedResources: ['deployments.apps'] });
    expect([...q.items.values()].find((i) => i.name === 'web-1')?.owner).toBeUndefined();
    expect([...q.items.values()].find((i) => i.name === 'web-1-a')?.owner?.label).toBe('ReplicaSet web-1');
  });

  it('orders tiers by priority: CRDs, namespaces, PVs, configmaps, pods, replicasets, then the rest alphabetically', () => {
    expect(plan({}).tiers.map((t) => t.tier.groupResources.join())).toEqual([
      'customresourcedefinitions.apiextensions.k8s.io', 'namespaces', 'persistentvolumes', 'persistentvolumeclaims', 'configmaps', 'pods', 'replicasets.apps',
      'deployments.apps', 'widgets.example.com',
    ]);
  });

  it('filters by namespace and maps namespaces, creating the mapped Namespace from the backed-up one', () => {
    const p = plan({ includedNamespaces: ['app'], namespaceMapping: { app: 'app-copy' } });
    expect(keys(p)).toEqual([
      'configmaps app-copy/cfg', 'customresourcedefinitions.apiextensions.k8s.io /widgets.example.com', 'deployments.apps app-copy/web',
      'namespaces /app-copy', 'persistentvolumeclaims app-copy/data', 'persistentvolumes /pv1', 'pods app-copy/web-1-a', 'replicasets.apps app-copy/web-1',
      'widgets.example.com app-copy/w1',
    ]);
    // The CRD and the claim's PV come along although cluster-scoped resources are not included.
    expect(p.crds.get('widgets.example.com')?.name).toBe('widgets.example.com');
    expect(p.namespaces.get('app-copy')?.archived?.picked?.labels).toEqual({ team: 'a' });
    expect(p.namespaces.get('app-copy')?.sourceName).toBe('app');
  });

  it('leaves related cluster-scoped items out when their resource is excluded, or includeClusterResources is false', () => {
    const p = plan({ includedNamespaces: ['app'], excludedResources: ['customresourcedefinitions', 'pv'] });
    expect(p.crds.size).toBe(0);
    expect(keys(p)).toContain('widgets.example.com app/w1');
    expect(keys(p).filter((k) => k.startsWith('persistentvolumes '))).toEqual([]);
    const q = plan({ includeClusterResources: false });
    expect(q.crds.size).toBe(0);
    expect(keys(q).filter((k) => k.startsWith('persistentvolumes ') || k.startsWith('customresourcedefinitions'))).toEqual([]);
    expect(keys(q)).toContain('namespaces /app');
  });

  it('brings the cluster-scoped items restored items depend on, transitively, and no others', () => {
    const RBAC = 'rbac.authorization.k8s.io';
    const crb = (name: string, role: string, subjects: unknown[]) => o(`${RBAC}/v1`, 'ClusterRoleBinding', name, undefined, { roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: role }, subjects });
    const items = [
      ...ITEMS.filter((it) => it.name !== 'pv1'),
      item('serviceaccounts', o('v1', 'ServiceAccount', 'operator', 'app')),
      item('serviceaccounts', o('v1', 'ServiceAccount', 'operator', 'other')),
      item(`clusterrolebindings.${RBAC}`, crb('ops-admin', 'ops', [{ kind: 'ServiceAccount', name: 'operator', namespace: 'app' }])),
      item(`clusterrolebindings.${RBAC}`, crb('app-group', 'group-role', [{ kind: 'Group', name: 'system:serviceaccounts:app' }])),
      item(`clusterrolebindings.${RBAC}`, crb('other-admin', 'other-role', [{ kind: 'ServiceAccount', name: 'operator', namespace: 'other' }])),
      item(`clusterroles.${RBAC}`, o(`${RBAC}/v1`, 'ClusterRole', 'ops')),
      item(`clusterroles.${RBAC}`, o(`${RBAC}/v1`, 'ClusterRole', 'group-role')),
      item(`clusterroles.${RBAC}`, o(`${RBAC}/v1`, 'ClusterRole', 'view')),
      item(`clusterroles.${RBAC}`, o(`${RBAC}/v1`, 'ClusterRole', 'other-role')),
      item(`rolebindings.${RBAC}`, o(`${RBAC}/v1`, 'RoleBinding', 'viewers', 'app', { roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'view' } })),
      item('persistentvolumes', o('v1', 'PersistentVolume', 'pv1', undefined, { spec: { claimRef: { namespace: 'app', name: 'data' }, storageClassName: 'fast' } })),
      item('storageclasses.storage.k8s.io', o('storage.k8s.io/v1', 'StorageClass', 'fast')),
      item('storageclasses.storage.k8s.io', o('storage.k8s.io/v1', 'StorageClass', 'slow')),
      item('statefulsets.apps', o('apps/v1', 'StatefulSet', 'db', 'app', { spec: { template: { spec: {} }, volumeClaimTemplates: [{ metadata: { name: 'd' }, spec: { storageClassName: 'slow' } }] } })),
      item('cronjobs.batch', o('batch/v1beta1', 'CronJob', 'nightly', 'app', { spec: { jobTemplate: { spec: { template: { spec: { priorityClassName: 'high', runtimeClassName: 'gvisor' } } } } } })),
      item('priorityclasses.scheduling.k8s.io', o('scheduling.k8s.io/v1', 'PriorityClass', 'high')),
      item('priorityclasses.scheduling.k8s.io', o('scheduling.k8s.io/v1', 'PriorityClass', 'low')),
      item('runtimeclasses.node.k8s.io', o('node.k8s.io/v1', 'RuntimeClass', 'gvisor')),
    ];
    const cluster = (p: RestorePlan) => keys(p).filter((k) => k.includes(' /') && !k.startsWith('namespaces '));
    expect(cluster(plan({ includedNamespaces: ['app'] }, items))).toEqual([
      `clusterrolebindings.${RBAC} /app-group`, `clusterrolebindings.${RBAC} /ops-admin`,
      `clusterroles.${RBAC} /group-role`, `clusterroles.${RBAC} /ops`, `clusterroles.${RBAC} /view`,
      'customresourcedefinitions.apiextensions.k8s.io /widgets.example.com',
      'persistentvolumes /pv1', 'priorityclasses.scheduling.k8s.io /high', 'runtimeclasses.node.k8s.io /gvisor',
      'storageclasses.storage.k8s.io /fast', 'storageclasses.storage.k8s.io /slow',
    ]);
    // An excluded resource stays out, and so does what only it needed; includeClusterResources: false takes none.
    expect(cluster(plan({ includedNamespaces: ['app'], excludedResources: ['clusterrolebindings', 'persistentvolumes'] }, items))).toEqual([
      `clusterroles.${RBAC} /view`, 'customresourcedefinitions.apiextensions.k8s.io /widgets.example.com',
      'priorityclasses.scheduling.k8s.io /high', 'runtimeclasses.node.k8s.io /gvisor', 'storageclasses.storage.k8s.io /slow',
    ]);
    expect(cluster(plan({ includedNamespaces: ['app'], includeClusterResources: false }, items))).toEqual([]);
  });

  it('selects by label, still creating the namespaces the selected items live in', () => {
    expect(keys(plan({ labelSelector: { matchLabels: { tier: 'web' } } }))).toEqual(['configmaps app/cfg', 'namespaces /app']);
    expect(keys(plan({ orLabelSelectors: [{ matchLabels: { tier: 'web' } }, { matchLabels: { team: 'a' } }] }))).toEqual(['configmaps app/cfg', 'namespaces /app']);
  });

  it('filters by resource, by kind name too', () => {
    expect(keys(plan({ includedResources: ['Widget'] }))).toEqual([
      'customresourcedefinitions.apiextensions.k8s.io /widgets.example.com', 'namespaces /app', 'widgets.example.com app/w1',
    ]);
  });

  it('refuses an item whose stored scope contradicts the cluster or its CRD, before anything is created', () => {
    const bad = [...ITEMS, item('configmaps', o('v1', 'ConfigMap', 'c-cluster'))];
    expect(() => plan({}, bad)).toThrow(RestoreRefusedError);
    expect(() => plan({}, bad)).toThrow('entry resources/configmaps/cluster/c-cluster.json: configmaps is namespaced but the item is stored as cluster-scoped; refused');
    const badCr = [...ITEMS, item('widgets.example.com', o('example.com/v1', 'Widget', 'w-cluster'))];
    expect(() => plan({}, badCr)).toThrow('widgets.example.com is namespaced but the item is stored as cluster-scoped');
  });

  it('refuses a mapping that restores two items onto one object, but merges two namespaces onto one', () => {
    expect(() => plan({ namespaceMapping: { other: 'app' } })).toThrow(
      'namespaceMapping restores configmaps app/cfg and other/cfg onto the same object app/cfg; refused',
    );
    const p = plan({ namespaceMapping: { other: 'merged', app: 'merged' }, includedResources: ['namespaces', 'deployments.apps'] });
    expect(keys(p)).toEqual(['deployments.apps merged/web', 'namespaces /merged']);
  });

  it('plans additional items on demand, by backup or target namespace, never for never-restored kinds', () => {
    const p = plan({ includedResources: ['deployments.apps'], namespaceMapping: { other: 'moved' } });
    expect(p.planAdditional('configmaps', 'moved', 'cfg')?.sourceNamespace).toBe('other');
    expect(p.planAdditional('configmaps', 'app', 'cfg')?.namespace).toBe('app');
    expect(p.planAdditional('events', 'app', 'e1')).toBeUndefined();
    expect(p.planAdditional('configmaps', 'app', 'missing')).toBeUndefined();
  });
});

describe('itemFacts', () => {
  it('keeps only what planning needs, and nothing at all for a plain item', () => {
    expect(itemFacts(o('v1', 'ConfigMap', 'c', 'app', { data: { big: 'x'.repeat(1000) } }), { groupResource: 'configmaps' })).toBeUndefined();
    expect(itemFacts(o('v1', 'ConfigMap', 'c', 'app', { metadata: { labels: {}, annotations: { a: 'b' } } }), { groupResource: 'configmaps' })).toBeUndefined();
    const rs = o('apps/v1', 'ReplicaSet', 'web-1', 'app', {
      metadata: { labels: { app: 'web' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u', controller: true }] },
      spec: { replicas: 3 },
    });
    expect(itemFacts(rs, { groupResource: 'replicasets.apps' })).toEqual({
      labels: { app: 'web' }, controllers: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }],
    });
    const pv = o('v1', 'PersistentVolume', 'pv1', undefined, { spec: { claimRef: { namespace: 'app', name: 'data', uid: 'x' }, capacity: { storage: '1Gi' } } });
    expect(itemFacts(pv, { groupResource: 'persistentvolumes' })).toEqual({ claim: 'app/data' });
    expect(itemFacts(CRD, { groupResource: 'customresourcedefinitions.apiextensions.k8s.io' })).toEqual({ serves: { groupResource: 'widgets.example.com', namespaced: true } });
  });

  it('leaves the objects out of the plan: planned items point at their index entry, whose facts are all the plan read', () => {
    const p = plan({});
    for (const it of p.items.values()) {
      expect(it).not.toHaveProperty('original');
      if (it.synthesized === true) expect(it.archived).toBeUndefined();
      else expect(ITEMS).toContain(it.archived);
    }
  });
});

describe('buildPlan: item selection (includedNames, excludedNames, the scope-specific resource filters)', () => {
  it('an unscoped name narrows every resource; the Namespace object comes with its items', () => {
    expect(keys(plan({ includedNamespaces: ['app'], includedNames: ['web*'] }))).toEqual([
      'deployments.apps app/web', 'namespaces /app', 'pods app/web-1-a', 'replicasets.apps app/web-1',
    ]);
  });

  it('excludedNames keeps a related item out (the claim\'s PV); includedNames does not', () => {
    const base = keys(plan({ includedNamespaces: ['app'], includedNames: ['persistentvolumeclaims/data'], includedResources: ['persistentvolumeclaims'] }));
    expect(base).toEqual(['namespaces /app', 'persistentvolumeclaims app/data', 'persistentvolumes /pv1']);
    expect(keys(plan({ includedNamespaces: ['app'], excludedNames: ['persistentvolumes/regex:^pv1$'], includedResources: ['persistentvolumeclaims'] })))
      .toEqual(['namespaces /app', 'persistentvolumeclaims app/data']);
  });

  it('takes cluster-scoped resources per includedClusterScopedResources, namespaced ones per includedNamespaceScopedResources', () => {
    expect(keys(plan({ includedNamespaceScopedResources: ['configmaps'], includedClusterScopedResources: ['pv'] }))).toEqual([
      'configmaps app/cfg', 'configmaps other/cfg', 'namespaces /app', 'namespaces /other', 'persistentvolumes /pv-other', 'persistentvolumes /pv1',
    ]);
  });

  it('excludedClusterScopedResources keeps related cluster-scoped items out too', () => {
    expect(keys(plan({ includedNamespaces: ['app'], includedNamespaceScopedResources: ['persistentvolumeclaims'] })))
      .toEqual(['namespaces /app', 'persistentvolumeclaims app/data', 'persistentvolumes /pv1']);
    expect(keys(plan({ includedNamespaces: ['app'], includedNamespaceScopedResources: ['persistentvolumeclaims'], excludedClusterScopedResources: ['persistentvolumes'] })))
      .toEqual(['namespaces /app', 'persistentvolumeclaims app/data']);
  });
});
