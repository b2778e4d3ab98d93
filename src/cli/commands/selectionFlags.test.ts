// The item-selection flags: pattern lists that keep commas inside (), [] and {}, the spec they
// build, the refusal to mix filter styles, and how describe shows them.
import { describe, expect, it } from 'vitest';
import { filtersSection } from './describe.js';
import { UsageError } from './errors.js';
import { filterSpec, patternList } from './flags.js';

describe('patternList', () => {
  it('splits on commas outside brackets and braces, across repeated flags', () => {
    expect(patternList('team-{a,b},db', undefined)).toEqual(['team-{a,b}', 'db']);
    expect(patternList('regex:^a{2,3}$, web ,', ['x'])).toEqual(['x', 'regex:^a{2,3}$', 'web']);
    expect(patternList('regex:^(a,b)$', undefined)).toEqual(['regex:^(a,b)$']);
    // A comma outside brackets always splits, even in a regex: write it as [,] (the help and docs say so).
    expect(patternList('regex:^a,b$', undefined)).toEqual(['regex:^a', 'b$']);
    expect(patternList('ns[a,b]', undefined)).toEqual(['ns[a,b]']);
  });
});

describe('filterSpec with the selection flags', () => {
  it('maps every flag to its spec field', () => {
    expect(filterSpec({
      includeNames: ['configmaps/app-*'], excludeNames: ['regex:tmp$'],
      includeClusterScopedResources: ['storageclasses'], excludeClusterScopedResources: ['nodes'],
      includeNamespaceScopedResources: ['configmaps'], excludeNamespaceScopedResources: ['secrets'],
    })).toEqual({
      includedNames: ['configmaps/app-*'], excludedNames: ['regex:tmp$'],
      includedClusterScopedResources: ['storageclasses'], excludedClusterScopedResources: ['nodes'],
      includedNamespaceScopedResources: ['configmaps'], excludedNamespaceScopedResources: ['secrets'],
    });
  });

  it('refuses the scope-specific flags with the older resource flags, naming both sides', () => {
    expect(() => filterSpec({ includeClusterScopedResources: ['x'], includeClusterResources: true })).toThrow(UsageError);
    expect(() => filterSpec({ excludeNamespaceScopedResources: ['x'], includeResources: ['y'] }))
      .toThrow('--exclude-namespace-scoped-resources cannot be used with --include-resources: use the scope-specific resource flags or the older ones');
    // Names go with either style.
    expect(filterSpec({ includeNames: ['web'], includeResources: ['configmaps'] })).toEqual({ includedNames: ['web'], includedResources: ['configmaps'] });
  });
});

describe('filtersSection', () => {
  it('shows the scope-specific lists in place of the older fields, and the names', () => {
    const out = filtersSection({ includedNamespaceScopedResources: ['configmaps'], excludedClusterScopedResources: ['nodes'], includedNames: ['web'], excludedNames: ['regex:x'] });
    expect(out).toContain('Resources:\n  Namespace-scoped included:  configmaps\n  Namespace-scoped excluded:  <none>\n  Cluster-scoped included:    <none>\n  Cluster-scoped excluded:    nodes\n');
    expect(out).toContain('Names:\n  Included:  web\n  Excluded:  regex:x\n');
    expect(out).not.toContain('Cluster-scoped:  ');
  });

  it('says "auto" when neither cluster-scoped list is set', () => {
    expect(filtersSection({ includedNamespaceScopedResources: ['configmaps'] })).toMatch(/Cluster-scoped included: +auto/);
  });
});
