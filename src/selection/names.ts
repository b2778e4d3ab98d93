// Selection of items by name: a Backup's or Restore's includedNames and excludedNames.
//
// An entry is a name pattern, optionally scoped to one resource:
//   app-config                       exactly that name
//   app-*  /  app-[0-9]  /  {a,b}    a glob (selection/globs.ts)
//   regex:^app-[0-9]+$               a regular expression (JavaScript syntax, unanchored: use ^ and $)
//   configmaps/app-*                 only for configmaps (any form resource filters take:
//   deployments.apps/web             plural, plural.group, kind, short name)
//   configmaps/regex:^app-[0-9]$
// Patterns match metadata.name, for namespaced and cluster-scoped objects alike: which namespaces
// are in scope is the namespace filters' business. Namespace objects follow the namespace filters
// only (their name is the namespace).
//
// An item is taken when no exclude entry for its resource matches its name and, if any include
// entry applies to its resource (unscoped entries apply to every resource), one of those matches.
// So `configmaps/app-*` narrows configmaps and leaves every other resource whole.
import { globMatches, globProblem, isGlob } from './globs.js';
// The resource part takes what resource filter entries take.
import { groupResourceString, RESOURCE_ENTRY_RE, resourceEntryMatches, type ResourceLike } from './filters.js';
import type { SelectionSpec } from './spec.js';

export const REGEX_PREFIX = 'regex:';

export interface NamePattern {
  /** The entry as written. */
  readonly entry: string;
  /** The resource the entry is scoped to, or undefined for every resource. */
  readonly resource: string | undefined;
  matches(name: string): boolean;
}

/** A name pattern that cannot be parsed, with why. */
export class NamePatternError extends Error {
  override readonly name = 'NamePatternError';
}

const NAMESPACE_RESOURCES = new Set(['namespaces', 'namespace', 'ns']);
/** Longest pattern accepted: a regex runs against every listed item's name. */
export const MAX_NAME_PATTERN_LENGTH = 1000;

function patternOf(body: string): (name: string) => boolean {
  if (body.startsWith(REGEX_PREFIX)) {
    const source = body.slice(REGEX_PREFIX.length);
    if (source === '') throw new NamePatternError('has no regular expression after "regex:"');
    let re: RegExp;
    try {
      re = new RegExp(source);
    } catch (err) {
      throw new NamePatternError(`is not a valid regular expression: ${err instanceof Error ? err.message : String(err)}`);
    }
    return (name) => re.test(name);
  }
  if (body === '') throw new NamePatternError('has no name after the resource');
  // Object names never hold "/": a second one is a typo (or a namespace, which the namespace filters select).
  if (body.includes('/')) throw new NamePatternError('has more than one "/" (write resource/name; namespaces are selected by includedNamespaces)');
  if (isGlob(body)) {
    const why = globProblem(body);
    if (why !== undefined) throw new NamePatternError(`is not a valid glob: ${why}`);
    return (name) => globMatches(body, name);
  }
  return (name) => name === body;
}

/** Parses one entry; throws NamePatternError saying what is wrong with it. */
export function parseNamePattern(entry: string): NamePattern {
  const e = entry.trim();
  if (e === '') throw new NamePatternError('is empty');
  if (e.length > MAX_NAME_PATTERN_LENGTH) throw new NamePatternError(`is longer than ${MAX_NAME_PATTERN_LENGTH} characters`);
  const slash = e.indexOf('/');
  // A leading "regex:" makes the rest a regex, slashes and all.
  if (e.startsWith(REGEX_PREFIX) || slash < 0) return { entry, resource: undefined, matches: patternOf(e) };
  const resource = e.slice(0, slash);
  if (!RESOURCE_ENTRY_RE.test(resource)) throw new NamePatternError(`scopes to "${resource}", which is not a resource name (use a plural or plural.group, e.g. "deployments.apps/web")`);
  if (NAMESPACE_RESOURCES.has(resource.toLowerCase())) throw new NamePatternError('scopes to namespaces: Namespace objects are selected by includedNamespaces and excludedNamespaces');
  return { entry, resource, matches: patternOf(e.slice(slash + 1)) };
}

export interface NameFilter {
  /** Whether the item is taken: not excluded by name, and included by name when includes apply to its resource. */
  shouldInclude(resource: ResourceLike, name: string): boolean;
  /** Whether an exclude entry for the resource matches the name (dependencies are left out only then). */
  excludes(resource: ResourceLike, name: string): boolean;
  /** Whether some include entry is unscoped, so every resource is narrowed (Namespace objects then come only with items). */
  readonly narrowsEveryResource: boolean;
  /** Whether there are no entries at all. */
  readonly isEmpty: boolean;
}

const isNamespaces = (r: ResourceLike): boolean => r.resource === 'namespaces' && r.group === '';
const appliesTo = (p: NamePattern, r: ResourceLike): boolean => p.resource === undefined || resourceEntryMatches(p.resource, r);

/** Entries that do not parse are dropped: validation (validateNameFilters) refuses them before any run. */
function parseAll(list: readonly string[] | null | undefined): NamePattern[] {
  const out: NamePattern[] = [];
  for (const e of list ?? []) {
    try {
      out.push(parseNamePattern(e));
    } catch (err) {
      if (!(err instanceof NamePatternError)) throw err;
    }
  }
  return out;
}

export function nameFilter(includes: readonly string[] | null | undefined, excludes: readonly string[] | null | undefined): NameFilter {
  const inc = parseAll(includes);
  const exc = parseAll(excludes);
  // The entries that apply to a resource, worked out once per resource: every listed item is checked.
  const cache = new Map<string, { inc: NamePattern[]; exc: NamePattern[] }>();
  const forResource = (r: ResourceLike): { inc: NamePattern[]; exc: NamePattern[] } => {
    const key = `${groupResourceString(r)}|${r.kind ?? ''}`;
    let hit = cache.get(key);
    if (hit === undefined) {
      hit = { inc: inc.filter((p) => appliesTo(p, r)), exc: exc.filter((p) => appliesTo(p, r)) };
      cache.set(key, hit);
    }
    return hit;
  };
  const excluded = (r: ResourceLike, name: string): boolean => exc.length > 0 && !isNamespaces(r) && forResource(r).exc.some((p) => p.matches(name));
  return {
    excludes: excluded,
    shouldInclude(r, name) {
      if (inc.length + exc.length === 0 || isNamespaces(r)) return true;
      if (excluded(r, name)) return false;
      const mine = forResource(r).inc;
      return mine.length === 0 || mine.some((p) => p.matches(name));
    },
    narrowsEveryResource: inc.some((p) => p.resource === undefined),
    isEmpty: inc.length + exc.length === 0,
  };
}


/** Every entry of includedNames/excludedNames that does not parse, each naming the field, index, entry and why. */
export function validateNameFilters(spec: Pick<SelectionSpec, 'includedNames' | 'excludedNames'>): string[] {
  const problems: string[] = [];
  for (const field of ['includedNames', 'excludedNames'] as const) {
    (spec[field] ?? []).forEach((v, i) => {
      try {
        parseNamePattern(v);
      } catch (err) {
        if (!(err instanceof NamePatternError)) throw err;
        problems.push(`${field}[${i}] "${v}" ${err.message}`);
      }
    });
  }
  const inc = new Set((spec.includedNames ?? []).map((e) => e.trim()));
  for (const e of new Set((spec.excludedNames ?? []).map((x) => x.trim()))) {
    if (inc.has(e)) problems.push(`name pattern "${e}" is in both includedNames and excludedNames`);
  }
  return problems;
}
