// Include/exclude matching for namespaces and resources, and validation of a spec's filters.
// Semantics: an empty include list or "*" includes everything; excludes always win.

import { globMatches, globProblem, isGlob } from './globs.js';
import { isEmptyLabelSelector, validateLabelSelector } from './labels.js';
import type { ScopedResourceFields, SelectionSpec } from './spec.js';

export interface IncludesExcludes<T> {
  readonly includes: readonly string[];
  readonly excludes: readonly string[];
  shouldInclude(item: T): boolean;
  /** Nothing is excluded and the includes are empty or "*". */
  includesEverything(): boolean;
  /** "*" is excluded, so nothing can be included. */
  excludesEverything(): boolean;
}

/** Trimmed (lowercased when `lower`), without empty entries and duplicates. */
export function normaliseList(list: readonly string[] | null | undefined, lower: boolean): string[] {
  const out: string[] = [];
  for (const raw of list ?? []) {
    const v = lower ? raw.trim().toLowerCase() : raw.trim();
    if (v !== '' && !out.includes(v)) out.push(v);
  }
  return out;
}

function makeIncludesExcludes<T>(
  includes: string[],
  excludes: string[],
  matches: (pattern: string, item: T) => boolean,
): IncludesExcludes<T> {
  const includeAll = includes.length === 0 || includes.includes('*');
  const excludeAll = excludes.includes('*');
  return {
    includes,
    excludes,
    shouldInclude(item: T): boolean {
      if (excludeAll) return false;
      if (excludes.some((p) => matches(p, item))) return false;
      return includeAll || includes.some((p) => matches(p, item));
    },
    includesEverything: () => includeAll && excludes.length === 0,
    excludesEverything: () => excludeAll,
  };
}

// ---- namespaces -------------------------------------------------------------------------------

/** Whether a namespace matches a glob: see selection/globs.ts (`*`, `?`, `[abc]`, `{a,b}`). */
export { globMatches };

export interface NamespaceFilter extends IncludesExcludes<string> {
  /**
   * The included namespaces when every include is a literal name (so a caller can list per
   * namespace), without the excluded ones; undefined when includes are empty or use wildcards.
   */
  literalIncludes(): string[] | undefined;
}

const isPattern = isGlob;

export function namespaceFilter(
  includes: readonly string[] | null | undefined,
  excludes: readonly string[] | null | undefined,
): NamespaceFilter {
  const inc = normaliseList(includes, false);
  const exc = normaliseList(excludes, false);
  // Literal names are looked up in a set and only patterns are tried one by one: a backup that
  // names hundreds of namespaces checks every listed item against them.
  const split = (list: string[]): { names: Set<string>; patterns: string[] } => ({
    names: new Set(list.filter((p) => !isPattern(p))),
    patterns: list.filter(isPattern),
  });
  const i = split(inc);
  const e = split(exc);
  const matches = (set: { names: Set<string>; patterns: string[] }, name: string): boolean => set.names.has(name) || set.patterns.some((p) => globMatches(p, name));
  const base: IncludesExcludes<string> = {
    ...makeIncludesExcludes<string>(inc, exc, globMatches),
    shouldInclude(name: string): boolean {
      if (matches(e, name)) return false;
      return inc.length === 0 || matches(i, name);
    },
  };
  return {
    ...base,
    literalIncludes(): string[] | undefined {
      if (inc.length === 0 || inc.some(isPattern)) return undefined;
      return inc.filter((n) => base.shouldInclude(n));
    },
  };
}

// ---- resources --------------------------------------------------------------------------------

/** What a resource filter matches against: an ApiResource from discovery, or a parsed group-resource. */
export interface ResourceLike {
  /** Plural, e.g. `deployments`. */
  resource: string;
  /** '' for the core group. */
  group: string;
  kind?: string;
  singularName?: string;
  shortNames?: readonly string[];
  /** Known from discovery or the archive; only the scope-specific filters need it (else selection/filters.ts guesses from built-in names). */
  namespaced?: boolean;
}

/** `deployments.apps` -> {resource: 'deployments', group: 'apps'}; `configmaps` -> group ''. */
export function parseGroupResource(groupResource: string): ResourceLike {
  const dot = groupResource.indexOf('.');
  if (dot < 0) return { resource: groupResource, group: '' };
  return { resource: groupResource.slice(0, dot), group: groupResource.slice(dot + 1) };
}

/** `deployments.apps`, or `configmaps` for the core group. */
export function groupResourceString(r: ResourceLike): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

/**
 * Whether a filter entry names the resource. Accepted forms (case-insensitive): `*`, the plural
 * (`deployments`, any group), `plural.group` (`deployments.apps`), the kind (`Deployment`),
 * `kind.group`, the singular name and short names when known.
 */
export function resourceEntryMatches(pattern: string, r: ResourceLike): boolean {
  const p = pattern.trim().toLowerCase();
  if (p === '*') return true;
  const group = r.group.toLowerCase();
  const names = [r.resource, r.kind, r.singularName].filter((n): n is string => !!n).map((n) => n.toLowerCase());
  for (const n of names) {
    if (p === n) return true;
    if (group && p === `${n}.${group}`) return true;
  }
  return (r.shortNames ?? []).some((s) => s.toLowerCase() === p);
}

/** A resource filter: either style of spec fields (includedResources..., or Velero's scope-specific lists). */
export interface ResourceFilter extends IncludesExcludes<ResourceLike | string> {
  /** Whether an exclude entry names the resource (or "*" excludes every one of its scope). */
  excludesExplicitly(item: ResourceLike | string): boolean;
  /**
   * Whether an item of the resource may come into a backup as a dependency of a backed-up item.
   * includedResources: only resources the filter includes (so `[pods]` leaves their claims out);
   * the scope-specific lists: every resource no exclude entry names, as Velero decides.
   */
  admitsDependency(item: ResourceLike): boolean;
  readonly style: 'resources' | 'scoped';
}

export function resourceFilter(
  includes: readonly string[] | null | undefined,
  excludes: readonly string[] | null | undefined,
): ResourceFilter {
  const matches = (p: string, item: ResourceLike | string): boolean => resourceEntryMatches(p, typeof item === 'string' ? parseGroupResource(item) : item);
  const base = makeIncludesExcludes<ResourceLike | string>(normaliseList(includes, true), normaliseList(excludes, true), matches);
  return {
    ...base,
    excludesExplicitly: (item) => base.excludes.some((p) => matches(p, item)),
    admitsDependency: (item) => base.shouldInclude(item),
    style: 'resources',
  };
}

/** Whether a spec sets any of Velero's scope-specific resource lists (then the older three fields must be unset). */
export function usesScopedFilters(spec: ScopedResourceFields): boolean {
  return [spec.includedClusterScopedResources, spec.excludedClusterScopedResources, spec.includedNamespaceScopedResources, spec.excludedNamespaceScopedResources]
    .some((l) => (l ?? []).length > 0);
}

/**
 * Whether cluster-scoped resources are selected. `true`/`false` decide; when unset they are
 * included only if the namespace filter includes everything (all namespaces, none excluded).
 */
export function includesClusterScoped(
  includeClusterResources: boolean | null | undefined,
  namespaces: IncludesExcludes<string>,
): boolean {
  if (includeClusterResources === true) return true;
  if (includeClusterResources === false) return false;
  return namespaces.includesEverything();
}

// ---- validation -------------------------------------------------------------------------------

/**
 * The longest lists a Backup, Restore or Schedule spec may carry, checked before anything else.
 * Each bounds work a run would otherwise do without limit, far above anything written by hand:
 * - namespace lists: a run checks every listed item against them, and a long literal list is one
 *   cluster-wide LIST per resource (backup/run.ts listUnits); 1,000 names is a fifth of the
 *   largest clusters Kubernetes' own scalability limits describe (10,000 namespaces), and a set
 *   that large is better named by a pattern ("team-*") or a label selector;
 * - resource lists: matched against every resource discovery returns (and, on restore, every
 *   item); a cluster serves about 60 resources of its own, and even operators that install
 *   close to a thousand CRDs stay well under 2,000;
 * - orLabelSelectors: every selector is one more LIST of each resource in each scope, so 16
 *   selectors already multiply a backup's LISTs sixteenfold;
 * - namespaceMapping: one entry per source namespace, so the namespace cap.
 * - the scope-specific resource lists: as the resource lists;
 * - includedNames/excludedNames: every entry may be tried on every item's name, and a set of
 *   names longer than the namespace cap is better named by a pattern or a label.
 */
export const SPEC_LIST_CAPS = {
  includedNamespaces: 1000,
  excludedNamespaces: 1000,
  includedResources: 2000,
  excludedResources: 2000,
  includedClusterScopedResources: 2000,
  excludedClusterScopedResources: 2000,
  includedNamespaceScopedResources: 2000,
  excludedNamespaceScopedResources: 2000,
  includedNames: 1000,
  excludedNames: 1000,
  orLabelSelectors: 16,
  namespaceMapping: 1000,
} as const;

function overCap(field: string, length: number, cap: number, hint: string): string {
  return `${field} has ${length} entries, more than the ${cap} allowed; ${hint}`;
}

/** The lists of a spec longer than SPEC_LIST_CAPS allows, each naming the field, its length and the cap. */
export function validateListCaps(spec: SelectionSpec): string[] {
  const problems: string[] = [];
  const check = (field: string, list: readonly unknown[] | null | undefined, cap: number, hint: string): void => {
    if ((list ?? []).length > cap) problems.push(overCap(field, (list ?? []).length, cap, hint));
  };
  const nsHint = 'name a larger set with a pattern (e.g. "team-*") or a label selector';
  const incHint = 'include "*" and exclude what to leave out instead';
  const excHint = 'include what to keep instead';
  check('includedNamespaces', spec.includedNamespaces, SPEC_LIST_CAPS.includedNamespaces, nsHint);
  check('excludedNamespaces', spec.excludedNamespaces, SPEC_LIST_CAPS.excludedNamespaces, nsHint);
  check('includedResources', spec.includedResources, SPEC_LIST_CAPS.includedResources, incHint);
  check('excludedResources', spec.excludedResources, SPEC_LIST_CAPS.excludedResources, excHint);
  for (const f of ['includedClusterScopedResources', 'excludedClusterScopedResources', 'includedNamespaceScopedResources', 'excludedNamespaceScopedResources'] as const)
    check(f, spec[f], SPEC_LIST_CAPS[f], f.startsWith('included') ? incHint : excHint);
  check('includedNames', spec.includedNames, SPEC_LIST_CAPS.includedNames, 'name a larger set with a glob, a "regex:" pattern or a label selector');
  check('excludedNames', spec.excludedNames, SPEC_LIST_CAPS.excludedNames, 'name a larger set with a glob, a "regex:" pattern or a label selector');
  check('restoreStatus.includedResources', spec.restoreStatus?.includedResources, SPEC_LIST_CAPS.includedResources, incHint);
  check('restoreStatus.excludedResources', spec.restoreStatus?.excludedResources, SPEC_LIST_CAPS.excludedResources, excHint);
  check('orLabelSelectors', spec.orLabelSelectors, SPEC_LIST_CAPS.orLabelSelectors, 'each one is another LIST of every resource; combine them with "In" expressions');
  return problems;
}

export type ResourceScope = 'Namespaced' | 'Cluster';

export interface ValidateFiltersOptions {
  /**
   * Scope of a resource entry as written in the spec, from discovery when available; undefined
   * when unknown (no scope-based check is made then). Defaults to a table of built-in resources.
   */
  scopeOf?: (entry: string) => ResourceScope | undefined;
}

// Built-in cluster-scoped resources, by plural and kind (lowercase). `namespaces` is left out on
// purpose: the Namespace objects of selected namespaces go with them whatever the setting.
const BUILTIN_CLUSTER_SCOPED = new Set([
  'nodes', 'node', 'persistentvolumes', 'persistentvolume', 'pv', 'storageclasses', 'storageclass', 'sc',
  'clusterroles', 'clusterrole', 'clusterrolebindings', 'clusterrolebinding',
  'customresourcedefinitions', 'customresourcedefinition', 'crd', 'crds',
  'priorityclasses', 'priorityclass', 'pc', 'csidrivers', 'csidriver', 'csinodes', 'csinode',
  'volumeattachments', 'volumeattachment', 'ingressclasses', 'ingressclass', 'runtimeclasses', 'runtimeclass',
  'mutatingwebhookconfigurations', 'mutatingwebhookconfiguration',
  'validatingwebhookconfigurations', 'validatingwebhookconfiguration',
  'apiservices', 'apiservice', 'certificatesigningrequests', 'certificatesigningrequest', 'csr',
  'volumesnapshotclasses', 'volumesnapshotclass', 'volumesnapshotcontents', 'volumesnapshotcontent',
]);
const BUILTIN_NAMESPACED = new Set([
  'pods', 'pod', 'po', 'services', 'service', 'svc', 'configmaps', 'configmap', 'cm', 'secrets', 'secret',
  'serviceaccounts', 'serviceaccount', 'sa', 'persistentvolumeclaims', 'persistentvolumeclaim', 'pvc',
  'deployments', 'deployment', 'deploy', 'replicasets', 'replicaset', 'rs', 'statefulsets', 'statefulset', 'sts',
  'daemonsets', 'daemonset', 'ds', 'jobs', 'job', 'cronjobs', 'cronjob', 'cj', 'roles', 'role',
  'rolebindings', 'rolebinding', 'ingresses', 'ingress', 'ing', 'networkpolicies', 'networkpolicy', 'netpol',
  'limitranges', 'limitrange', 'limits', 'resourcequotas', 'resourcequota', 'quota', 'endpoints', 'ep',
  'endpointslices', 'endpointslice', 'poddisruptionbudgets', 'poddisruptionbudget', 'pdb',
  'horizontalpodautoscalers', 'horizontalpodautoscaler', 'hpa', 'volumesnapshots', 'volumesnapshot',
  'leases', 'lease', 'events', 'event', 'ev',
]);

/** Scope of a built-in resource entry (`pvc`, `PersistentVolume`, `clusterroles.rbac.authorization.k8s.io`). */
export function builtinScopeOf(entry: string): ResourceScope | undefined {
  const name = entry.trim().toLowerCase().split('.')[0] ?? '';
  if (BUILTIN_CLUSTER_SCOPED.has(name)) return 'Cluster';
  if (BUILTIN_NAMESPACED.has(name)) return 'Namespaced';
  return undefined;
}

const NAMESPACE_NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAMESPACE_GLOB_CHARS_RE = /^[-a-z0-9*?[\]{},]+$/;
const NAMESPACE_ENTRY_HINT = '(lowercase letters, digits and "-", with the wildcards "*", "?", "[abc]", "[a-z]" and "{a,b}")';

/** Why a namespace filter entry is neither a namespace name nor a valid pattern, or undefined. */
export function namespaceEntryProblem(v: string): string | undefined {
  if (!isGlob(v)) return v.length > 63 || !NAMESPACE_NAME_RE.test(v) ? `is not a valid namespace name or pattern ${NAMESPACE_ENTRY_HINT}` : undefined;
  // A pattern may be longer than a name: "{team-alpha,team-beta,...}" names several.
  if (v.length > 253 || !NAMESPACE_GLOB_CHARS_RE.test(v)) return `is not a valid namespace name or pattern ${NAMESPACE_ENTRY_HINT}`;
  const why = globProblem(v);
  return why === undefined ? undefined : `is not a valid namespace pattern: ${why}`;
}
export const RESOURCE_ENTRY_RE = /^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$/;

const quoteList = (xs: readonly string[]): string => xs.map((x) => `"${x}"`).join(', ');

/**
 * Every problem with a spec's filters, each a complete sentence naming the fields involved.
 * Empty when the filters are consistent.
 */
export function validateFilters(spec: SelectionSpec, opts: ValidateFiltersOptions = {}): string[] {
  // An over-long list is reported alone: the checks below compare entries pairwise, and one
  // message per bad entry of 5,000 would not fit in the status either.
  const capped = validateListCaps(spec);
  if (capped.length > 0) return capped;
  const lists: FilterLists = {
    incNs: normaliseList(spec.includedNamespaces, false),
    excNs: normaliseList(spec.excludedNamespaces, false),
    incRes: normaliseList(spec.includedResources, true),
    excRes: normaliseList(spec.excludedResources, true),
  };
  return [
    ...entryProblems(spec),
    ...includeExcludeProblems(lists),
    ...selectorProblems(spec),
    ...clusterScopeProblems(spec, lists, opts.scopeOf ?? builtinScopeOf),
  ];
}

interface FilterLists {
  incNs: string[];
  excNs: string[];
  incRes: string[];
  excRes: string[];
}

/** Entry syntax of the namespace and resource lists. */
function entryProblems(spec: SelectionSpec): string[] {
  const problems: string[] = [];
  for (const field of ['includedNamespaces', 'excludedNamespaces'] as const) {
    (spec[field] ?? []).forEach((v, i) => {
      const why = namespaceEntryProblem(v);
      if (why !== undefined) problems.push(`${field}[${i}] "${v}" ${why}`);
    });
  }
  for (const field of ['includedResources', 'excludedResources'] as const) {
    (spec[field] ?? []).forEach((v, i) => {
      if (v !== '*' && !RESOURCE_ENTRY_RE.test(v))
        problems.push(`${field}[${i}] "${v}" is not a resource name (use a plural or plural.group, e.g. "deployments.apps", or "*")`);
    });
  }
  return problems;
}

/** "*" mixed with names, and the same entry on both sides. */
function includeExcludeProblems({ incNs, excNs, incRes, excRes }: FilterLists): string[] {
  const problems: string[] = [];
  const pairChecks = [
    { inc: incNs, exc: excNs, incField: 'includedNamespaces', excField: 'excludedNamespaces', noun: 'namespace' },
    { inc: incRes, exc: excRes, incField: 'includedResources', excField: 'excludedResources', noun: 'resource' },
  ];
  for (const { inc, exc, incField, excField, noun } of pairChecks) {
    if (inc.includes('*') && inc.length > 1)
      problems.push(
        `${incField}: "*" means every ${noun} and cannot be combined with other entries (${quoteList(inc.filter((x) => x !== '*'))})`,
      );
    if (exc.includes('*') && inc.length > 0)
      problems.push(`${excField} contains "*", which excludes every ${noun}, so ${incField} (${quoteList(inc)}) can never match`);
    for (const v of inc) {
      if (v === '*') continue;
      if (exc.includes(v)) problems.push(`${noun} "${v}" is in both ${incField} and ${excField}`);
      else if (noun === 'namespace' && !isGlob(v)) {
        const by = exc.find((p) => p !== '*' && isGlob(p) && globMatches(p, v));
        if (by) problems.push(`namespace "${v}" is in includedNamespaces but excludedNamespaces pattern "${by}" excludes it`);
      }
    }
  }
  if (excRes.includes('*') && incRes.length === 0)
    problems.push('excludedResources contains "*", which excludes every resource, so nothing would be selected');
  return problems;
}

function selectorProblems(spec: SelectionSpec): string[] {
  const problems: string[] = [];
  const ors = spec.orLabelSelectors ?? [];
  if (!isEmptyLabelSelector(spec.labelSelector) && ors.length > 0)
    problems.push('labelSelector and orLabelSelectors cannot both be set; use labelSelector alone or put it into orLabelSelectors');
  problems.push(...validateLabelSelector(spec.labelSelector, 'labelSelector'));
  ors.forEach((s, i) => problems.push(...validateLabelSelector(s, `orLabelSelectors[${i}]`)));
  return problems;
}

/** The namespace filters and named resources against includeClusterResources. */
function clusterScopeProblems(spec: SelectionSpec, { incNs, excNs, incRes }: FilterLists, scopeOf: (entry: string) => ResourceScope | undefined): string[] {
  const problems: string[] = [];
  const icr = spec.includeClusterResources;
  const clusterIncluded = includesClusterScoped(icr, namespaceFilter(incNs, excNs));
  const namedRes = incRes.filter((r) => r !== '*');
  const scopes = namedRes.map((r) => ({ r, scope: scopeOf(r) }));
  const clusterNamed = scopes.filter((s) => s.scope === 'Cluster').map((s) => s.r);
  const allKnown = namedRes.length > 0 && scopes.every((s) => s.scope !== undefined);
  const allCluster = allKnown && clusterNamed.length === namedRes.length;
  const allNamespaced = allKnown && clusterNamed.length === 0;

  // The scope-specific lists decide on cluster-scoped resources themselves (selection/scopedResources.ts).
  if (excNs.includes('*') && icr !== true && !usesScopedFilters(spec))
    problems.push(
      `excludedNamespaces contains "*" and includeClusterResources is ${icr === false ? 'false' : 'not set'}, so nothing would be selected (set includeClusterResources: true to back up only cluster-scoped resources)`,
    );
  if (icr === false) {
    for (const r of clusterNamed)
      problems.push(`includedResources names cluster-scoped "${r}", but includeClusterResources is false`);
  } else if (icr !== true && allCluster && !clusterIncluded) {
    problems.push(
      `includedResources (${quoteList(namedRes)}) are all cluster-scoped, but cluster-scoped resources are only included with a namespace filter when includeClusterResources is true`,
    );
  }
  if (excNs.includes('*') && icr === true && allNamespaced)
    problems.push(`includedResources (${quoteList(namedRes)}) are all namespaced, but excludedNamespaces "*" excludes every namespace`);
  return problems;
}

/**
 * Problems with a restore's namespaceMapping: invalid names, and sources the filters exclude
 * (whose mapping could never apply).
 */
export function validateNamespaceMapping(
  mapping: Record<string, string> | null | undefined,
  filters: Pick<SelectionSpec, 'includedNamespaces' | 'excludedNamespaces'> = {},
): string[] {
  const entries = Object.keys(mapping ?? {}).length;
  if (entries > SPEC_LIST_CAPS.namespaceMapping)
    return [overCap('namespaceMapping', entries, SPEC_LIST_CAPS.namespaceMapping, 'restore fewer namespaces per Restore')];
  const problems: string[] = [];
  const ns = namespaceFilter(filters.includedNamespaces, filters.excludedNamespaces);
  const nameRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  for (const [from, to] of Object.entries(mapping ?? {})) {
    if (!nameRe.test(from) || from.length > 63)
      problems.push(`namespaceMapping key "${from}" is not a valid namespace name`);
    if (typeof to !== 'string' || !nameRe.test(to) || to.length > 63)
      problems.push(`namespaceMapping["${from}"] = "${String(to)}" is not a valid namespace name`);
    else if (!ns.shouldInclude(from))
      problems.push(`namespaceMapping maps "${from}", but the namespace filters exclude "${from}"`);
  }
  return problems;
}
