// What of a backup's scope its requester may read, decided before anything is listed (trust mode
// requester). Every resource in scope gets a SubjectAccessReview for `list`, everywhere first and
// then per namespace; Namespace objects need `get` on each (or `list namespaces`). The decision
// says where each resource may be listed, and what is left out in one message per resource:
// an error when the spec named that resource or namespace itself, a warning when it came from a
// wildcard ("everything I may read"). This module only decides; scope.ts asks the API.
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

/** Resources reviewed at once; each also reviews up to 16 namespaces at once (access.ts). */
const RESOURCE_CONCURRENCY = 16;
/** Namespaces named in one message before the rest are counted. */
const NAMES_SHOWN = 10;

interface Row {
  res: ApiResource;
  /** `list secrets`, `get namespaces`. */
  verb: string;
  access: NamespaceAccess;
}

type Reviewer = Pick<AccessReviewer, 'review' | 'inNamespaces'>;

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

export async function decideScope(q: ScopeQuestion, reviewer: Reviewer, rules?: RulesSource): Promise<ScopeDecision> {
  let reviews = 0;
  const count = (a: { access: NamespaceAccess; reviews: number }): NamespaceAccess => {
    reviews += a.reviews;
    return a.access;
  };
  const askNamespaced = q.namespaces.length > 0;
  const rows: Row[] = askNamespaced
    ? await mapLimit(q.namespaced, RESOURCE_CONCURRENCY, async (res) => ({ res, verb: 'list', access: count(await listAccess(q, reviewer, res, rules)) }))
    : [];
  if (askNamespaced && q.namespaceObjects !== undefined) rows.push({ res: q.namespaceObjects, verb: 'get', access: await namespaceObjectAccess(q, reviewer, rules, () => reviews++) });
  const cluster = await mapLimit(q.cluster, RESOURCE_CONCURRENCY, async (res) => {
    reviews++;
    return { res, allowed: (await reviewer.review({ verb: 'list', group: res.group, resource: res.resource, namespace: '' })).allowed };
  });

  const access = new Map<string, Access>();
  for (const r of rows) access.set(r.res.groupResource, r.access.everywhere ? { everywhere: true } : { everywhere: false, namespaces: r.access.allowed });
  for (const c of cluster) access.set(c.res.groupResource, c.allowed ? { everywhere: true } : { everywhere: false, namespaces: [] });
  // Without namespaces in scope nothing namespaced is listed: nothing to allow or deny.
  if (!askNamespaced) for (const r of [...q.namespaced, ...(q.namespaceObjects !== undefined ? [q.namespaceObjects] : [])]) access.set(r.groupResource, { everywhere: false, namespaces: [] });

  const anyAllowed = rows.some((r) => r.access.everywhere || r.access.allowed.length > 0) || cluster.some((c) => c.allowed);
  if (!anyAllowed && (rows.length > 0 || cluster.length > 0)) {
    return { access, problems: [], nothingAllowed: nothingAllowed(q, rows, cluster.map((c) => c.res)), reviews };
  }

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

/**
 * `list res` in each namespace in scope: the cluster-wide review, then (when it says no) one per
 * namespace, skipping those where the requester's rules hold nothing that could allow it. A
 * backup of `*` by a team user asks a few reviews per namespace, not one per resource per namespace.
 */
async function listAccess(q: ScopeQuestion, reviewer: Reviewer, res: ApiResource, rules: RulesSource | undefined): Promise<{ access: NamespaceAccess; reviews: number }> {
  const attrs = { verb: 'list', group: res.group, resource: res.resource };
  const asked = (a: NamespaceAccess, namespaces: number): { access: NamespaceAccess; reviews: number } => ({ access: a, reviews: 1 + (a.everywhere ? 0 : namespaces) });
  if (rules === undefined || (await reviewer.review({ ...attrs, namespace: '' })).allowed) return asked(await reviewer.inNamespaces(attrs, q.namespaces), q.namespaces.length);
  const known = await Promise.all(q.namespaces.map(async (ns) => ({ ns, rules: await rules(ns) })));
  const hopeless = new Set(known.filter((k) => k.rules !== undefined && !rulesMayAllow(k.rules, 'list', res)).map((k) => k.ns));
  const candidates = q.namespaces.filter((ns) => !hopeless.has(ns));
  const a = await reviewer.inNamespaces(attrs, candidates);
  const denied = new Set(a.denied);
  return asked({ everywhere: false, allowed: a.allowed, denied: q.namespaces.filter((ns) => hopeless.has(ns) || denied.has(ns)) }, candidates.length);
}

/** Namespace objects: all of them with `list namespaces`, else `get` on each (RBAC reads a Namespace's name as its namespace). */
async function namespaceObjectAccess(q: ScopeQuestion, reviewer: Reviewer, rules: RulesSource | undefined, counted: () => void): Promise<NamespaceAccess> {
  counted();
  if ((await reviewer.review({ verb: 'list', group: '', resource: 'namespaces', namespace: '' })).allowed) return { everywhere: true, allowed: [...q.namespaces], denied: [] };
  const answers = await mapLimit(q.namespaces, 16, async (ns) => {
    const known = await rules?.(ns);
    if (known !== undefined && !rulesMayAllow(known, 'get', { group: '', resource: 'namespaces' })) return { ns, ok: false };
    counted();
    return { ns, ok: (await reviewer.review({ verb: 'get', group: '', resource: 'namespaces', namespace: ns, name: ns })).allowed };
  });
  return { everywhere: false, allowed: answers.filter((a) => a.ok).map((a) => a.ns), denied: answers.filter((a) => !a.ok).map((a) => a.ns) };
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
