// Validation of everything that selects a run's items: namespaces, resources in either style,
// labels (selection/filters.ts), the scope-specific resource lists (selection/scopedResources.ts) and names
// (selection/names.ts). Backup, Restore and Schedule validation call this one function.
import { usesScopedFilters, validateFilters, validateListCaps, type ValidateFiltersOptions } from './filters.js';
import { validateNameFilters } from './names.js';
import { validateScopedFilters } from './scopedResources.js';
import type { SelectionSpec } from './spec.js';

export function validateSelection(spec: SelectionSpec, opts: ValidateFiltersOptions = {}): string[] {
  // An over-long list is reported alone: the checks compare entries pairwise or compile each.
  const capped = validateListCaps(spec);
  if (capped.length > 0) return capped;
  return [...validateFilters(spec, opts), ...validateScopedFilters(spec, opts.scopeOf), ...validateNameFilters(spec)];
}

/** The scope-specific and name filters a spec sets, for a run's first log line (the older filters are logged already). */
export function selectionLogFields(spec: SelectionSpec): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const fields = ['includedNames', 'excludedNames'] as const;
  const scoped = ['includedClusterScopedResources', 'excludedClusterScopedResources', 'includedNamespaceScopedResources', 'excludedNamespaceScopedResources'] as const;
  for (const f of [...fields, ...(usesScopedFilters(spec) ? scoped : [])]) {
    const v = spec[f];
    if (v !== undefined && v !== null && v.length > 0) out[f] = v;
  }
  return out;
}
