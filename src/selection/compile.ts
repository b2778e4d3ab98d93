// A spec's selection compiled once, by one rule, for both request builders (backup/request.ts and
// restore/request.ts): which namespaces, resources, names and labels a run takes, and how far it
// takes cluster-scoped items.
import type { LabelSelector } from '../apis/v1/index.js';
import { includesClusterScoped, namespaceFilter, type NamespaceFilter, type ResourceFilter } from './filters.js';
import { isEmptyLabelSelector } from './labels.js';
import { nameFilter, type NameFilter } from './names.js';
import { refusesClusterScoped, specResourceFilter } from './scopedResources.js';
import type { SelectionSpec } from './spec.js';

export interface Selection {
  readonly namespaces: NamespaceFilter;
  /** includedResources/excludedResources, or Velero's scope-specific lists (selection/scopedResources.ts). */
  readonly resources: ResourceFilter;
  /** includedNames/excludedNames (selection/names.ts). */
  readonly names: NameFilter;
  /** Whether cluster-scoped resources are taken in full (with the scope-specific lists: those the resource filter takes). */
  readonly clusterScopedInFull: boolean;
  /**
   * Whether cluster-scoped items related to taken namespaced items may come along although the
   * rest do not; only includeClusterResources: false (or excludedClusterScopedResources: ["*"])
   * turns this off.
   */
  readonly relatedClusterScoped: boolean;
  /** The OR-ed label selectors; empty when every item matches. */
  readonly labelSelectors: readonly LabelSelector[];
}

export function compileSelection(spec: SelectionSpec): Selection {
  const namespaces = namespaceFilter(spec.includedNamespaces, spec.excludedNamespaces);
  const resources = specResourceFilter(spec, namespaces);
  return {
    namespaces,
    resources,
    names: nameFilter(spec.includedNames, spec.excludedNames),
    // The scope-specific lists choose cluster-scoped resources one by one (resources.shouldInclude).
    clusterScopedInFull: resources.style === 'scoped' || includesClusterScoped(spec.includeClusterResources, namespaces),
    relatedClusterScoped: !refusesClusterScoped(spec),
    labelSelectors: labelSelectorsOf(spec),
  };
}

function labelSelectorsOf(spec: Pick<SelectionSpec, 'labelSelector' | 'orLabelSelectors'>): LabelSelector[] {
  const or = spec.orLabelSelectors ?? [];
  if (or.length > 0) {
    // An empty selector among the OR-ed ones selects everything, so the others do not matter.
    return or.some(isEmptyLabelSelector) ? [] : or;
  }
  return spec.labelSelector !== undefined && !isEmptyLabelSelector(spec.labelSelector) ? [spec.labelSelector] : [];
}
