import { describe, expect, it } from 'vitest';
import type { ApiResource } from '../../kube/index.js';
import type { KubeObject } from '../../plugin/api/index.js';
import { builtinActions, clusterRoleBindingIndex, GR } from './index.js';
import { podServiceAccountAction } from './pod.js';
import { persistentVolumeStorageClassAction, pvcVolumeAction } from './pvc.js';
import { bindingClusterRoleAction, serviceAccountBindingsAction } from './rbac.js';
import { resolveActions } from './resolve.js';
import { podSpecOf } from '../../kube/references.js';
import { podClassesAction, statefulSetStorageClassesAction } from './template.js';

const backup: KubeObject = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b' } };
const ids = async (a: { execute: (i: { item: KubeObject; backup: KubeObject }) => Promise<{ additionalItems: unknown[] }> }, item: KubeObject) =>
  (await a.execute({ item, backup })).additionalItems;
const cluster = (groupResource: string, name: string) => ({ groupResource, namespace: '', name });

const podSpec = { priorityClassName: 'high', runtimeClassName: 'gvisor', serviceAccountName: 'operator', containers: [] };
const workloads: KubeObject[] = [
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'shop' }, spec: podSpec },
  { apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'pt', namespace: 'shop' }, template: { spec: podSpec } },
  { apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'rc', namespace: 'shop' }, spec: { template: { spec: podSpec } } },
  { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' }, spec: { template: { spec: podSpec } } },
  { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: 'shop' }, spec: { template: { spec: podSpec } } },
  { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'ds', namespace: 'shop' }, spec: { template: { spec: podSpec } } },
  { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs', namespace: 'shop' }, spec: { template: { spec: podSpec } } },
  { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j', namespace: 'shop' }, spec: { template: { spec: podSpec } } },
  { apiVersion: 'batch/v1beta1', kind: 'CronJob', metadata: { name: 'cj', namespace: 'shop' }, spec: { jobTemplate: { spec: { template: { spec: podSpec } } } } },
  { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cj1', namespace: 'shop' }, spec: { jobTemplate: { spec: { template: { spec: podSpec } } } } },
];

describe('pod template actions', () => {
  it('finds the pod spec of every workload kind, cronjobs at v1beta1 and v1 alike', () => {
    for (const w of workloads) expect(podSpecOf(w), w.kind).toBe(podSpec);
  });

  it('names the PriorityClass and RuntimeClass of each, with the reason', async () => {
    for (const w of workloads) {
      expect(await ids(podClassesAction, w)).toEqual([cluster(GR.priorityClasses, 'high'), cluster(GR.runtimeClasses, 'gvisor')]);
    }
    const web = workloads[3];
    if (web === undefined) throw new Error('no deployment');
    expect(podClassesAction.dependencies(web).map((d) => d.reason)).toEqual([
      'PriorityClass "high" is named by Deployment "shop/web"',
      'RuntimeClass "gvisor" is named by Deployment "shop/web"',
    ]);
    expect(await ids(podClassesAction, { ...web, spec: { template: { spec: { containers: [] } } } })).toEqual([]);
    expect(await ids(podClassesAction, { ...web, spec: { template: { spec: { priorityClassName: '' } } } })).toEqual([]);
    expect(await ids(podClassesAction, { ...web, spec: 'nonsense' })).toEqual([]);
  });

  it("names each workload's service account in its namespace", async () => {
    for (const w of workloads) expect(await ids(podServiceAccountAction, w)).toEqual([{ groupResource: 'serviceaccounts', namespace: 'shop', name: 'operator' }]);
    const cj = workloads[8];
    if (cj === undefined) throw new Error('no cronjob');
    expect(podServiceAccountAction.dependencies(cj)[0]?.reason).toBe('ServiceAccount "shop/operator" is the service account of CronJob "shop/cj"');
  });

  it("names a StatefulSet's volume claim templates' StorageClasses, once each, absent allowed", async () => {
    const sts: KubeObject = {
      apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: 'shop' },
      spec: {
        volumeClaimTemplates: [
          { metadata: { name: 'data' }, spec: { storageClassName: 'fast' } },
          { metadata: { name: 'wal' }, spec: { storageClassName: 'fast' } },
          { metadata: { name: 'old', annotations: { 'volume.beta.kubernetes.io/storage-class': 'slow' } }, spec: {} },
          { metadata: { name: 'none' }, spec: { storageClassName: '' } },
        ],
      },
    };
    expect(await ids(statefulSetStorageClassesAction, sts)).toEqual([cluster(GR.storageClasses, 'fast'), cluster(GR.storageClasses, 'slow')]);
    const [fast] = statefulSetStorageClassesAction.dependencies(sts);
    expect(fast).toEqual({ id: cluster(GR.storageClasses, 'fast'), reason: 'StorageClass "fast" is the class of volume claim template "data" of StatefulSet "shop/db"', mayBeAbsent: true });
  });
});

describe('volume actions', () => {
  it('a bound claim names its volume; an unbound one its class', async () => {
    const pvc: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: 'shop' }, spec: { volumeName: 'pv-1', storageClassName: 'fast' } };
    expect(pvcVolumeAction.dependencies(pvc)).toEqual([{ id: cluster('persistentvolumes', 'pv-1'), reason: 'PersistentVolume "pv-1" is bound to PersistentVolumeClaim "shop/data"' }]);
    const unbound = { ...pvc, spec: { storageClassName: 'fast' } };
    expect(pvcVolumeAction.dependencies(unbound)).toEqual([
      { id: cluster(GR.storageClasses, 'fast'), reason: 'StorageClass "fast" is the class of PersistentVolumeClaim "shop/data"', mayBeAbsent: true },
    ]);
    expect(await ids(pvcVolumeAction, { ...pvc, spec: { storageClassName: '' } })).toEqual([]);
  });

  it('a volume names its class (spec or beta annotation)', async () => {
    const pv: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-1' }, spec: { storageClassName: 'fast' } };
    expect(persistentVolumeStorageClassAction.dependencies(pv).map((d) => d.reason)).toEqual(['StorageClass "fast" is the class of PersistentVolume "pv-1"']);
    const beta = { ...pv, metadata: { name: 'pv-2', annotations: { 'volume.beta.kubernetes.io/storage-class': 'slow' } }, spec: {} };
    expect(await ids(persistentVolumeStorageClassAction, beta)).toEqual([cluster(GR.storageClasses, 'slow')]);
    expect(await ids(persistentVolumeStorageClassAction, { ...pv, spec: {} })).toEqual([]);
  });
});

describe('RBAC actions', () => {
  const crb = (name: string, subjects: unknown, role = 'view') => ({ metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects });
  const index = clusterRoleBindingIndex([
    crb('ops-admin', [{ kind: 'ServiceAccount', name: 'operator', namespace: 'shop' }, { kind: 'ServiceAccount', name: 'operator', namespace: 'shop' }]),
    crb('as-user', [{ kind: 'User', name: 'system:serviceaccount:shop:operator', apiGroup: 'rbac.authorization.k8s.io' }]),
    crb('ns-group', [{ kind: 'Group', name: 'system:serviceaccounts:shop', apiGroup: 'rbac.authorization.k8s.io' }]),
    crb('all-accounts', [{ kind: 'Group', name: 'system:serviceaccounts' }]),
    crb('other-ns', [{ kind: 'ServiceAccount', name: 'operator', namespace: 'billing' }]),
    crb('a-person', [{ kind: 'User', name: 'alice' }]),
    crb('no-subjects', undefined),
    crb('bad-user', [{ kind: 'User', name: 'system:serviceaccount:shop' }]),
    { metadata: {}, subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: 'shop' }] },
  ]);
  const sa = (name: string, namespace = 'shop'): KubeObject => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });

  it('a ServiceAccount names every ClusterRoleBinding that binds it: directly, as its user name, or as its namespace group', async () => {
    const action = serviceAccountBindingsAction(index);
    expect(action.dependencies(sa('operator'))).toEqual([
      { id: cluster(GR.clusterRoleBindings, 'ops-admin'), reason: 'ClusterRoleBinding "ops-admin" binds ServiceAccount "shop/operator"' },
      { id: cluster(GR.clusterRoleBindings, 'as-user'), reason: 'ClusterRoleBinding "as-user" binds ServiceAccount "shop/operator" as user "system:serviceaccount:shop:operator"' },
      { id: cluster(GR.clusterRoleBindings, 'ns-group'), reason: 'ClusterRoleBinding "ns-group" binds ServiceAccount "shop/operator" as group "system:serviceaccounts:shop"' },
    ]);
    // Every account of the namespace is in its group; the cluster-wide group is cluster configuration.
    expect(await ids(action, sa('default'))).toEqual([cluster(GR.clusterRoleBindings, 'ns-group')]);
    expect(await ids(action, sa('operator', 'billing'))).toEqual([cluster(GR.clusterRoleBindings, 'other-ns')]);
    expect(await ids(action, sa('nobody', 'elsewhere'))).toEqual([]);
  });

  it('a RoleBinding or ClusterRoleBinding names its ClusterRole, not a Role', async () => {
    const rb: KubeObject = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'viewers', namespace: 'shop' }, roleRef: { kind: 'ClusterRole', name: 'view' } };
    expect(bindingClusterRoleAction.dependencies(rb)).toEqual([{ id: cluster(GR.clusterRoles, 'view'), reason: 'ClusterRole "view" is the role of RoleBinding "shop/viewers"' }]);
    const binding: KubeObject = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'ops-admin' }, roleRef: { kind: 'ClusterRole', name: 'admin' } };
    expect(bindingClusterRoleAction.dependencies(binding)[0]?.reason).toBe('ClusterRole "admin" is the role of ClusterRoleBinding "ops-admin"');
    expect(await ids(bindingClusterRoleAction, { ...rb, roleRef: { kind: 'Role', name: 'reader' } })).toEqual([]);
    expect(await ids(bindingClusterRoleAction, { ...rb, roleRef: undefined })).toEqual([]);
  });
});

describe('builtinActions', () => {
  const api = (group: string, version: string, resource: string, namespaced: boolean, kind: string): ApiResource => ({
    group, version, resource, kind, namespaced, verbs: ['list', 'get', 'create'],
    groupResource: group === '' ? resource : `${resource}.${group}`, apiVersion: group === '' ? version : `${group}/${version}`, shortNames: [], singularName: '',
  });

  it('takes the ServiceAccount bindings action only with a binding index', () => {
    const names = (a: { name: string }[]) => a.map((x) => x.name);
    expect(names(builtinActions({ crdByGroupKind: new Map() }))).not.toContain('stowage.dev/service-account-cluster-role-bindings');
    expect(names(builtinActions({ crdByGroupKind: new Map(), clusterRoleBindings: clusterRoleBindingIndex([]) }))).toContain('stowage.dev/service-account-cluster-role-bindings');
  });

  it('explains each additional item it names, and nothing else', () => {
    const [, , classes] = builtinActions({ crdByGroupKind: new Map() });
    const web = workloads[3];
    if (classes?.explain === undefined || web === undefined) throw new Error('pod-classes has no explain');
    expect(classes.name).toBe('stowage.dev/pod-classes');
    expect(classes.explain(web, cluster(GR.runtimeClasses, 'gvisor'))?.reason).toBe('RuntimeClass "gvisor" is named by Deployment "shop/web"');
    expect(classes.explain(web, cluster(GR.runtimeClasses, 'other'))).toBeUndefined();
  });

  it('matches workloads by group-resource, whatever version serves them', async () => {
    const resolved = await resolveActions(builtinActions({ crdByGroupKind: new Map() }));
    const classes = resolved.find((a) => a.name === 'stowage.dev/pod-classes');
    if (classes === undefined) throw new Error('no pod-classes action');
    expect(classes.matches(api('batch', 'v1beta1', 'cronjobs', true, 'CronJob'), 'shop', {})).toBe(true);
    expect(classes.matches(api('batch', 'v1', 'cronjobs', true, 'CronJob'), 'shop', {})).toBe(true);
    expect(classes.matches(api('apps', 'v1', 'deployments', true, 'Deployment'), 'shop', {})).toBe(true);
    expect(classes.matches(api('', 'v1', 'configmaps', true, 'ConfigMap'), 'shop', {})).toBe(false);
    const roles = resolved.find((a) => a.name === 'stowage.dev/binding-cluster-role');
    expect(roles?.matches(api('rbac.authorization.k8s.io', 'v1beta1', 'clusterrolebindings', false, 'ClusterRoleBinding'), '', {})).toBe(true);
  });
});
