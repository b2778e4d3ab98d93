import { describe, expect, it } from 'vitest';
import { newBackup, type BackupSpec } from '../apis/v1/index.js';
import type { ApiResource } from '../kube/index.js';
import { newBackupRequest } from './request.js';
import { selectResources } from './resources.js';

const api = (group: string, resource: string, namespaced: boolean, verbs = ['list', 'get', 'create', 'delete']): ApiResource => ({
  group, version: 'v1', resource, kind: resource, namespaced, verbs,
  groupResource: group === '' ? resource : `${resource}.${group}`, apiVersion: group === '' ? 'v1' : `${group}/v1`, shortNames: [], singularName: '',
});

const DISCOVERED: ApiResource[] = [
  api('', 'pods', true), api('', 'configmaps', true), api('', 'secrets', true), api('', 'events', true),
  api('events.k8s.io', 'events', true), api('', 'namespaces', false), api('', 'persistentvolumes', false), api('', 'nodes', false),
  api('', 'componentstatuses', false, ['list', 'get']), api('', 'bindings', true, ['create']),
  api('apps', 'deployments', true), api('extensions', 'ingresses', true), api('networking.k8s.io', 'ingresses', true),
  api('rbac.authorization.k8s.io', 'clusterroles', false), api('metrics.k8s.io', 'pods', true, ['list', 'get']),
  api('stowage.dev', 'backups', true),
];

const request = (spec: BackupSpec) => newBackupRequest(newBackup('b', 'stowage', spec));
const names = (rs: ApiResource[]) => rs.map((r) => r.groupResource);

describe('BackupRequest', () => {
  it('resolves the label selectors into one LIST selector each', () => {
    expect(request({}).selectors).toEqual(['']);
    expect(request({}).selectsByLabel).toBe(false);
    expect(request({ labelSelector: { matchLabels: { app: 'web' } } }).selectors).toEqual(['app=web']);
    const or = request({ orLabelSelectors: [{ matchLabels: { a: '1' } }, { matchExpressions: [{ key: 'b', operator: 'Exists' }] }, { matchLabels: { a: '1' } }] });
    expect(or.selectors).toEqual(['a=1', 'b']);
    expect(or.selectsByLabel).toBe(true);
    expect(request({ orLabelSelectors: [{ matchLabels: { a: '1' } }, {}] }).selectors).toEqual(['']);
  });

  it('includes cluster-scoped resources like Velero: true, false, or (unset) only for all namespaces', () => {
    expect(request({}).listClusterScoped).toBe(true);
    expect(request({ includedNamespaces: ['*'] }).listClusterScoped).toBe(true);
    expect(request({ includedNamespaces: ['shop'] }).listClusterScoped).toBe(false);
    expect(request({ excludedNamespaces: ['kube-system'] }).listClusterScoped).toBe(false);
    expect(request({ includedNamespaces: ['shop'], includeClusterResources: true }).listClusterScoped).toBe(true);
    expect(request({ includeClusterResources: false }).listClusterScoped).toBe(false);
  });

  it('parses orderedResources', () => {
    expect([...request({ orderedResources: { Pods: 'ns/b, ns/a,', persistentvolumes: 'pv2' } }).orderedResources])
      .toEqual([['pods', ['ns/b', 'ns/a']], ['persistentvolumes', ['pv2']]]);
  });
});

describe('selectResources', () => {
  it('skips the never-backed-up list, superseded groups and resources that cannot be restored', () => {
    const req = request({});
    const sel = selectResources(DISCOVERED, req.resources, true);
    expect(names(sel.namespaced)).toEqual(['pods', 'configmaps', 'secrets', 'deployments.apps', 'ingresses.networking.k8s.io', 'backups.stowage.dev']);
    expect(names(sel.cluster)).toEqual(['persistentvolumes', 'nodes', 'clusterroles.rbac.authorization.k8s.io']);
    expect(sel.namespaces?.groupResource).toBe('namespaces');
    expect(sel.skipped).toEqual([
      { groupResource: 'events', reason: 'never backed up' },
      { groupResource: 'events.events.k8s.io', reason: 'never backed up' },
      { groupResource: 'componentstatuses', reason: 'never backed up' },
      { groupResource: 'bindings', reason: 'the API does not allow list, get' },
      { groupResource: 'ingresses.extensions', reason: 'the same objects are backed up as ingresses.networking.k8s.io' },
      { groupResource: 'pods.metrics.k8s.io', reason: 'never backed up' },
    ]);
  });

  it('applies the resource filter and the cluster-scoped decision', () => {
    const req = request({ includedNamespaces: ['shop'], includedResources: ['configmaps', 'deployments.apps', 'persistentvolumes', 'namespaces'] });
    const sel = selectResources(DISCOVERED, req.resources, req.listClusterScoped);
    expect(names(sel.namespaced)).toEqual(['configmaps', 'deployments.apps']);
    expect(sel.cluster).toEqual([]);
    expect(sel.namespaces).toBeDefined();
    const noNs = request({ excludedResources: ['namespaces', 'secrets'] });
    const sel2 = selectResources(DISCOVERED, noNs.resources, true);
    expect(sel2.namespaces).toBeUndefined();
    expect(names(sel2.namespaced)).not.toContain('secrets');
  });
});

describe('BackupRequest: the scope-specific resource filters', () => {
  it('lists the cluster-scoped resources includedClusterScopedResources names, and every namespaced one by default', () => {
    const req = request({ includedNamespaces: ['app'], includedClusterScopedResources: ['persistentvolumes'], excludedNamespaceScopedResources: ['secrets'] });
    const sel = selectResources(DISCOVERED, req.resources, req.listClusterScoped);
    expect(names(sel.cluster)).toEqual(['persistentvolumes']);
    expect(names(sel.namespaced)).toEqual(['pods', 'configmaps', 'deployments.apps', 'ingresses.networking.k8s.io', 'backups.stowage.dev']);
    expect(sel.namespaces?.groupResource).toBe('namespaces');
    expect(req.includeClusterResources).toBeUndefined();
  });

  it('excludedClusterScopedResources "*" reads as includeClusterResources false (no cluster-scoped dependency either)', () => {
    const req = request({ includedNamespaces: ['app'], excludedClusterScopedResources: ['*'] });
    expect(req.includeClusterResources).toBe(false);
    expect(selectResources(DISCOVERED, req.resources, req.listClusterScoped).cluster).toEqual([]);
  });

  it('a whole-cluster selection with both cluster-scoped lists empty takes every cluster-scoped resource', () => {
    const req = request({ includedNamespaceScopedResources: ['*'] });
    expect(names(selectResources(DISCOVERED, req.resources, req.listClusterScoped).cluster)).toEqual(['persistentvolumes', 'nodes', 'clusterroles.rbac.authorization.k8s.io']);
  });
});
