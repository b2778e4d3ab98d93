import { describe, expect, it } from 'vitest';
import { boundServiceAccounts, clusterReferences, GR } from './references.js';

describe('clusterReferences', () => {
  const spec = { priorityClassName: 'high', runtimeClassName: 'gvisor' };
  it('follows pod specs, claim templates, claims, volumes and bindings', () => {
    expect(clusterReferences('cronjobs.batch', { kind: 'CronJob', spec: { jobTemplate: { spec: { template: { spec } } } } })).toEqual([
      { groupResource: GR.priorityClasses, name: 'high' },
      { groupResource: GR.runtimeClasses, name: 'gvisor' },
    ]);
    expect(clusterReferences('statefulsets.apps', { kind: 'StatefulSet', spec: { template: { spec: {} }, volumeClaimTemplates: [{ spec: { storageClassName: 'fast' } }] } }))
      .toEqual([{ groupResource: GR.storageClasses, name: 'fast' }]);
    expect(clusterReferences('persistentvolumeclaims', { spec: { volumeName: 'pv-1', storageClassName: 'fast' } })).toEqual([{ groupResource: 'persistentvolumes', name: 'pv-1' }]);
    expect(clusterReferences('persistentvolumeclaims', { spec: { storageClassName: 'fast' } })).toEqual([{ groupResource: GR.storageClasses, name: 'fast' }]);
    expect(clusterReferences('persistentvolumes', { spec: { storageClassName: 'fast' } })).toEqual([{ groupResource: GR.storageClasses, name: 'fast' }]);
    expect(clusterReferences(GR.roleBindings, { roleRef: { kind: 'ClusterRole', name: 'view' } })).toEqual([{ groupResource: GR.clusterRoles, name: 'view' }]);
    expect(clusterReferences(GR.clusterRoleBindings, { roleRef: { kind: 'Role', name: 'x' } })).toEqual([]);
    expect(clusterReferences('configmaps', { kind: 'ConfigMap', spec })).toEqual([]);
    expect(clusterReferences('pods', null)).toEqual([]);
  });
});

describe('boundServiceAccounts', () => {
  it('reads ServiceAccount subjects, service-account user names and namespace groups; not the cluster-wide group', () => {
    expect(boundServiceAccounts({
      subjects: [
        { kind: 'ServiceAccount', name: 'op', namespace: 'shop' },
        { kind: 'ServiceAccount', name: 'no-namespace' },
        { kind: 'User', name: 'system:serviceaccount:shop:op' },
        { kind: 'User', name: 'system:serviceaccount:shop:op:extra' },
        { kind: 'User', name: 'alice' },
        { kind: 'Group', name: 'system:serviceaccounts:shop' },
        { kind: 'Group', name: 'system:serviceaccounts' },
        { kind: 'Group', name: 'system:serviceaccounts:' },
        'junk',
      ],
    })).toEqual([
      { namespace: 'shop', name: 'op' },
      { namespace: 'shop', name: 'op', via: 'user "system:serviceaccount:shop:op"' },
      { namespace: 'shop', via: 'group "system:serviceaccounts:shop"' },
    ]);
    expect(boundServiceAccounts({})).toEqual([]);
  });
});
