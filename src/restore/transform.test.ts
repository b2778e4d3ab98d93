import { describe, expect, it } from 'vitest';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME, labelValue } from '../apis/v1/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { mapNamespaces, prepareItem, STRIPPED_METADATA } from './transform.js';

const map = (ns: string): string => ({ old: 'new', other: 'elsewhere' })[ns] ?? ns;
const opts = { keepStatus: false, mapNamespace: map, backupName: 'b1', restoreName: 'r1' };

describe('prepareItem', () => {
  const cm: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'c', namespace: 'old', uid: 'u', resourceVersion: '9', creationTimestamp: '2020-01-01T00:00:00Z', generation: 3,
      selfLink: '/api/v1/x', deletionTimestamp: '2020-01-02T00:00:00Z', deletionGracePeriodSeconds: 30,
      ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'y' }], managedFields: [{ manager: 'm' }],
      labels: { app: 'a' }, annotations: { note: 'n' }, finalizers: ['f'],
    },
    data: { k: 'v' },
    status: { phase: 'Old' },
  };

  it('strips cluster-owned metadata, drops status, maps the namespace and adds the restore labels', () => {
    const out = prepareItem('configmaps', cm, opts);
    expect(out).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'new', labels: { app: 'a', [LABEL_BACKUP_NAME]: 'b1', [LABEL_RESTORE_NAME]: 'r1' }, annotations: { note: 'n' }, finalizers: ['f'] },
      data: { k: 'v' },
    });
    for (const k of STRIPPED_METADATA) expect(out.metadata).not.toHaveProperty(k);
    // The backed-up object is not changed.
    expect(cm.metadata.uid).toBe('u');
    expect(cm.status).toEqual({ phase: 'Old' });
  });

  it('keeps status when restoreStatus selects the resource', () => {
    expect(prepareItem('configmaps', cm, { ...opts, keepStatus: true }).status).toEqual({ phase: 'Old' });
  });

  it('uses labelValue() for names longer than a label value may be', () => {
    const long = `r-${'x'.repeat(80)}`;
    const out = prepareItem('configmaps', cm, { ...opts, restoreName: long });
    expect(out.metadata.labels?.[LABEL_RESTORE_NAME]).toBe(labelValue(long));
    expect(out.metadata.labels?.[LABEL_RESTORE_NAME]?.length).toBeLessThanOrEqual(63);
  });
});

describe('mapNamespaces', () => {
  it('renames a Namespace object and its kubernetes.io/metadata.name label', () => {
    const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'old', labels: { 'kubernetes.io/metadata.name': 'old', team: 't' } } };
    mapNamespaces('namespaces', ns, map);
    expect(ns.metadata).toEqual({ name: 'new', labels: { 'kubernetes.io/metadata.name': 'new', team: 't' } });
  });

  it('maps ServiceAccount subjects of RoleBindings, and leaves users, groups and unmapped namespaces alone', () => {
    const rb: KubeObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'rb', namespace: 'old' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' },
      subjects: [
        { kind: 'ServiceAccount', name: 'sa', namespace: 'old' },
        { kind: 'ServiceAccount', name: 'sa2', namespace: 'other' },
        { kind: 'ServiceAccount', name: 'sa3', namespace: 'kept' },
        { kind: 'User', name: 'old', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'Group', name: 'g', apiGroup: 'rbac.authorization.k8s.io' },
      ],
    };
    mapNamespaces('rolebindings.rbac.authorization.k8s.io', rb, map);
    expect(rb.metadata.namespace).toBe('new');
    expect(rb.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'sa', namespace: 'new' },
      { kind: 'ServiceAccount', name: 'sa2', namespace: 'elsewhere' },
      { kind: 'ServiceAccount', name: 'sa3', namespace: 'kept' },
      { kind: 'User', name: 'old', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'Group', name: 'g', apiGroup: 'rbac.authorization.k8s.io' },
    ]);
  });

  it("maps a service account's user name and namespace group in binding subjects once, even along a chain of mappings", () => {
    const chain = (ns: string): string => ({ shop: 'shop-copy', 'shop-copy': 'shop-copy-2' })[ns] ?? ns;
    const crb: KubeObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'ops-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [
        { kind: 'ServiceAccount', name: 'operator', namespace: 'shop' },
        { kind: 'ServiceAccount', name: 'operator', namespace: 'billing' },
        { kind: 'User', name: 'system:serviceaccount:shop:operator', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'User', name: 'system:serviceaccount:shop:bad:name', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'Group', name: 'system:serviceaccounts:shop', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'Group', name: 'system:serviceaccounts', apiGroup: 'rbac.authorization.k8s.io' },
      ],
    };
    mapNamespaces('clusterrolebindings.rbac.authorization.k8s.io', crb, chain);
    expect(crb.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'operator', namespace: 'shop-copy' },
      { kind: 'ServiceAccount', name: 'operator', namespace: 'billing' },
      { kind: 'User', name: 'system:serviceaccount:shop-copy:operator', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'User', name: 'system:serviceaccount:shop:bad:name', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'Group', name: 'system:serviceaccounts:shop-copy', apiGroup: 'rbac.authorization.k8s.io' },
      { kind: 'Group', name: 'system:serviceaccounts', apiGroup: 'rbac.authorization.k8s.io' },
    ]);
  });

  it('maps ClusterRoleBinding subjects and a PersistentVolume claimRef', () => {
    const crb: KubeObject = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'c' }, subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: 'old' }] };
    mapNamespaces('clusterrolebindings.rbac.authorization.k8s.io', crb, map);
    expect(crb.subjects).toEqual([{ kind: 'ServiceAccount', name: 'sa', namespace: 'new' }]);
    const pv: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv' }, spec: { claimRef: { namespace: 'old', name: 'claim' } } };
    mapNamespaces('persistentvolumes', pv, map);
    expect(pv.spec).toEqual({ claimRef: { namespace: 'new', name: 'claim' } });
    expect(pv.metadata.namespace).toBeUndefined();
  });
});
