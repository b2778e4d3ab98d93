// Flag parsing shared by `backup create` and `restore create`: comma lists, booleans, selectors,
// key=value maps, names. Every problem is a UsageError naming the flag.
import { Option, type Command } from 'commander';
import type { LabelSelector } from '../../apis/v1/index.js';
import { parseDuration } from '../../util/duration.js';
import { errorMessage } from '../../util/errors.js';
import { SPEC_LIST_CAPS as CAPS } from '../../selection/filters.js';
import { LabelSelectorParseError, parseLabelSelector } from '../../selection/labels.js';
import type { SelectionSpec } from '../../selection/spec.js';
import { UsageError } from './errors.js';

/** Comma-separated and repeatable: `--x a,b --x c` -> [a, b, c]. */
export function commaList(value: string, previous: string[] | undefined): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return [...(previous ?? []), ...items];
}

export function parseBool(flag: string, value: string | boolean | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === true) return true;
  if (value === false) return false;
  const v = value.toLowerCase();
  if (v === 'true' || v === '1' || v === 'yes') return true;
  if (v === 'false' || v === '0' || v === 'no') return false;
  throw new UsageError(`--${flag} takes true or false, not "${value}" (write --${flag}=false)`);
}

/**
 * Like commaList, but a comma inside (), [] or {} belongs to the pattern: `--include-namespaces
 * 'team-{a,b},db'` is two entries, and so is `--include-names 'regex:^a{2,3}$,web'`.
 */
export function patternList(value: string, previous: string[] | undefined): string[] {
  const items: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of value) {
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth = Math.max(0, depth - 1);
    if (c === ',' && depth === 0) {
      items.push(cur);
      cur = '';
    } else cur += c;
  }
  items.push(cur);
  return [...(previous ?? []), ...items.map((s) => s.trim()).filter((s) => s !== '')];
}

/** The namespace/resource filter flags, added in one go. */
export function addFilterFlags(cmd: Command, what: 'backup' | 'restore'): Command {
  const scope = what === 'backup' ? 'back up' : 'restore';
  return cmd
    .option('--include-namespaces <namespaces>', `namespaces to ${scope}, comma-separated, at most ${CAPS.includedNamespaces}; globs *, ?, [abc], {a,b}; * means all (default: all)`, patternList)
    .option('--exclude-namespaces <namespaces>', `namespaces not to ${scope}, comma-separated globs, at most ${CAPS.excludedNamespaces}`, patternList)
    .option('--include-resources <resources>', `resources to ${scope}, e.g. deployments.apps,configmaps, at most ${CAPS.includedResources}; * means all (default: all)`, commaList)
    .option('--exclude-resources <resources>', `resources not to ${scope}, comma-separated, at most ${CAPS.excludedResources}`, commaList)
    .addOption(
      new Option(
        '--include-cluster-resources [bool]',
        `whether to ${scope} cluster-scoped resources: true or false (default: only those the included namespaces need, or all for a whole-cluster ${what})`,
      ),
    )
    .option('--include-cluster-scoped-resources <resources>', `cluster-scoped resources to ${scope}, e.g. storageclasses,clusterroles; * means all (not with --include-resources, --exclude-resources or --include-cluster-resources)`, commaList)
    .option('--exclude-cluster-scoped-resources <resources>', `cluster-scoped resources not to ${scope}, not even as dependencies; * means none`, commaList)
    .option('--include-namespace-scoped-resources <resources>', `namespaced resources to ${scope}, e.g. deployments.apps,configmaps; * means all (default: all)`, commaList)
    .option('--exclude-namespace-scoped-resources <resources>', `namespaced resources not to ${scope}`, commaList)
    .option('--include-names <patterns>', `only ${scope} items with these names: exact, glob (app-*) or regex:<re>, optionally per resource (configmaps/app-*); comma-separated (a comma inside (), [] or {} stays in the pattern; write a literal comma as [,]); repeatable`, patternList)
    .option('--exclude-names <patterns>', `never ${scope} items with these names (same forms as --include-names); repeatable`, patternList)
    .option('-l, --selector <selector>', `only ${scope} items whose labels match, e.g. app=web,tier!=db`)
    .option('--or-selector <selectors>', `only ${scope} items matching any of these selectors (at most ${CAPS.orLabelSelectors}), separated by " or " (e.g. "app=a or app=b")`);
}

export interface FilterFlags {
  includeNamespaces?: string[];
  excludeNamespaces?: string[];
  includeResources?: string[];
  excludeResources?: string[];
  includeClusterResources?: string | boolean;
  includeClusterScopedResources?: string[];
  excludeClusterScopedResources?: string[];
  includeNamespaceScopedResources?: string[];
  excludeNamespaceScopedResources?: string[];
  includeNames?: string[];
  excludeNames?: string[];
  selector?: string;
  orSelector?: string;
}


/** Flag -> spec field of the list flags added for item selection. */
const SELECTION_LISTS = [
  ['includeClusterScopedResources', 'includedClusterScopedResources'],
  ['excludeClusterScopedResources', 'excludedClusterScopedResources'],
  ['includeNamespaceScopedResources', 'includedNamespaceScopedResources'],
  ['excludeNamespaceScopedResources', 'excludedNamespaceScopedResources'],
  ['includeNames', 'includedNames'],
  ['excludeNames', 'excludedNames'],
] as const;

export function parseSelector(flag: string, text: string): LabelSelector {
  try {
    return parseLabelSelector(text);
  } catch (err) {
    if (err instanceof LabelSelectorParseError) throw new UsageError(`--${flag}: ${err.message}`);
    throw err;
  }
}

/** Refuses (exit 2) with the server's own validation messages, before anything is created. */
export function refuseSpecErrors(problems: readonly string[]): void {
  if (problems.length > 0) throw new UsageError(problems.join('; '));
}

/** True when any filter flag was given (for --from-schedule, which takes none). */
export function hasFilterFlags(f: FilterFlags): boolean {
  return (
    f.includeNamespaces !== undefined ||
    f.excludeNamespaces !== undefined ||
    f.includeResources !== undefined ||
    f.excludeResources !== undefined ||
    f.includeClusterResources !== undefined ||
    f.selector !== undefined ||
    f.orSelector !== undefined ||
    SELECTION_LISTS.some(([flag]) => f[flag] !== undefined)
  );
}

export function filterSpec(f: FilterFlags): SelectionSpec {
  const spec: SelectionSpec = {};
  if (f.includeNamespaces !== undefined) spec.includedNamespaces = f.includeNamespaces;
  if (f.excludeNamespaces !== undefined) spec.excludedNamespaces = f.excludeNamespaces;
  if (f.includeResources !== undefined) spec.includedResources = f.includeResources;
  if (f.excludeResources !== undefined) spec.excludedResources = f.excludeResources;
  const icr = parseBool('include-cluster-resources', f.includeClusterResources);
  if (icr !== undefined) spec.includeClusterResources = icr;
  const scoped = SELECTION_LISTS.slice(0, 4).filter(([flag]) => f[flag] !== undefined);
  const older = (['includeResources', 'excludeResources', 'includeClusterResources'] as const).filter((flag) => f[flag] !== undefined);
  if (scoped.length > 0 && older.length > 0) {
    const dashed = (flag: string): string => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    throw new UsageError(`${scoped.map(([flag]) => dashed(flag)).join(', ')} cannot be used with ${older.map(dashed).join(', ')}: use the scope-specific resource flags or the older ones`);
  }
  for (const [flag, field] of SELECTION_LISTS) {
    const v = f[flag];
    if (v !== undefined) spec[field] = v;
  }
  if (f.selector !== undefined && f.orSelector !== undefined) throw new UsageError('--selector and --or-selector cannot be used together');
  if (f.selector !== undefined) spec.labelSelector = parseSelector('selector', f.selector);
  if (f.orSelector !== undefined) {
    const parts = f.orSelector
      .split(/\s+or\s+/)
      .map((s) => s.trim())
      .filter((s) => s !== '');
    if (parts.length === 0) throw new UsageError('--or-selector needs at least one selector');
    spec.orLabelSelectors = parts.map((p) => parseSelector('or-selector', p));
  }
  return spec;
}

/** `k=v,k2=v2` -> map; repeatable. */
export function keyValueList(flag: string, sep: string) {
  return (value: string, previous: Record<string, string> | undefined): Record<string, string> => {
    const out = { ...(previous ?? {}) };
    for (const part of value.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
      const i = part.indexOf(sep);
      if (i <= 0 || i === part.length - 1) throw new UsageError(`--${flag}: "${part}" is not of the form key${sep}value`);
      out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
    }
    return out;
  };
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A name usable for a Backup or Restore (DNS subdomain; Stowage also keys object storage by it). */
export function checkName(kind: string, name: string): string {
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    throw new UsageError(
      `"${name}" is not a valid ${kind} name: use lower-case letters, digits, "-" and ".", starting and ending with a letter or digit`,
    );
  }
  return name;
}

/** `yyyyMMddHHmmss` in UTC, for generated names. */
export function timestampSuffix(d = new Date()): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

/** A positive Go-style duration flag (`30s`, `2m`), in milliseconds. */
export function parseTimeout(flag: string, text: string): number {
  try {
    const ms = parseDuration(text, `--${flag}`);
    if (ms <= 0) throw new UsageError(`--${flag} must be positive`);
    return ms;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(errorMessage(err));
  }
}

