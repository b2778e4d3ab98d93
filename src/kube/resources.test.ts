import { describe, expect, it } from 'vitest';
import { KubeError, errorFromResponse, isAlreadyExists, isConflict } from './errors.js';
import { resolveResource, resourcePath, type ApiResource } from './resources.js';

const r = (group: string, resource: string, kind: string, shortNames: string[] = []): ApiResource => ({
  group,
  version: 'v1',
  resource,
  kind,
  namespaced: true,
  verbs: ['get', 'list'],
  groupResource: group === '' ? resource : `${resource}.${group}`,
  apiVersion: group === '' ? 'v1' : `${group}/v1`,
  shortNames,
  singularName: kind.toLowerCase(),
});

describe('resource paths', () => {
  it('builds core, grouped, namespaced, cluster-scoped and subresource paths', () => {
    expect(resourcePath({ group: '', version: 'v1', resource: 'pods' }, 'a', 'p')).toBe('/api/v1/namespaces/a/pods/p');
    expect(resourcePath({ group: 'apps', version: 'v1', resource: 'deployments' })).toBe('/apis/apps/v1/deployments');
    expect(resourcePath({ group: '', version: 'v1', resource: 'namespaces', namespaced: false }, 'ignored', 'x')).toBe('/api/v1/namespaces/x');
    expect(resourcePath({ group: 'stowage.dev', version: 'v1', resource: 'backups' }, 'ns', 'b', 'status')).toBe('/apis/stowage.dev/v1/namespaces/ns/backups/b/status');
    expect(resourcePath({ group: '', version: 'v1', resource: 'configmaps' }, 'ns', 'a b')).toBe('/api/v1/namespaces/ns/configmaps/a%20b');
    expect(() => resourcePath({ group: '', version: 'v1', resource: 'pods' }, 'ns', '')).toThrow('empty name');
  });

  it('resolves plural, group-resource, kind and short names, preferring the core group', () => {
    const all = [r('', 'events', 'Event', ['ev']), r('events.k8s.io', 'events', 'Event'), r('apps', 'deployments', 'Deployment', ['deploy'])];
    expect(resolveResource(all, 'events')?.group).toBe('');
    expect(resolveResource(all, 'events.events.k8s.io')?.group).toBe('events.k8s.io');
    expect(resolveResource(all, 'deploy')?.groupResource).toBe('deployments.apps');
    expect(resolveResource(all, 'Deployment')?.groupResource).toBe('deployments.apps');
    expect(resolveResource(all, 'deploy.apps')?.groupResource).toBe('deployments.apps');
    expect(resolveResource(all, 'widgets')).toBeUndefined();
  });
});

describe('KubeError', () => {
  it('names verb, resource, object and namespace, then quotes the apiserver', () => {
    const body = JSON.stringify({
      kind: 'Status',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      message: 'backups.stowage.dev "b" is forbidden: User "u" cannot get resource "backups" in API group "stowage.dev" in the namespace "x"',
    });
    const err = errorFromResponse({ verb: 'get', resource: 'backups.stowage.dev', namespace: 'x', name: 'b' }, 403, body);
    expect(err).toBeInstanceOf(KubeError);
    expect(err.status).toBe(403);
    expect(err.reason).toBe('Forbidden');
    expect(err.message).toBe(
      'get backups.stowage.dev "b" in namespace "x": backups.stowage.dev "b" is forbidden: User "u" cannot get resource "backups" in API group "stowage.dev" in the namespace "x" (403 Forbidden)',
    );
  });

  it('copes with bodies that are not Status objects', () => {
    const err = errorFromResponse({ verb: 'list', resource: 'pods' }, 503, 'service unavailable\n');
    expect(err.message).toBe('list pods: service unavailable (503 ServiceUnavailable)');
  });

  it('tells AlreadyExists from other conflicts', () => {
    const exists = errorFromResponse({ verb: 'create', resource: 'pods' }, 409, JSON.stringify({ reason: 'AlreadyExists', message: 'x' }));
    const conflict = errorFromResponse({ verb: 'update', resource: 'pods' }, 409, JSON.stringify({ reason: 'Conflict', message: 'x' }));
    expect([isAlreadyExists(exists), isConflict(exists)]).toEqual([true, false]);
    expect([isAlreadyExists(conflict), isConflict(conflict)]).toEqual([false, true]);
  });
});
