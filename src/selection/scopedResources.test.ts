// Velero's scope-specific resource filters (includedClusterScopedResources,
// excludedClusterScopedResources, includedNamespaceScopedResources, excludedNamespaceScopedResources).
import { describe, expect, it } from 'vitest';
import { namespaceFilter, resourceFilter, type ResourceLike } from './filters.js';
import { includedResourceEntries, refusesClusterScoped, scopedResourceFilter, specResourceFilter, validateScopedFilters } from './scopedResources.js';
import { validateSelection } from './validate.js';

const configmaps: ResourceLike = { resource: 'configmaps', group: '', kind: 'ConfigMap', namespaced: true };
const secrets: ResourceLike = { resource: 'secrets', group: '', kind: 'Secret', namespaced: true };
const storageclasses: ResourceLike = { resource: 'storageclasses', group: 'storage.k8s.io', kind: 'StorageClass', namespaced: false };
const clusterroles: ResourceLike = { resource: 'clusterroles', group: 'rbac.authorization.k8s.io', kind: 'ClusterRole', namespaced: false };
const namespacesRes: ResourceLike = { resource: 'namespaces', group: '', kind: 'Namespace', namespaced: false };
const widgets: ResourceLike = { resource: 'widgets', group: 'example.com', kind: 'Widget', namespaced: false };

const all = namespaceFilter([], []);
const some = namespaceFilter(['app'], []);

describe('scopedResourceFilter', () => {
  it('namespaced: excludes win, empty includes take every namespaced resource', () => {
    const f = scopedResourceFilter({ excludedNamespaceScopedResources: ['secrets'] }, all);
    expect(f.shouldInclude(configmaps)).toBe(true);
    expect(f.shouldInclude(secrets)).toBe(false);
    expect(f.style).toBe('scoped');
    const g = scopedResourceFilter({ includedNamespaceScopedResources: ['configmaps'] }, all);
    expect(g.shouldInclude(configmaps)).toBe(true);
    expect(g.shouldInclude(secrets)).toBe(false);
  });

  it('cluster-scoped: only what includedClusterScopedResources names, unless excluded', () => {
    const f = scopedResourceFilter({ includedClusterScopedResources: ['storageclasses'], includedNamespaceScopedResources: ['configmaps'] }, some);
    expect(f.shouldInclude(storageclasses)).toBe(true);
    expect(f.shouldInclude(clusterroles)).toBe(false);
    expect(scopedResourceFilter({ includedClusterScopedResources: ['*'], excludedClusterScopedResources: [] }, some).shouldInclude(widgets)).toBe(true);
    expect(scopedResourceFilter({ includedClusterScopedResources: ['*'] }, some).shouldInclude(configmaps)).toBe(true);
  });

  it('cluster-scoped with both cluster lists empty: all of them only for a whole-cluster selection', () => {
    expect(scopedResourceFilter({ includedNamespaceScopedResources: ['*'] }, all).shouldInclude(clusterroles)).toBe(true);
    expect(scopedResourceFilter({ includedNamespaceScopedResources: ['*'] }, some).shouldInclude(clusterroles)).toBe(false);
    expect(scopedResourceFilter({ includedNamespaceScopedResources: ['configmaps'] }, all).shouldInclude(clusterroles)).toBe(false);
    expect(scopedResourceFilter({ excludedNamespaceScopedResources: ['secrets'] }, all).shouldInclude(clusterroles)).toBe(false);
  });

  it('takes Namespace objects unless the cluster-scoped excludes name them', () => {
    expect(scopedResourceFilter({ includedNamespaceScopedResources: ['configmaps'] }, some).shouldInclude(namespacesRes)).toBe(true);
    expect(scopedResourceFilter({ includedNamespaceScopedResources: ['configmaps'], excludedClusterScopedResources: ['namespaces'] }, some).shouldInclude(namespacesRes)).toBe(false);
  });

  it('guesses the scope of a bare name from the built-in resources (strings, archive entries without discovery)', () => {
    const f = scopedResourceFilter({ includedClusterScopedResources: ['storageclasses'], includedNamespaceScopedResources: ['configmaps'] }, some);
    expect(f.shouldInclude('storageclasses.storage.k8s.io')).toBe(true);
    expect(f.shouldInclude('configmaps')).toBe(true);
    expect(f.shouldInclude('persistentvolumes')).toBe(false);
    expect(f.shouldInclude('namespaces')).toBe(true);
  });

  it('admits a dependency unless an exclude list of its scope names it (as Velero)', () => {
    const f = scopedResourceFilter({ includedNamespaceScopedResources: ['configmaps'], excludedClusterScopedResources: ['clusterroles'] }, some);
    expect(f.shouldInclude(storageclasses)).toBe(false);
    expect(f.admitsDependency(storageclasses)).toBe(true);
    expect(f.admitsDependency(clusterroles)).toBe(false);
    expect(f.admitsDependency(secrets)).toBe(true);
    const none = scopedResourceFilter({ excludedClusterScopedResources: ['*'] }, some);
    expect(none.admitsDependency(storageclasses)).toBe(false);
    expect(none.excludesExplicitly(widgets)).toBe(true);
    // The older style keeps Stowage's rule: only what the filter includes.
    expect(resourceFilter(['pods'], []).admitsDependency(secrets)).toBe(false);
  });

  it('specResourceFilter picks the style the spec is written in', () => {
    expect(specResourceFilter({ includedResources: ['configmaps'] }, all).style).toBe('resources');
    expect(specResourceFilter({ includedNamespaceScopedResources: ['configmaps'] }, all).style).toBe('scoped');
    expect(specResourceFilter({}, all).style).toBe('resources');
  });

  it('refusesClusterScoped: includeClusterResources false, or excludedClusterScopedResources "*"', () => {
    expect(refusesClusterScoped({ includeClusterResources: false })).toBe(true);
    expect(refusesClusterScoped({ excludedClusterScopedResources: ['*'] })).toBe(true);
    expect(refusesClusterScoped({ excludedClusterScopedResources: ['nodes'] })).toBe(false);
    expect(refusesClusterScoped({})).toBe(false);
  });

  it('includedResourceEntries lists the named includes of either style', () => {
    expect(includedResourceEntries({ includedNamespaceScopedResources: ['configmaps', '*'], includedClusterScopedResources: ['storageclasses'] })).toEqual(['configmaps', 'storageclasses']);
  });
});

describe('validateScopedFilters', () => {
  it('accepts a consistent spec and ignores one without scoped lists', () => {
    expect(validateScopedFilters({ includedNamespaceScopedResources: ['configmaps'], includedClusterScopedResources: ['storageclasses'], excludedClusterScopedResources: ['nodes'] })).toEqual([]);
    expect(validateScopedFilters({ includedResources: ['configmaps'], includeClusterResources: true })).toEqual([]);
  });

  it('refuses mixing them with includedResources, excludedResources or includeClusterResources (as Velero)', () => {
    expect(validateScopedFilters({ includedNamespaceScopedResources: ['configmaps'], includedResources: ['secrets'], includeClusterResources: false })).toEqual([
      'the scope-specific resource filters (includedNamespaceScopedResources) cannot be combined with includedResources, excludedResources or includeClusterResources (set: includedResources, includeClusterResources); use one style or the other',
    ]);
  });

  it('refuses entries of the wrong scope, bad names, "*" mixed with names and one entry on both sides', () => {
    expect(validateScopedFilters({
      includedClusterScopedResources: ['configmaps', 'storageclasses', 'bad name'],
      excludedClusterScopedResources: ['storageclasses'],
      includedNamespaceScopedResources: ['*', 'pods', 'persistentvolumes', 'namespaces'],
      excludedNamespaceScopedResources: ['*'],
    })).toEqual([
      'includedClusterScopedResources[0] "configmaps" is namespaced; put it in includedNamespaceScopedResources',
      'includedClusterScopedResources[2] "bad name" is not a resource name (use a plural or plural.group, e.g. "deployments.apps", or "*")',
      'includedNamespaceScopedResources[2] "persistentvolumes" is cluster-scoped; put it in includedClusterScopedResources',
      'includedNamespaceScopedResources[3] "namespaces" is cluster-scoped; put it in includedClusterScopedResources',
      'resource "storageclasses" is in both includedClusterScopedResources and excludedClusterScopedResources',
      'includedNamespaceScopedResources: "*" means every resource of its scope and cannot be combined with other entries ("pods", "persistentvolumes", "namespaces")',
      'excludedNamespaceScopedResources contains "*", so includedNamespaceScopedResources ("*", "pods", "persistentvolumes", "namespaces") can never match',
    ]);
  });

  it('refuses excluding every namespace with no cluster-scoped resource named', () => {
    expect(validateScopedFilters({ excludedNamespaces: ['*'], excludedNamespaceScopedResources: ['secrets'] })).toEqual([
      'excludedNamespaces contains "*" and includedClusterScopedResources is empty, so nothing would be selected (name the cluster-scoped resources to take, or "*")',
    ]);
    // Only cluster-scoped resources: valid, and the older "includeClusterResources" rule does not fire.
    expect(validateSelection({ excludedNamespaces: ['*'], includedClusterScopedResources: ['storageclasses'] })).toEqual([]);
  });
});

describe('validateSelection', () => {
  it('gathers namespace, scoped and name problems at once', () => {
    expect(validateSelection({ includedNamespaces: ['team-{a'], includedClusterScopedResources: ['configmaps'], includedNames: ['regex:('] })).toEqual([
      'includedNamespaces[0] "team-{a" is not a valid namespace pattern: a "{" is never closed by "}"',
      'includedClusterScopedResources[0] "configmaps" is namespaced; put it in includedNamespaceScopedResources',
      'includedNames[0] "regex:(" is not a valid regular expression: Invalid regular expression: /(/: Unterminated group',
    ]);
  });

  it('reports an over-long list alone', () => {
    const many = Array.from({ length: 1001 }, (_, i) => `n-${i}`);
    expect(validateSelection({ includedNames: many, includedClusterScopedResources: ['configmaps'] })).toEqual([
      'includedNames has 1001 entries, more than the 1000 allowed; name a larger set with a glob, a "regex:" pattern or a label selector',
    ]);
  });

  it('accepts Velero\'s namespace globs and braces', () => {
    expect(validateSelection({ includedNamespaces: ['team-?', 'ns[123]', 'ns[a-c]', '{prod,staging}-*'], excludedNamespaces: ['kube-*'] })).toEqual([]);
  });
});
