import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../plugin/api/index.js';
import { ownerIndex, restoredController } from './ownership.js';

const obj = (apiVersion: string, kind: string, name: string, namespace?: string, owners?: unknown[]): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace !== undefined ? { namespace } : {}), ...(owners !== undefined ? { ownerReferences: owners } : {}) },
});

describe('restoredController', () => {
  const deploy = obj('apps/v1', 'Deployment', 'web', 'ns');
  const rs = obj('apps/v1', 'ReplicaSet', 'web-abc', 'ns', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u', controller: true }]);
  const pod = obj('v1', 'Pod', 'web-abc-1', 'ns', [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'u2', controller: true }]);

  it('finds the controller owner when it is restored too, transitively for pods of replicasets', () => {
    const index = ownerIndex([deploy, rs, pod]);
    expect(restoredController(rs, index)).toBe('Deployment web');
    expect(restoredController(pod, index)).toBe('ReplicaSet web-abc');
    expect(restoredController(deploy, index)).toBeUndefined();
  });

  it('restores the item when its controller is not in the restore, or the reference is not a controller one', () => {
    expect(restoredController(rs, ownerIndex([rs, pod]))).toBeUndefined();
    const nonController = obj('v1', 'ConfigMap', 'c', 'ns', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u' }]);
    expect(restoredController(nonController, ownerIndex([deploy, nonController]))).toBeUndefined();
  });

  it('matches owners by group, kind and namespace, not by name alone', () => {
    const otherNs = obj('apps/v1', 'Deployment', 'web', 'elsewhere');
    const otherGroup = obj('example.com/v1', 'Deployment', 'web', 'ns');
    expect(restoredController(rs, ownerIndex([otherNs, otherGroup]))).toBeUndefined();
  });

  it('finds cluster-scoped owners', () => {
    const owner = obj('example.com/v1', 'Cluster', 'c1');
    const child = obj('v1', 'ConfigMap', 'x', 'ns', [{ apiVersion: 'example.com/v1', kind: 'Cluster', name: 'c1', uid: 'u', controller: true }]);
    expect(restoredController(child, ownerIndex([owner, child]))).toBe('Cluster c1');
  });
});
