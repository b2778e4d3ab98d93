// What of a backup's scope its requester may read, decided before anything is listed (trust mode
// requester), with as few SubjectAccessReviews as the answers allow: one review of `list` on `*` in `*` first
// (a requester who may list everything needs no other); then, per namespace, the requester's rules
// (SelfSubjectRulesReviews) rule out what no rule could allow, and every "yes" comes from a review.
// Namespace objects need `get` on each (or `list namespaces`). The decision says where each
// resource may be listed, and what is left out in one message per resource: an error when the spec
// named that resource or namespace itself, a warning when it came from a wildcard ("everything I may
// read"). This module only decides; scope.ts asks the API.
import type { AccessReviewer, NamespaceAccess } from '../auth/index.js';
import type { ApiResource } from '../kube/index.js';
import { mapLimit } from '../util/concurrency.js';

/** Where a resource may be listed: everywhere (one cluster-wide LIST is allowed), or only in these namespaces. */
export type Access = { everywhere: true } | { everywhere: false; namespaces: readonly string[] };

export interface ScopeQuestion {
  /** The requester's user name, for messages. */
  who: string;
  /** Namespaced resources in scope (after discovery and the filters), Namespace objects excepted. */
  namespaced: readonly ApiResource[];
  /** Cluster-scoped resources the backup lists in full. */
  cluster: readonly ApiResource[];
  /** The namespaces resource, when the Namespace objects of the namespaces in scope are backed up. */
  namespaceObjects: ApiResource | undefined;
  /** The namespaces in scope. */
  namespaces: readonly string[];
  /** Whether the spec names this resource itself (a literal includedResources entry). */
  named(res: ApiResource): boolean;
  /** Whether the spec names this namespace itself (a literal includedNamespaces entry). */
  namedNamespace(ns: string): boolean;
  /**
   * Whether messages may name namespaces the spec did not name: only when the requester may list
   * namespaces, or a backup of `*` would tell them the names of namespaces they cannot see.
   */
  mayNameNamespaces: boolean;
}

export interface ScopeProblem {
  kind: 'warnings' | 'errors';
  /** The namespace the message is recorded against in the results; '' for the cluster. */
  namespace: string;
  message: string;
  /** The resource whose completeness record gets the message (errors only). */
  groupResource?: string;
}

export interface ScopeDecision {
  /** groupResource -> where it may be listed (Namespace objects: fetched), for every resource in the question. */
  access: Map<string, Access>;
  problems: ScopeProblem[];
  /** Set when nothing in scope may be read: the FailedValidation message. */
  nothingAllowed?: string;
  /** SubjectAccessReviews asked. */
  reviews: number;
}

/** Resources reviewed at once; each also reviews up to 16 namespaces at once. */
const RESOURCE_CONCURRENCY = 16;
const NAMESPACE_CONCURRENCY = 16;
/** Namespaces named in one message before the rest are counted. */
const NAMES_SHOWN = 10;

interface Row {
  res: ApiResource;
  /** `list secrets`, `get namespaces`. */
  verb: string;
  access: NamespaceAccess;
}

type Reviewer = Pick<AccessReviewer, 'review'>;

/**
 * `list` on every resource of every group. RBAC matches a request for resource `*` in group `*`
 * only with a rule for `*` in `*` (a rule naming resources, or limited to names, never matches it),
 * so a yes means every LIST of the scope would be allowed: the one review an admin needs.
 */
export const LIST_EVERYTHING = { verb: 'list', group: '*', resource: '*' } as const;

/**
 * A namespace nobody creates, whose rules are the requester's cluster-wide rules alone. Were it
 * created with RoleBindings, its rules would only grow: more reviews asked, never fewer.
 */
export const CLUSTER_RULES_NAMESPACE = 'stowage-cluster-rules-only';

/** A reviewer that counts the distinct questions asked through it (the real one asks each once). */
export function countingReviewer(reviewer: Reviewer): Reviewer & { asked(): number } {
  const keys = new Set<string>();
  return {
    review: (a) => {
      keys.add([a.verb, a.group, a.resource, a.subresource ?? '', a.namespace ?? '', a.name ?? ''].join('\u0000'));
      return reviewer.review(a);
    },
    asked: () => keys.size,
  };
}

/**
 * The requester's RBAC rules in a namespace (a SelfSubjectRulesReview as them), or undefined when
 * they are not known whole (another authorizer, an error). Only used to skip reviews that cannot
 * say yes; every "yes" still comes from a SubjectAccessReview.
 */
export type RulesSource = (namespace: string) => Promise<readonly ResourceRule[] | undefined>;

export interface ResourceRule {
  verbs: readonly string[];
  apiGroups?: readonly string[];
  resources?: readonly string[];
  resourceNames?: readonly string[];
}

/** Whether any rule could allow `verb` on every object of `res` (a rule limited to names cannot allow a LIST, but is left to the review). */
export function rulesMayAllow(rules: readonly ResourceRule[], verb: string, res: Pick<ApiResource, 'group' | 'resource'>): boolean {
  return rules.some((r) => (r.verbs.includes(verb) || r.verbs.includes('*'))
    && (r.apiGroups ?? []).some((g) => g === '*' || g === res.group)
    && (r.resources ?? []).some((x) => x === '*' || x === res.resource));
}

/** Whether a rule could allow a LIST of every resource of every group (the namespace's LIST_EVERYTHING review may say yes). */
function rulesMayListEverything(rules: readonly ResourceRule[]): boolean {
  return rules.some((r) => (r.verbs.includes('list') || r.verbs.includes('*'))
    && (r.apiGroups ?? []).includes('*') && (r.resources ?? []).includes('*') && (r.resourceNames ?? []).length === 0);
}

/**
 * Each namespace's representative: the first namespace whose rules are known whole and the same.
 * RBAC decides a request without a name (a LIST) from exactly those rules, so one review answers for
 * the namespaces that share them (a team bound to the same role in each of its namespaces). Every
 * LIST still runs as the requester: the API server has the last word on each.
 */
function sameRules(namespaces: readonly string[], known: ReadonlyMap<string, readonly ResourceRule[] | undefined>): Map<string, string> {
  const byKey = new Map<string, string>();
  const rep = new Map<string, string>();
  for (const ns of namespaces) {
    const k = known.get(ns);
    const key = k === undefined ? `\u0000${ns}` : rulesKey(k);
    const first = byKey.get(key) ?? ns;
    byKey.set(key, first);
    rep.set(ns, first);
  }
  return rep;
}

/** The same rules in any order, with the same members in any order, give the same key. */
function rulesKey(rules: readonly ResourceRule[]): string {
  const sorted = (xs: readonly string[] | undefined): string[] => [...(xs ?? [])].sort();
  return JSON.stringify(rules.map((r) => JSON.stringify([sorted(r.verbs), sorted(r.apiGroups), sorted(r.resources), sorted(r.resourceNames)])).sort());
}

/** Asks `ask` once per representative of `namespaces`, and gives each namespace its representative's answer. */
async function perRepresentative(namespaces: readonly string[], rep: ReadonlyMap<string, string>, ask: (ns: string) => Promise<boolean>): Promise<Set<string>> {
  const reps = [...new Set(namespaces.map((ns) => rep.get(ns) ?? ns))];
  const yes = new Set((await mapLimit(reps, NAMESPACE_CONCURRENCY, async (ns) => ({ ns, ok: await ask(ns) }))).filter((a) => a.ok).map((a) => a.ns));
  return new Set(namespaces.filter((ns) => yes.has(rep.get(ns) ?? ns)));
}

export async function decideScope(q: ScopeQuestion, reviewer: Reviewer, rules?: RulesSource): Promise<ScopeDecision> {
  const counted = countingReviewer(reviewer);
  const may = async (a: Parameters<Reviewer['review']>[0]): Promise<boolean> => (await counted.review(a)).allowed;
  const askNamespaced = q.namespaces.length > 0;
  const namespaced = askNamespaced ? q.namespaced : [];
  const namespaceObjects = askNamespaced ? q.namespaceObjects : undefined;
  const access = new Map<string, Access>();
  // Without namespaces in scope nothing namespaced is listed: nothing to allow or deny.
  if (!askNamespaced) for (const r of [...q.namespaced, ...(q.namespaceObjects !== undefined ? [q.namespaceObjects] : [])]) access.set(r.groupResource, { everywhere: false, namespaces: [] });
  const questions = namespaced.length + q.cluster.length + (namespaceObjects !== undefined ? 1 : 0);
  if (questions === 0) return { access, problems: [], reviews: 0 };

  // One review settles a requester who may list everything (an admin): no review per resource.
  // planBackupScope has asked it already (the reviewer's cache answers).
  if (await may({ ...LIST_EVERYTHING, namespace: '' })) {
    for (const r of [...namespaced, ...q.cluster, ...(namespaceObjects !== undefined ? [namespaceObjects] : [])]) access.set(r.groupResource, { everywhere: true });
    return { access, problems: [], reviews: counted.asked() };
  }

  const known = new Map<string, readonly ResourceRule[] | undefined>();
  if (rules !== undefined) for (const [ns, r] of await mapLimit(q.namespaces, NAMESPACE_CONCURRENCY, async (ns) => [ns, await rules(ns)] as const)) known.set(ns, r);
  // The cluster's rules alone: no RoleBinding can be in a namespace that does not exist.
  const clusterRules = rules === undefined ? undefined : await rules(CLUSTER_RULES_NAMESPACE);
  const ruled = [...known.values(), clusterRules].filter((r): r is readonly ResourceRule[] => r !== undefined);
  // Namespaces where a rule lets the requester list everything, and a review says so: every resource may be listed there.
  const starred = q.namespaces.filter((ns) => { const k = known.get(ns); return k !== undefined && rulesMayListEverything(k); });
  const rep = sameRules(q.namespaces, known);
  const open = namespaced.length > 1 ? await perRepresentative(starred, rep, (ns) => may({ ...LIST_EVERYTHING, namespace: ns })) : new Set<string>();

  const rows: Row[] = await mapLimit(namespaced, RESOURCE_CONCURRENCY, async (res) => ({ res, verb: 'list', access: await listAccess(q, may, res, known, ruled, open, rep) }));
  if (namespaceObjects !== undefined) rows.push({ res: namespaceObjects, verb: 'get', access: await namespaceObjectAccess(q, may, known, rep) });
  // Cluster rules are part of every namespace's rules: where some namespace's rules (or the cluster's alone) cannot allow it, the cluster-wide review cannot either.
  const cluster = await mapLimit(q.cluster, RESOURCE_CONCURRENCY, async (res) => ({
    res, allowed: ruled.every((k) => rulesMayAllow(k, 'list', res)) && await may({ verb: 'list', group: res.group, resource: res.resource, namespace: '' }),
  }));

  for (const r of rows) access.set(r.res.groupResource, r.access.everywhere ? { everywhere: true } : { everywhere: false, namespaces: r.access.allowed });
  for (const c of cluster) access.set(c.res.groupResource, c.allowed ? { everywhere: true } : { everywhere: false, namespaces: [] });
  const reviews = counted.asked();

  const anyAllowed = rows.some((r) => r.access.everywhere || r.access.allowed.length > 0) || cluster.some((c) => c.allowed);
  if (!anyAllowed) return { access, problems: [], nothingAllowed: nothingAllowed(q, rows, cluster.map((c) => c.res)), reviews };

  // Messages name the namespaces the spec named, and those whose Namespace object the requester may get (they know it).
  const visible = new Set(rows.find((r) => r.res.groupResource === 'namespaces')?.access.allowed ?? []);
  const phrase = { who: q.who, mayNameNamespaces: q.mayNameNamespaces, namedNamespace: (ns: string) => q.namedNamespace(ns) || visible.has(ns) };
  const problems: ScopeProblem[] = [];
  // Namespaces where nothing at all may be read: one message for them, not one per resource.
  const denied = rows.map((r) => new Set(r.access.denied));
  const fully = rows.length === 0 ? [] : q.namespaces.filter((ns) => denied.every((d) => d.has(ns)));
  const fullySet = new Set(fully);
  const what = verbsPhrase(rows);
  const namedFully = fully.filter((ns) => q.namedNamespace(ns));
  const otherFully = fully.filter((ns) => !q.namedNamespace(ns));
  if (namedFully.length > 0) problems.push(fullyDenied(phrase, 'errors', namedFully, what));
  if (otherFully.length > 0) problems.push(fullyDenied(phrase, 'warnings', otherFully, what));

  for (const r of rows) {
    const left = r.access.denied.filter((ns) => !fullySet.has(ns));
    if (left.length === 0) continue;
    const kind = q.named(r.res) ? 'errors' : 'warnings';
    const where = namespacesPhrase(phrase, left);
    const message = r.res.groupResource === 'namespaces'
      ? `not backing up the Namespace object${left.length > 1 ? 's' : ''} of ${where.text}: ${q.who} may not get ${left.length > 1 ? 'them' : 'it'}${where.note}`
      : `not backing up ${r.res.groupResource} in ${where.text}: ${q.who} may not list them there${where.note}`;
    problems.push({ kind, namespace: where.single, message, ...(kind === 'errors' ? { groupResource: r.res.groupResource } : {}) });
  }
  for (const c of cluster) {
    if (c.allowed) continue;
    const kind = q.named(c.res) ? 'errors' : 'warnings';
    problems.push({ kind, namespace: '', message: `not backing up ${c.res.groupResource}: ${q.who} may not list them`, ...(kind === 'errors' ? { groupResource: c.res.groupResource } : {}) });
  }
  return { access, problems, reviews };
}

type May = (a: Parameters<Reviewer['review']>[0]) => Promise<boolean>;

/**
 * `list res` in each namespace in scope. Namespaces where the requester may list everything need no
 * review; those where their rules hold nothing that could allow it are denied without one. The
 * cluster-wide review is asked only where it may say yes (every namespace's rules could allow it)
 * and could save more than it costs (two namespaces or more left to ask); then one per set of
 * namespaces with the same rules.
 */
async function listAccess(
  q: ScopeQuestion, may: May, res: ApiResource, known: ReadonlyMap<string, readonly ResourceRule[] | undefined>,
  ruled: readonly (readonly ResourceRule[])[], open: ReadonlySet<string>, rep: ReadonlyMap<string, string>,
): Promise<NamespaceAccess> {
  const attrs = { verb: 'list', group: res.group, resource: res.resource };
  const hopeless = (ns: string): boolean => { const k = known.get(ns); return k !== undefined && !rulesMayAllow(k, 'list', res); };
  const candidates = q.namespaces.filter((ns) => !open.has(ns) && !hopeless(ns));
  if (candidates.length > 1 && ruled.every((k) => rulesMayAllow(k, 'list', res)) && await may({ ...attrs, namespace: '' })) {
    return { everywhere: true, allowed: [...q.namespaces], denied: [] };
  }
  const yes = await perRepresentative(candidates, rep, (ns) => may({ ...attrs, namespace: ns }));
  const allowed = (ns: string): boolean => open.has(ns) || yes.has(ns);
  return { everywhere: false, allowed: q.namespaces.filter(allowed), denied: q.namespaces.filter((ns) => !allowed(ns)) };
}

/**
 * Namespace objects: all of them with `list namespaces`, else `get` on each (RBAC reads a Namespace's
 * name as its namespace). The get names the object, so namespaces share a review only where no rule
 * is limited to names.
 */
async function namespaceObjectAccess(
  q: ScopeQuestion, may: May, known: ReadonlyMap<string, readonly ResourceRule[] | undefined>, rep: ReadonlyMap<string, string>,
): Promise<NamespaceAccess> {
  if (await may({ verb: 'list', group: '', resource: 'namespaces', namespace: '' })) return { everywhere: true, allowed: [...q.namespaces], denied: [] };
  const candidates = q.namespaces.filter((ns) => { const k = known.get(ns); return k === undefined || rulesMayAllow(k, 'get', { group: '', resource: 'namespaces' }); });
  const byName = new Map(q.namespaces.map((ns) => [ns, (known.get(ns) ?? []).some((r) => (r.resourceNames ?? []).length > 0) ? ns : (rep.get(ns) ?? ns)]));
  const yes = await perRepresentative(candidates, byName, (ns) => may({ verb: 'get', group: '', resource: 'namespaces', namespace: ns, name: ns }));
  return { everywhere: false, allowed: q.namespaces.filter((ns) => yes.has(ns)), denied: q.namespaces.filter((ns) => !yes.has(ns)) };
}

type Phrasing = Pick<ScopeQuestion, 'who' | 'mayNameNamespaces' | 'namedNamespace'>;

function fullyDenied(q: Phrasing, kind: ScopeProblem['kind'], namespaces: readonly string[], what: string): ScopeProblem {
  const where = namespacesPhrase(q, namespaces);
  return { kind, namespace: where.single, message: `nothing backed up from ${where.text}: ${q.who} may not ${what} there${where.note}` };
}

function nothingAllowed(q: ScopeQuestion, rows: readonly Row[], cluster: readonly ApiResource[]): string {
  const parts: string[] = [];
  let note = '';
  if (rows.length > 0) {
    const where = namespacesPhrase(q, q.namespaces);
    parts.push(`${resourcesPhrase(rows.map((r) => r.res))} in ${where.text}`);
    note = where.note;
  }
  if (cluster.length > 0) parts.push(`${resourcesPhrase(cluster)} (cluster-scoped)`);
  return `${q.who} may not list anything in scope: ${parts.join('; ')}${note}`;
}

/** `secrets`, `secrets and configmaps`, `any of the 45 resources`. */
function resourcesPhrase(res: readonly ApiResource[]): string {
  if (res.length <= 3) return joinOr(res.map((r) => r.groupResource), 'and');
  return `any of the ${res.length} resources`;
}

/** `list secrets`, `list secrets or get namespaces`, `read any of the 45 resources in scope`. */
function verbsPhrase(rows: readonly Row[]): string {
  if (rows.length <= 3) return joinOr(rows.map((r) => `${r.verb} ${r.res.groupResource}`), 'or');
  return `read any of the ${rows.length} resources in scope`;
}

function joinOr(xs: readonly string[], word: string): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} ${word} ${xs[xs.length - 1] ?? ''}`;
}

/**
 * `namespace team-b`, `namespaces a, b and 3 more`, `7 namespaces`: the names the requester may
 * know, the others counted. `single`: the one namespace to record the message against, if named.
 */
export function namespacesPhrase(q: Phrasing, list: readonly string[]): { text: string; note: string; single: string } {
  const named = list.filter((ns) => q.mayNameNamespaces || q.namedNamespace(ns));
  const unnamed = list.length - named.length;
  const shown = named.slice(0, NAMES_SHOWN);
  const more = named.length - shown.length;
  const note = unnamed > 0 ? ` (namespaces not named: ${q.who} may not list namespaces)` : '';
  if (named.length === 0) return { text: `${unnamed} namespace${unnamed === 1 ? '' : 's'}`, note, single: '' };
  if (named.length === 1 && unnamed === 0) return { text: `namespace ${shown[0] ?? ''}`, note, single: shown[0] ?? '' };
  const rest = more + unnamed;
  return { text: `namespaces ${shown.join(', ')}${rest > 0 ? ` and ${rest} more` : ''}`, note, single: '' };
}
