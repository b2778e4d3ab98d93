import { describe, expect, it } from 'vitest';
import type { LabelSelectorOperator } from '../apis/v1/index.js';
import {
  builtinScopeOf,
  globMatches,
  groupResourceString,
  includesClusterScoped,
  namespaceFilter,
  parseGroupResource,
  resourceEntryMatches,
  resourceFilter,
  SPEC_LIST_CAPS,
  validateFilters,
  validateListCaps,
  validateNamespaceMapping,
  type ResourceLike,
} from './filters.js';

const deployments: ResourceLike = {
  resource: 'deployments',
  group: 'apps',
  kind: 'Deployment',
  singularName: 'deployment',
  shortNames: ['deploy'],
};
const configmaps: ResourceLike = { resource: 'configmaps', group: '', kind: 'ConfigMap', shortNames: ['cm'] };
const coreEvents: ResourceLike = { resource: 'events', group: '', kind: 'Event' };
const k8sEvents: ResourceLike = { resource: 'events', group: 'events.k8s.io', kind: 'Event' };

describe('globMatches', () => {
  it.each([
    ['*', 'anything', true],
    ['kube-*', 'kube-system', true],
    ['kube-*', 'kube-', true],
    ['kube-*', 'my-kube-system', false],
    ['*-prod', 'shop-prod', true],
    ['team-?', 'team-a', true],
    ['team-?', 'team-ab', false],
    ['a*b*c', 'aXXbYYc', true],
    ['app', 'app', true],
    ['app', 'app2', false],
    ['a.b', 'axb', false],
  ])('%s vs %s -> %s', (pattern, name, expected) => {
    expect(globMatches(pattern, name)).toBe(expected);
  });
});

describe('namespaceFilter', () => {
  it('includes everything when includes are empty or "*"', () => {
    for (const f of [namespaceFilter([], []), namespaceFilter(undefined, null), namespaceFilter(['*'], [])]) {
      expect(f.shouldInclude('default')).toBe(true);
      expect(f.includesEverything()).toBe(true);
      expect(f.literalIncludes()).toBeUndefined();
    }
  });

  it('lets excludes win, including prefix wildcards', () => {
    const f = namespaceFilter(['*'], ['kube-*', 'stowage']);
    expect(f.shouldInclude('default')).toBe(true);
    expect(f.shouldInclude('kube-system')).toBe(false);
    expect(f.shouldInclude('stowage')).toBe(false);
    expect(f.includesEverything()).toBe(false);
  });

  it('includes only listed names and patterns', () => {
    const f = namespaceFilter(['app-*', 'db'], ['app-test']);
    expect(f.shouldInclude('app-prod')).toBe(true);
    expect(f.shouldInclude('app-test')).toBe(false);
    expect(f.shouldInclude('db')).toBe(true);
    expect(f.shouldInclude('web')).toBe(false);
    expect(f.literalIncludes()).toBeUndefined();
  });

  it('literalIncludes lists literal includes minus excluded ones, deduplicated', () => {
    expect(namespaceFilter(['a', 'b', 'a', ' c '], ['b']).literalIncludes()).toEqual(['a', 'c']);
  });

  it('"*" in excludes excludes everything', () => {
    const f = namespaceFilter([], ['*']);
    expect(f.shouldInclude('default')).toBe(false);
    expect(f.excludesEverything()).toBe(true);
  });
});

describe('resource matching', () => {
  it('parses and prints group-resources', () => {
    expect(parseGroupResource('deployments.apps')).toEqual({ resource: 'deployments', group: 'apps' });
    expect(parseGroupResource('volumesnapshots.snapshot.storage.k8s.io')).toEqual({
      resource: 'volumesnapshots',
      group: 'snapshot.storage.k8s.io',
    });
    expect(parseGroupResource('configmaps')).toEqual({ resource: 'configmaps', group: '' });
    expect(groupResourceString(deployments)).toBe('deployments.apps');
    expect(groupResourceString(configmaps)).toBe('configmaps');
  });

  it.each([
    ['*', true],
    ['deployments', true],
    ['Deployments', true],
    ['deployments.apps', true],
    ['DEPLOYMENTS.APPS', true],
    ['Deployment', true],
    ['deployment.apps', true],
    ['deploy', true],
    ['deployments.extensions', false],
    ['deploymentsapps', false],
    ['pods', false],
  ])('%s matches deployments.apps -> %s', (pattern, expected) => {
    expect(resourceEntryMatches(pattern, deployments)).toBe(expected);
  });

  it('a bare plural matches that plural in every group; plural.group only that group', () => {
    expect(resourceEntryMatches('events', coreEvents)).toBe(true);
    expect(resourceEntryMatches('events', k8sEvents)).toBe(true);
    expect(resourceEntryMatches('events.events.k8s.io', coreEvents)).toBe(false);
    expect(resourceEntryMatches('events.events.k8s.io', k8sEvents)).toBe(true);
  });

  it('resourceFilter applies includes, excludes and "*" case-insensitively', () => {
    const all = resourceFilter(undefined, undefined);
    expect(all.shouldInclude(deployments)).toBe(true);
    expect(all.includesEverything()).toBe(true);

    const some = resourceFilter(['Deployments.apps', 'cm'], []);
    expect(some.shouldInclude(deployments)).toBe(true);
    expect(some.shouldInclude(configmaps)).toBe(true);
    expect(some.shouldInclude(coreEvents)).toBe(false);
    expect(some.includes).toEqual(['deployments.apps', 'cm']);

    const excl = resourceFilter(['*'], ['ConfigMaps', 'events.events.k8s.io']);
    expect(excl.shouldInclude(deployments)).toBe(true);
    expect(excl.shouldInclude(configmaps)).toBe(false);
    expect(excl.shouldInclude(coreEvents)).toBe(true);
    expect(excl.shouldInclude(k8sEvents)).toBe(false);

    const nothing = resourceFilter(['deployments'], ['*']);
    expect(nothing.shouldInclude(deployments)).toBe(false);
    expect(nothing.excludesEverything()).toBe(true);
  });

  it('resourceFilter accepts group-resource strings', () => {
    const f = resourceFilter(['deployments.apps', 'configmaps'], ['secrets']);
    expect(f.shouldInclude('deployments.apps')).toBe(true);
    expect(f.shouldInclude('configmaps')).toBe(true);
    expect(f.shouldInclude('secrets')).toBe(false);
    expect(f.shouldInclude('replicasets.apps')).toBe(false);
  });
});

describe('includesClusterScoped', () => {
  it('follows includeClusterResources, else includes only for all namespaces', () => {
    expect(includesClusterScoped(true, namespaceFilter(['a'], []))).toBe(true);
    expect(includesClusterScoped(false, namespaceFilter([], []))).toBe(false);
    expect(includesClusterScoped(undefined, namespaceFilter([], []))).toBe(true);
    expect(includesClusterScoped(null, namespaceFilter(['*'], []))).toBe(true);
    expect(includesClusterScoped(null, namespaceFilter(['a'], []))).toBe(false);
    expect(includesClusterScoped(undefined, namespaceFilter([], ['kube-system']))).toBe(false);
  });
});

describe('builtinScopeOf', () => {
  it('knows common resources by plural, kind, short name and group form', () => {
    expect(builtinScopeOf('persistentvolumes')).toBe('Cluster');
    expect(builtinScopeOf('PersistentVolume')).toBe('Cluster');
    expect(builtinScopeOf('clusterroles.rbac.authorization.k8s.io')).toBe('Cluster');
    expect(builtinScopeOf('pvc')).toBe('Namespaced');
    expect(builtinScopeOf('deployments.apps')).toBe('Namespaced');
    expect(builtinScopeOf('namespaces')).toBeUndefined();
    expect(builtinScopeOf('widgets.example.com')).toBeUndefined();
  });
});

describe('validateFilters', () => {
  it('accepts consistent specs', () => {
    expect(validateFilters({})).toEqual([]);
    expect(
      validateFilters({
        includedNamespaces: ['app-*', 'db'],
        excludedNamespaces: ['app-test'],
        includedResources: ['deployments.apps', 'Deployment', 'configmaps'],
        excludedResources: ['secrets'],
        includeClusterResources: null,
        labelSelector: { matchLabels: { app: 'web' } },
      }),
    ).toEqual([]);
    expect(validateFilters({ excludedNamespaces: ['*'], includeClusterResources: true })).toEqual([]);
    expect(validateFilters({ includedNamespaces: ['*'], includedResources: ['*'], orLabelSelectors: [{ matchLabels: { a: 'b' } }] })).toEqual([]);
    expect(validateFilters({ includedNamespaces: ['a'], includedResources: ['persistentvolumes'], includeClusterResources: true })).toEqual([]);
    // An empty labelSelector next to orLabelSelectors is not a conflict.
    expect(validateFilters({ labelSelector: {}, orLabelSelectors: [{ matchLabels: { a: 'b' } }] })).toEqual([]);
  });

  it('reports conflicting selectors', () => {
    expect(
      validateFilters({ labelSelector: { matchLabels: { a: 'b' } }, orLabelSelectors: [{ matchLabels: { c: 'd' } }] }),
    ).toEqual(['labelSelector and orLabelSelectors cannot both be set; use labelSelector alone or put it into orLabelSelectors']);
  });

  it('reports invalid selectors with their paths', () => {
    expect(
      validateFilters({
        labelSelector: { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] },
      }),
    ).toEqual(['labelSelector.matchExpressions[0]: operator In needs at least one value']);
    // The type forbids it; a spec read from the cluster is still checked.
    const nope = 'Nope' as LabelSelectorOperator;
    expect(validateFilters({ orLabelSelectors: [{}, { matchExpressions: [{ key: 'a', operator: nope }] }] })).toEqual([
      'orLabelSelectors[1].matchExpressions[0]: unknown operator "Nope" (use In, NotIn, Exists or DoesNotExist)',
    ]);
  });

  it('reports a namespace both included and excluded, directly or by pattern', () => {
    expect(validateFilters({ includedNamespaces: ['a', 'b', 'kube-system'], excludedNamespaces: ['b', 'kube-*'] })).toEqual([
      'namespace "b" is in both includedNamespaces and excludedNamespaces',
      'namespace "kube-system" is in includedNamespaces but excludedNamespaces pattern "kube-*" excludes it',
    ]);
  });

  it('reports a resource both included and excluded, case-insensitively', () => {
    expect(validateFilters({ includedResources: ['Pods', 'configmaps'], excludedResources: ['pods'] })).toEqual([
      'resource "pods" is in both includedResources and excludedResources',
    ]);
  });

  it('reports "*" combined with other includes', () => {
    expect(validateFilters({ includedNamespaces: ['*', 'a'] })).toEqual([
      'includedNamespaces: "*" means every namespace and cannot be combined with other entries ("a")',
    ]);
    expect(validateFilters({ includedResources: ['pods', '*', 'secrets'] })).toEqual([
      'includedResources: "*" means every resource and cannot be combined with other entries ("pods", "secrets")',
    ]);
  });

  it('reports "*" in excludes together with includes', () => {
    expect(validateFilters({ includedNamespaces: ['a'], excludedNamespaces: ['*'], includeClusterResources: true })).toEqual([
      'excludedNamespaces contains "*", which excludes every namespace, so includedNamespaces ("a") can never match',
    ]);
    expect(validateFilters({ includedResources: ['pods'], excludedResources: ['*'] })).toEqual([
      'excludedResources contains "*", which excludes every resource, so includedResources ("pods") can never match',
    ]);
    expect(validateFilters({ excludedResources: ['*'] })).toEqual([
      'excludedResources contains "*", which excludes every resource, so nothing would be selected',
    ]);
  });

  it('reports every namespace excluded without cluster resources', () => {
    expect(validateFilters({ excludedNamespaces: ['*'] })).toEqual([
      'excludedNamespaces contains "*" and includeClusterResources is not set, so nothing would be selected (set includeClusterResources: true to back up only cluster-scoped resources)',
    ]);
    expect(validateFilters({ excludedNamespaces: ['*'], includeClusterResources: false })).toEqual([
      'excludedNamespaces contains "*" and includeClusterResources is false, so nothing would be selected (set includeClusterResources: true to back up only cluster-scoped resources)',
    ]);
  });

  it('reports cluster-scoped includes that includeClusterResources rules out', () => {
    expect(
      validateFilters({ includedResources: ['persistentvolumes', 'pods', 'StorageClass'], includeClusterResources: false }),
    ).toEqual([
      'includedResources names cluster-scoped "persistentvolumes", but includeClusterResources is false',
      'includedResources names cluster-scoped "storageclass", but includeClusterResources is false',
    ]);
    expect(validateFilters({ includedNamespaces: ['app'], includedResources: ['clusterroles', 'pv'] })).toEqual([
      'includedResources ("clusterroles", "pv") are all cluster-scoped, but cluster-scoped resources are only included with a namespace filter when includeClusterResources is true',
    ]);
    // With all namespaces, unset includeClusterResources includes cluster-scoped resources.
    expect(validateFilters({ includedResources: ['clusterroles'] })).toEqual([]);
    // "namespaces" goes with the selected namespaces, so it is not a contradiction.
    expect(validateFilters({ includedResources: ['namespaces'], includeClusterResources: false })).toEqual([]);
  });

  it('reports namespaced-only includes when every namespace is excluded', () => {
    expect(
      validateFilters({ includedResources: ['pods', 'secrets'], excludedNamespaces: ['*'], includeClusterResources: true }),
    ).toEqual(['includedResources ("pods", "secrets") are all namespaced, but excludedNamespaces "*" excludes every namespace']);
  });

  it('uses a discovery-backed scope resolver when given', () => {
    const scopeOf = (e: string) => (e === 'widgets.example.com' ? ('Cluster' as const) : undefined);
    expect(validateFilters({ includedResources: ['widgets.example.com'], includeClusterResources: false }, { scopeOf })).toEqual([
      'includedResources names cluster-scoped "widgets.example.com", but includeClusterResources is false',
    ]);
    // Unknown scope: no scope-based verdict.
    expect(validateFilters({ includedResources: ['persistentvolumes'], includeClusterResources: false }, { scopeOf })).toEqual([]);
  });

  it('reports malformed entries with their index', () => {
    expect(
      validateFilters({
        includedNamespaces: ['ok', 'Bad_NS', ''],
        excludedNamespaces: ['x'.repeat(64)],
        includedResources: ['deployments/apps'],
        excludedResources: ['', 'fine.example.com'],
      }),
    ).toEqual([
      'includedNamespaces[1] "Bad_NS" is not a valid namespace name or pattern (lowercase letters, digits and "-", with the wildcards "*", "?", "[abc]", "[a-z]" and "{a,b}")',
      'includedNamespaces[2] "" is not a valid namespace name or pattern (lowercase letters, digits and "-", with the wildcards "*", "?", "[abc]", "[a-z]" and "{a,b}")',
      `excludedNamespaces[0] "${'x'.repeat(64)}" is not a valid namespace name or pattern (lowercase letters, digits and "-", with the wildcards "*", "?", "[abc]", "[a-z]" and "{a,b}")`,
      'includedResources[0] "deployments/apps" is not a resource name (use a plural or plural.group, e.g. "deployments.apps", or "*")',
      'excludedResources[0] "" is not a resource name (use a plural or plural.group, e.g. "deployments.apps", or "*")',
    ]);
  });

  it('lists every problem at once', () => {
    const problems = validateFilters({
      includedNamespaces: ['a'],
      excludedNamespaces: ['a'],
      labelSelector: { matchLabels: { x: 'y' } },
      orLabelSelectors: [{ matchLabels: { z: 'w' } }],
      includedResources: ['pv'],
      includeClusterResources: false,
    });
    expect(problems).toEqual([
      'namespace "a" is in both includedNamespaces and excludedNamespaces',
      'labelSelector and orLabelSelectors cannot both be set; use labelSelector alone or put it into orLabelSelectors',
      'includedResources names cluster-scoped "pv", but includeClusterResources is false',
    ]);
  });
});

describe('validateNamespaceMapping', () => {
  it('accepts valid mappings', () => {
    expect(validateNamespaceMapping({ a: 'b' })).toEqual([]);
    expect(validateNamespaceMapping(undefined)).toEqual([]);
  });
  it('reports invalid names and excluded sources', () => {
    expect(validateNamespaceMapping({ Bad: 'ok', good: 'Not_OK', skip: 'x' }, { excludedNamespaces: ['skip'] })).toEqual([
      'namespaceMapping key "Bad" is not a valid namespace name',
      'namespaceMapping["good"] = "Not_OK" is not a valid namespace name',
      'namespaceMapping maps "skip", but the namespace filters exclude "skip"',
    ]);
  });
});

function names(n: number, prefix = 'ns'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
}

describe('list caps', () => {
  it('caps namespace and name lists at 1,000, resource lists at 2,000, orLabelSelectors at 16 and namespaceMapping at 1,000', () => {
    expect(SPEC_LIST_CAPS).toEqual({
      includedNamespaces: 1000, excludedNamespaces: 1000, includedResources: 2000, excludedResources: 2000, orLabelSelectors: 16, namespaceMapping: 1000,
      includedClusterScopedResources: 2000, excludedClusterScopedResources: 2000, includedNamespaceScopedResources: 2000, excludedNamespaceScopedResources: 2000,
      includedNames: 1000, excludedNames: 1000,
    });
  });

  it('accepts every list at its cap', () => {
    expect(validateFilters({ includedNamespaces: names(1000), excludedNamespaces: names(1000, 'x') })).toEqual([]);
    expect(validateFilters({ includedResources: names(2000, 'r') })).toEqual([]);
    expect(validateFilters({ includedResources: ['*'], excludedResources: names(2000, 'r') })).toEqual([]);
    expect(validateFilters({ restoreStatus: { includedResources: names(2000, 'r'), excludedResources: names(2000, 's') } })).toEqual([]);
    expect(validateFilters({ orLabelSelectors: names(16, 'app').map((v) => ({ matchLabels: { app: v } })) })).toEqual([]);
    expect(validateNamespaceMapping(Object.fromEntries(names(1000).map((n) => [n, `${n}-copy`])))).toEqual([]);
  });

  it('refuses includedNamespaces over the cap, naming the field, its length and the cap (the 5,000 names of issue 18)', () => {
    expect(validateFilters({ includedNamespaces: names(5000) })).toEqual([
      'includedNamespaces has 5000 entries, more than the 1000 allowed; name a larger set with a pattern (e.g. "team-*") or a label selector',
    ]);
    expect(validateFilters({ includedNamespaces: names(1001) })[0]).toMatch(/^includedNamespaces has 1001 entries, more than the 1000 allowed;/);
  });

  it('refuses excludedNamespaces over the cap', () => {
    expect(validateFilters({ excludedNamespaces: names(1001) })).toEqual([
      'excludedNamespaces has 1001 entries, more than the 1000 allowed; name a larger set with a pattern (e.g. "team-*") or a label selector',
    ]);
  });

  it('refuses includedResources and excludedResources over the cap', () => {
    expect(validateFilters({ includedResources: names(2001, 'r') })).toEqual([
      'includedResources has 2001 entries, more than the 2000 allowed; include "*" and exclude what to leave out instead',
    ]);
    expect(validateFilters({ excludedResources: names(2001, 'r') })).toEqual([
      'excludedResources has 2001 entries, more than the 2000 allowed; include what to keep instead',
    ]);
  });

  it("refuses a Restore's restoreStatus lists over the cap", () => {
    expect(validateFilters({ restoreStatus: { includedResources: names(2001, 'r'), excludedResources: names(2002, 's') } })).toEqual([
      'restoreStatus.includedResources has 2001 entries, more than the 2000 allowed; include "*" and exclude what to leave out instead',
      'restoreStatus.excludedResources has 2002 entries, more than the 2000 allowed; include what to keep instead',
    ]);
  });

  it('refuses more than 16 orLabelSelectors, each of which is one more LIST of every resource', () => {
    expect(validateFilters({ orLabelSelectors: names(17, 'app').map((v) => ({ matchLabels: { app: v } })) })).toEqual([
      'orLabelSelectors has 17 entries, more than the 16 allowed; each one is another LIST of every resource; combine them with "In" expressions',
    ]);
  });

  it('refuses a namespaceMapping over the cap, alone', () => {
    const mapping = Object.fromEntries(names(1001).map((n) => [n, 'Not_Valid']));
    expect(validateNamespaceMapping(mapping)).toEqual([
      'namespaceMapping has 1001 entries, more than the 1000 allowed; restore fewer namespaces per Restore',
    ]);
  });

  it('reports every over-long list, and only those: no pairwise checks or one message per bad entry', () => {
    const bad = names(1001).map((n) => `${n}_BAD`);
    const problems = validateFilters({ includedNamespaces: bad, excludedNamespaces: bad, includedResources: names(2001, 'r'), excludedResources: ['*'] });
    expect(problems).toEqual(validateListCaps({ includedNamespaces: bad, excludedNamespaces: bad, includedResources: names(2001, 'r') }));
    expect(problems.map((p) => p.split(' ')[0])).toEqual(['includedNamespaces', 'excludedNamespaces', 'includedResources']);
  });

  it('counts entries as written, duplicates included', () => {
    expect(validateListCaps({ includedNamespaces: Array.from({ length: 1001 }, () => 'same') })).toHaveLength(1);
  });
});

describe('namespaceFilter with long lists', () => {
  it('matches literal names by lookup and patterns one by one, exactly as the lists say', () => {
    const f = namespaceFilter([...names(1000), 'app-*', 'x?'], ['ns-7', 'app-secret*', '?y']);
    expect(f.shouldInclude('ns-0')).toBe(true);
    expect(f.shouldInclude('ns-999')).toBe(true);
    expect(f.shouldInclude('ns-7')).toBe(false);
    expect(f.shouldInclude('ns-1000')).toBe(false);
    expect(f.shouldInclude('app-web')).toBe(true);
    expect(f.shouldInclude('app-secrets')).toBe(false);
    expect(f.shouldInclude('x1')).toBe(true);
    expect(f.shouldInclude('xy')).toBe(false);
    expect(f.literalIncludes()).toBeUndefined();
    const literal = namespaceFilter(names(1000), ['ns-7']);
    expect(literal.literalIncludes()).toHaveLength(999);
  });

  // Speed is bench/'s to measure; this checks the answer holds at that size.
  it('checks 100,000 items against 1,000 included and 1,000 excluded names', () => {
    const f = namespaceFilter(names(1000), names(1000, 'x'));
    let n = 0;
    for (let i = 0; i < 100_000; i++) if (f.shouldInclude(`ns-${i % 2000}`)) n++;
    expect(n).toBe(50_000);
  });
});
