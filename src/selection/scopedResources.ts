// Velero's scope-specific resource filters: includedClusterScopedResources,
// excludedClusterScopedResources, includedNamespaceScopedResources and
// excludedNamespaceScopedResources, the alternative to includedResources, excludedResources and
// includeClusterResources (a spec that sets both styles fails validation, as in Velero).
//
// Semantics (Velero's):
// - a namespaced resource is taken unless the namespace-scoped excludes name it (or are "*"), and
//   only if the namespace-scoped includes are empty, "*" or name it;
// - a cluster-scoped resource is taken unless the cluster-scoped excludes name it (or are "*"), and
//   only if the cluster-scoped includes are "*" or name it, or when both cluster-scoped lists are
//   empty and the backup takes every namespace and every namespaced resource (a whole-cluster
//   backup); Namespace objects are cluster-scoped and taken unless excluded;
// - a dependency of a taken item (a claim's PV, a CR's CRD, ...) comes along unless an exclude
//   list of its scope names it; Stowage applies the same rules to a restore.
import {
  builtinScopeOf,
  groupResourceString,
  normaliseList,
  parseGroupResource,
  RESOURCE_ENTRY_RE,
  resourceEntryMatches,
  resourceFilter,
  usesScopedFilters,
  type IncludesExcludes,
  type ResourceFilter,
  type ResourceLike,
  type ResourceScope,
} from './filters.js';
import type { ScopedResourceFields, SelectionSpec } from './spec.js';

const NAMESPACE_ENTRIES = new Set(['namespaces', 'namespace', 'ns']);

/** The scope of a resource: known (discovery, the archive) or guessed from built-in names; unknown ones are namespaced, as most are. */
function isNamespaced(item: ResourceLike | string): boolean {
  const r = typeof item === 'string' ? parseGroupResource(item) : item;
  if (r.namespaced !== undefined) return r.namespaced;
  if (r.group === '' && NAMESPACE_ENTRIES.has(r.resource.toLowerCase())) return false;
  return builtinScopeOf(groupResourceString(r)) !== 'Cluster';
}

interface Lists {
  inc: string[];
  exc: string[];
}

export function scopedResourceFilter(spec: ScopedResourceFields, namespaces: IncludesExcludes<string>): ResourceFilter {
  const ns: Lists = { inc: normaliseList(spec.includedNamespaceScopedResources, true), exc: normaliseList(spec.excludedNamespaceScopedResources, true) };
  const cl: Lists = { inc: normaliseList(spec.includedClusterScopedResources, true), exc: normaliseList(spec.excludedClusterScopedResources, true) };
  const like = (item: ResourceLike | string): ResourceLike => (typeof item === 'string' ? parseGroupResource(item) : item);
  const names = (list: string[], item: ResourceLike | string): boolean => list.some((p) => p === '*' || resourceEntryMatches(p, like(item)));
  const everyNamespaced = ns.exc.length === 0 && (ns.inc.length === 0 || ns.inc.includes('*'));
  const wholeCluster = cl.inc.length === 0 && cl.exc.length === 0 && everyNamespaced && namespaces.includesEverything();
  const excludesExplicitly = (item: ResourceLike | string): boolean => names(isNamespaced(item) ? ns.exc : cl.exc, item);
  const shouldInclude = (item: ResourceLike | string): boolean => {
    if (excludesExplicitly(item)) return false;
    if (isNamespaced(item)) return ns.inc.length === 0 || names(ns.inc, item);
    const r = like(item);
    if (r.group === '' && r.resource.toLowerCase() === 'namespaces') return true;
    return wholeCluster || names(cl.inc, item);
  };
  return {
    includes: [...ns.inc, ...cl.inc],
    excludes: [...ns.exc, ...cl.exc],
    shouldInclude,
    includesEverything: () => wholeCluster,
    excludesEverything: () => ns.exc.includes('*') && cl.exc.includes('*'),
    excludesExplicitly,
    admitsDependency: (item) => !excludesExplicitly(item),
    style: 'scoped',
  };
}

/** The resource filter of a Backup or Restore spec, in whichever style it is written. */
export function specResourceFilter(
  spec: Pick<SelectionSpec, 'includedResources' | 'excludedResources'> & ScopedResourceFields,
  namespaces: IncludesExcludes<string>,
): ResourceFilter {
  return usesScopedFilters(spec) ? scopedResourceFilter(spec, namespaces) : resourceFilter(spec.includedResources, spec.excludedResources);
}

/** Whether no cluster-scoped item may be taken at all, not even as a dependency (includeClusterResources: false, or its scoped equivalent). */
export function refusesClusterScoped(spec: Pick<SelectionSpec, 'includeClusterResources'> & ScopedResourceFields): boolean {
  if (!usesScopedFilters(spec)) return spec.includeClusterResources === false;
  return normaliseList(spec.excludedClusterScopedResources, true).includes('*');
}

/** The resource entries a spec includes by name, in either style (for messages about resources the cluster does not serve). */
export function includedResourceEntries(spec: Pick<SelectionSpec, 'includedResources'> & ScopedResourceFields): string[] {
  return [...(spec.includedResources ?? []), ...(spec.includedNamespaceScopedResources ?? []), ...(spec.includedClusterScopedResources ?? [])]
    .filter((e) => e.trim() !== '*');
}

const SCOPED_FIELDS = ['includedClusterScopedResources', 'excludedClusterScopedResources', 'includedNamespaceScopedResources', 'excludedNamespaceScopedResources'] as const;

const quote = (xs: readonly string[]): string => xs.map((x) => `"${x}"`).join(', ');

/**
 * Problems with the scope-specific lists, each a sentence naming the fields (empty when unset or
 * consistent). `scopeOf` tells an entry's scope (discovery when known, else built-in names).
 */
export function validateScopedFilters(spec: SelectionSpec, scopeOf: (entry: string) => ResourceScope | undefined = builtinScopeOf): string[] {
  if (!usesScopedFilters(spec)) return [];
  const problems: string[] = [];
  const old: string[] = (['includedResources', 'excludedResources'] as const).filter((f) => (spec[f] ?? []).length > 0);
  if (spec.includeClusterResources !== undefined && spec.includeClusterResources !== null) old.push('includeClusterResources');
  if (old.length > 0)
    problems.push(`the scope-specific resource filters (${SCOPED_FIELDS.filter((f) => (spec[f] ?? []).length > 0).join(', ')}) cannot be combined with includedResources, excludedResources or includeClusterResources (set: ${old.join(', ')}); use one style or the other`);

  for (const field of SCOPED_FIELDS) {
    const want: ResourceScope = field.includes('Cluster') ? 'Cluster' : 'Namespaced';
    (spec[field] ?? []).forEach((v, i) => {
      if (v === '*') return;
      if (!RESOURCE_ENTRY_RE.test(v)) {
        problems.push(`${field}[${i}] "${v}" is not a resource name (use a plural or plural.group, e.g. "deployments.apps", or "*")`);
        return;
      }
      const scope = NAMESPACE_ENTRIES.has(v.toLowerCase().split('.')[0] ?? '') ? 'Cluster' : scopeOf(v);
      if (scope !== undefined && scope !== want)
        problems.push(`${field}[${i}] "${v}" is ${scope === 'Cluster' ? 'cluster-scoped' : 'namespaced'}; put it in ${field.replace(want === 'Cluster' ? 'ClusterScoped' : 'NamespaceScoped', want === 'Cluster' ? 'NamespaceScoped' : 'ClusterScoped')}`);
    });
  }
  for (const scope of ['Cluster', 'Namespace'] as const) {
    const incField = `included${scope}ScopedResources` as const;
    const excField = `excluded${scope}ScopedResources` as const;
    const inc = normaliseList(spec[incField], true);
    const exc = normaliseList(spec[excField], true);
    if (inc.includes('*') && inc.length > 1) problems.push(`${incField}: "*" means every resource of its scope and cannot be combined with other entries (${quote(inc.filter((x) => x !== '*'))})`);
    if (exc.includes('*') && exc.length > 1) problems.push(`${excField}: "*" means every resource of its scope and cannot be combined with other entries (${quote(exc.filter((x) => x !== '*'))})`);
    if (exc.includes('*') && inc.length > 0) problems.push(`${excField} contains "*", so ${incField} (${quote(inc)}) can never match`);
    for (const v of inc) if (v !== '*' && exc.includes(v)) problems.push(`resource "${v}" is in both ${incField} and ${excField}`);
  }
  const noNamespaces = normaliseList(spec.excludedNamespaces, false).includes('*');
  if (noNamespaces && normaliseList(spec.includedClusterScopedResources, true).length === 0)
    problems.push('excludedNamespaces contains "*" and includedClusterScopedResources is empty, so nothing would be selected (name the cluster-scoped resources to take, or "*")');
  return problems;
}
