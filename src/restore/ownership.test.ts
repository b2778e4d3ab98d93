import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../plugin/api/index.js';
import { controllerRefs, ownedSkipReason, ownerFate, ownerIndex, ownerKinds, restoredController, type OwnerCandidate } from './ownership.js';

const obj = (apiVersion: string, kind: string, name: string, namespace?: string, owners?: unknown[]): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace !== undefined ? { namespace } : {}), ...(owners !== undefined ? { ownerReferences: owners } : {}) },
});

const index = (objs: KubeObject[]): Map<string, OwnerCandidate> =>
  ownerIndex(objs.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name })));
const controllerOf = (o: KubeObject, idx: Map<string, OwnerCandidate>): string | undefined => restoredController(controllerRefs(o), o.metadata.namespace ?? '', idx)?.label;

describe('restoredController', () => {
  const deploy = obj('apps/v1', 'Deployment', 'web', 'ns');
  const rs = obj('apps/v1', 'ReplicaSet', 'web-abc', 'ns', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u', controller: true }]);
  const pod = obj('v1', 'Pod', 'web-abc-1', 'ns', [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'u2', controller: true }]);

  it('finds the controller owner when it is restored too, transitively for pods of replicasets', () => {
    const idx = index([deploy, rs, pod]);
    expect(restoredController(controllerRefs(rs), 'ns', idx)?.owner).toMatchObject({ kind: 'Deployment', name: 'web', namespace: 'ns' });
    expect(controllerOf(rs, idx)).toBe('Deployment web');
    expect(controllerOf(pod, idx)).toBe('ReplicaSet web-abc');
    expect(controllerOf(deploy, idx)).toBeUndefined();
  });

  it('restores the item when its controller is not in the restore, or the reference is not a controller one', () => {
    expect(controllerOf(rs, index([rs, pod]))).toBeUndefined();
    const nonController = obj('v1', 'ConfigMap', 'c', 'ns', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u' }]);
    expect(controllerRefs(nonController)).toBeUndefined();
    expect(controllerOf(nonController, index([deploy, nonController]))).toBeUndefined();
  });

  it('matches owners by group, kind and namespace, not by name alone', () => {
    const otherNs = obj('apps/v1', 'Deployment', 'web', 'elsewhere');
    const otherGroup = obj('example.com/v1', 'Deployment', 'web', 'ns');
    expect(controllerOf(rs, index([otherNs, otherGroup]))).toBeUndefined();
  });

  it('indexes only the kinds that controller references name, and finds the same owners', () => {
    const cm = obj('v1', 'ConfigMap', 'web', 'ns');
    const objs = [deploy, rs, pod, cm];
    const kinds = ownerKinds([rs, pod].map((o) => controllerRefs(o) ?? []));
    const candidates = objs.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name }));
    const small = ownerIndex(candidates, kinds);
    expect(small.size).toBe(2); // the Deployment and the ReplicaSet; not the Pod or the ConfigMap
    expect(controllerOf(rs, small)).toBe('Deployment web');
    expect(controllerOf(pod, small)).toBe('ReplicaSet web-abc');
    expect(ownerIndex(candidates).size).toBe(4);
  });

  it('finds cluster-scoped owners', () => {
    const owner = obj('example.com/v1', 'Cluster', 'c1');
    const child = obj('v1', 'ConfigMap', 'x', 'ns', [{ apiVersion: 'example.com/v1', kind: 'Cluster', name: 'c1', uid: 'u', controller: true }]);
    expect(controllerOf(child, index([owner, child]))).toBe('Cluster c1');
  });

  it('keeps only well-formed controller references', () => {
    const odd = obj('v1', 'Pod', 'p', 'ns', [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', controller: true }, 'junk',
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', controller: true, uid: 'u', blockOwnerDeletion: true }]);
    expect(controllerRefs(odd)).toEqual([{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs' }]);
  });
});

describe('ownedSkipReason', () => {
  it('says "which this restore recreates" only for an owner this restore recreates', () => {
    expect(ownedSkipReason('Deployment web', 'recreated', false)).toBe('owned by Deployment web, which this restore recreates; its controller makes a new one');
    expect(ownedSkipReason('Deployment web', 'recreated', true)).toBe('owned by Deployment web, which this restore would recreate; its controller would make a new one');
  });

  it('gives the true reason for an owner already in the cluster, and restores the item when the owner is not there', () => {
    const existing = ownedSkipReason('Deployment web', 'existing', false);
    expect(existing).toBe('owned by Deployment web, which is already in the cluster; left to its controller');
    expect(existing).not.toContain('recreate');
    expect(ownedSkipReason('ReplicaSet web-1', 'controller-existing', false)).toBe('owned by ReplicaSet web-1, whose own controller is already in the cluster; left to them');
    expect(ownedSkipReason('Deployment web', 'absent', false)).toBeUndefined();
    expect(ownedSkipReason('Deployment web', 'absent', true)).toBeUndefined();
  });
});

describe('ownerFate', () => {
  it('is recreated only for an owner this restore created, or one left to a controller this restore recreates', () => {
    expect(ownerFate({ action: 'created' }, undefined, false)).toBe('recreated');
    // A ReplicaSet skipped because its Deployment is recreated: its pods follow the Deployment's fate.
    expect(ownerFate({ action: 'skipped' }, 'recreated', false)).toBe('recreated');
    expect(ownerFate({ action: 'skipped' }, 'existing', false)).toBe('controller-existing');
    expect(ownerFate({ action: 'skipped' }, 'controller-existing', false)).toBe('controller-existing');
  });

  it('is existing for an owner found in the cluster, whatever was done with it', () => {
    for (const action of ['skipped', 'updated', 'failed']) expect(ownerFate({ action }, undefined, true)).toBe('existing');
  });

  it('is absent for an owner that failed, was skipped for another reason, or waits on the item itself', () => {
    expect(ownerFate({ action: 'failed' }, undefined, false)).toBe('absent');
    expect(ownerFate({ action: 'skipped' }, undefined, false)).toBe('absent');
    expect(ownerFate(undefined, undefined, true)).toBe('absent');
  });
});
