import { describe, expect, it } from 'vitest';
import { compileSelection } from './compile.js';

const app = { matchLabels: { app: 'web' } };
const tier = { matchExpressions: [{ key: 'tier', operator: 'In' as const, values: ['db'] }] };

describe('compileSelection', () => {
  it('takes the OR-ed selectors, or labelSelector, and none when an empty one matches everything', () => {
    expect(compileSelection({}).labelSelectors).toEqual([]);
    expect(compileSelection({ labelSelector: {} }).labelSelectors).toEqual([]);
    expect(compileSelection({ labelSelector: app }).labelSelectors).toEqual([app]);
    expect(compileSelection({ orLabelSelectors: [app, tier] }).labelSelectors).toEqual([app, tier]);
    expect(compileSelection({ orLabelSelectors: [app, {}] }).labelSelectors).toEqual([]);
  });

  it('takes cluster-scoped resources in full for a whole-cluster selection or includeClusterResources: true', () => {
    expect(compileSelection({}).clusterScopedInFull).toBe(true);
    expect(compileSelection({ includedNamespaces: ['a'] }).clusterScopedInFull).toBe(false);
    expect(compileSelection({ includedNamespaces: ['a'], includeClusterResources: true }).clusterScopedInFull).toBe(true);
    expect(compileSelection({ includedNamespaces: ['a'], includedClusterScopedResources: ['storageclasses'] }).clusterScopedInFull).toBe(true);
  });

  it('refuses related cluster-scoped items only when told to', () => {
    expect(compileSelection({ includedNamespaces: ['a'] }).relatedClusterScoped).toBe(true);
    expect(compileSelection({ includeClusterResources: false }).relatedClusterScoped).toBe(false);
    expect(compileSelection({ excludedClusterScopedResources: ['*'] }).relatedClusterScoped).toBe(false);
  });
});
