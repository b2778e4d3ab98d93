import { describe, expect, it } from 'vitest';
import { groupOfApiVersion, groupResourceOf, itemPath, parseItemPath, preferredVersionDir, splitGroupResource, versionOfApiVersion } from './paths.js';
import { canonicalJson } from './json.js';
import { isSupportedFormatVersion } from './format.js';

describe('archive paths (Velero format 1.1.0)', () => {
  it('builds classic and preferred-version paths for namespaced and cluster-scoped items', () => {
    expect(itemPath('deployments.apps', 'shop', 'web')).toBe('resources/deployments.apps/namespaces/shop/web.json');
    expect(itemPath('configmaps', 'shop', 'cfg')).toBe('resources/configmaps/namespaces/shop/cfg.json');
    expect(itemPath('persistentvolumes', undefined, 'pv1')).toBe('resources/persistentvolumes/cluster/pv1.json');
    expect(itemPath('namespaces', '', 'shop')).toBe('resources/namespaces/cluster/shop.json');
    expect(itemPath('jobs.batch', 'ns', 'j', preferredVersionDir('v1'))).toBe('resources/jobs.batch/v1-preferredversion/namespaces/ns/j.json');
    expect(itemPath('clusterroles.rbac.authorization.k8s.io', undefined, 'system:aggregate-to-edit', preferredVersionDir('v1')))
      .toBe('resources/clusterroles.rbac.authorization.k8s.io/v1-preferredversion/cluster/system:aggregate-to-edit.json');
  });

  it('parses every path form back', () => {
    expect(parseItemPath('resources/deployments.apps/namespaces/shop/web.json'))
      .toEqual({ groupResource: 'deployments.apps', namespace: 'shop', name: 'web', preferred: false });
    expect(parseItemPath('resources/persistentvolumes/cluster/pv1.json'))
      .toEqual({ groupResource: 'persistentvolumes', name: 'pv1', preferred: false });
    expect(parseItemPath('resources/jobs.batch/v1-preferredversion/namespaces/ns/j.json'))
      .toEqual({ groupResource: 'jobs.batch', namespace: 'ns', name: 'j', versionDir: 'v1-preferredversion', version: 'v1', preferred: true });
    expect(parseItemPath('resources/horizontalpodautoscalers.autoscaling/v2beta2/cluster/x.json'))
      .toEqual({ groupResource: 'horizontalpodautoscalers.autoscaling', name: 'x', versionDir: 'v2beta2', version: 'v2beta2', preferred: false });
    // A namespace literally named "cluster" is still the classic namespaced form.
    expect(parseItemPath('resources/configmaps/namespaces/cluster/a.json'))
      .toEqual({ groupResource: 'configmaps', namespace: 'cluster', name: 'a', preferred: false });
    // Names may contain dots (and the .json suffix is stripped once).
    expect(parseItemPath('resources/secrets/namespaces/n/a.b.json.json')).toMatchObject({ name: 'a.b.json' });
  });

  it('round-trips itemPath through parseItemPath', () => {
    for (const [gr, ns, name, dir] of [
      ['pods', 'a', 'p', undefined], ['widgets.example.com', undefined, 'w', 'v1alpha1-preferredversion'], ['roles.rbac.authorization.k8s.io', 'x', 'r', 'v1'],
    ] as const) {
      const p = parseItemPath(itemPath(gr, ns, name, dir));
      expect(p).toMatchObject({ groupResource: gr, name });
      expect(typeof p === 'object' && p !== null ? [p.namespace, p.versionDir] : p).toEqual([ns, dir]);
    }
  });

  it('returns null outside resources/ and a reason for malformed resource paths', () => {
    expect(parseItemPath('metadata/version')).toBeNull();
    expect(parseItemPath('other/thing.json')).toBeNull();
    expect(parseItemPath('resources/configmaps/a.json')).toMatch(/expected namespaces\//);
    expect(parseItemPath('resources/configmaps/namespaces/ns/a.yaml')).toMatch(/<name>\.json/);
    expect(parseItemPath('resources/configmaps/namespaces/ns/.json')).toMatch(/<name>\.json/);
    expect(parseItemPath('resources/configmaps/namespaces/ns/x/a.json')).toMatch(/expected/);
    expect(parseItemPath('resources/configmaps/v1-preferredversion/cluster/ns/a.json')).toMatch(/expected/);
    expect(parseItemPath('resources/Config Maps/cluster/a.json')).toMatch(/not a resource\[\.group\] directory/);
    expect(parseItemPath('resources')).toMatch(/not a resource/);
  });

  it('splits group-resources and apiVersions', () => {
    expect(splitGroupResource('deployments.apps')).toEqual({ group: 'apps', resource: 'deployments' });
    expect(splitGroupResource('rolebindings.rbac.authorization.k8s.io')).toEqual({ group: 'rbac.authorization.k8s.io', resource: 'rolebindings' });
    expect(splitGroupResource('pods')).toEqual({ group: '', resource: 'pods' });
    expect(groupResourceOf('', 'pods')).toBe('pods');
    expect(groupResourceOf('apps', 'deployments')).toBe('deployments.apps');
    expect(groupOfApiVersion('v1')).toBe('');
    expect(groupOfApiVersion('apps/v1')).toBe('apps');
    expect(versionOfApiVersion('apps/v1beta2')).toBe('v1beta2');
    expect(versionOfApiVersion('v1')).toBe('v1');
  });

  it('accepts the 1.x format line only', () => {
    for (const v of ['1', '1.0.0', '1.1.0', '1.2']) expect(isSupportedFormatVersion(v)).toBe(true);
    for (const v of ['2.0.0', '', '1.1.0-rc1', 'banana', '0.9', '1..1']) expect(isSupportedFormatVersion(v)).toBe(false);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('gives identical bytes for objects built in different key orders', () => {
    expect(canonicalJson({ metadata: { name: 'x', namespace: 'n' }, kind: 'K' })).toBe(canonicalJson({ kind: 'K', metadata: { namespace: 'n', name: 'x' } }));
  });

  it('lists array-index keys first in numeric order, then the others sorted ("" first)', () => {
    expect(canonicalJson({ 10: 'x', 9: 'y', b: 1, a: 2, '01': 3 })).toBe('{"9":"y","10":"x","01":3,"a":2,"b":1}');
    expect(canonicalJson(Object.fromEntries([['b', 1], ['9', 2], ['', 3]]))).toBe('{"9":2,"":3,"b":1}');
  });

  it('keeps a "__proto__" key as data', () => {
    const obj = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as unknown;
    expect(canonicalJson(obj)).toBe('{"__proto__":{"polluted":true},"a":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
