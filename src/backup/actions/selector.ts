// Helpers for writing item actions: a ResourceSelector with defaults, and reading fields safely.
import type { ResourceSelector } from '../../plugin/api/index.js';

export function selector(partial: Partial<ResourceSelector>): ResourceSelector {
  return {
    includedNamespaces: [],
    excludedNamespaces: [],
    includedResources: [],
    excludedResources: [],
    labelSelector: '',
    ...partial,
  };
}

export { field, stringField } from '../../kube/references.js';
