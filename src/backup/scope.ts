// The scope of a backup in trust mode requester, settled before the run starts: discovery as the
// requester, the namespaces in scope, and what of it the requester may list (rights.ts). The
// controller fails the Backup's validation when nothing in scope may be read; otherwise the engine
// (run.ts) takes the scope and lists only what it allows, through the requester's client.
import type { AccessReviewer } from '../auth/index.js';
import { CORE, isApiUnreachable, type KubeError, type ApiResource, type DynamicClient, type KubeObject } from '../kube/index.js';
import type { Backup } from '../apis/v1/index.js';
import { errorMessage } from '../util/errors.js';
import { resourceEntryMatches } from '../selection/filters.js';
import { isGlob } from '../selection/globs.js';
import type { Selection } from '../selection/compile.js';
import { includedResourceEntries } from '../selection/scopedResources.js';
import { selectResources } from './resources.js';
import { LIST_EVERYTHING, countingReviewer, decideScope, type Access, type ResourceRule, type RulesSource, type ScopeProblem } from './rights.js';

/** What discovery found, and the group versions it could not read (the engine records those). */
export interface Discovery {
  resources: ApiResource[];
  groupErrors: { groupVersion: string; err: KubeError }[];
}

export interface BackupScope {
  /** The requester's user name, for messages. */
  who: string;
  reviewer: AccessReviewer;
  discovery: Discovery;
  /** groupResource -> where it may be listed; resources in scope only. */
  access: ReadonlyMap<string, Access>;
  problems: ScopeProblem[];
  /** Whether the requester may list namespaces (else Namespace objects are fetched one by one, and unnamed in messages). */
  mayListNamespaces: boolean;
  /** The Namespace objects, when they were listed (as the requester) to find the namespaces in scope. */
  namespaceObjects?: KubeObject[];
  /** `checked alice's rights: 90 SubjectAccessReviews in 120 ms`, for the run log. */
  summary: string;
}

export type ScopeOutcome = { scope: BackupScope } | { validationErrors: string[] } | { failure: string };

/** Discovery as `client` sees it; throws (with the reason) when the API did not answer. */
export async function discoverResources(client: DynamicClient): Promise<Discovery> {
  const groupErrors: Discovery['groupErrors'] = [];
  let unreachable: unknown;
  try {
    const resources = await client.discover({
      onGroupError: (groupVersion, err) => {
        // The API gave up on an outage: it is gone, not this group.
        if (isApiUnreachable(err)) unreachable ??= err;
        else groupErrors.push({ groupVersion, err });
      },
    });
    if (unreachable !== undefined) throw unreachable;
    return { resources, groupErrors };
  } catch (err) {
    throw new Error(`discovering the cluster's resources failed: ${errorMessage(err)}`, { cause: err });
  }
}

export interface ScopeDeps {
  /** The requester's (impersonating) client: discovery and, when they may, the namespace list. */
  client: DynamicClient;
  /**
   * The server's own client, used for one thing only: the names of the namespaces a `*` backup
   * covers when the requester may not list namespaces (their contents are still read as the
   * requester, and the names stay out of every message).
   */
  serverClient: DynamicClient;
  reviewer: AccessReviewer;
  pageSize?: number;
  now?: () => number;
}

const SELF_SUBJECT_RULES_REVIEWS = { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectrulesreviews', namespaced: false } as const;

interface SelfSubjectRulesReviewStatus {
  status?: { resourceRules?: ResourceRule[]; incomplete?: boolean };
}

/**
 * The requester's rules per namespace, asked as them (every authenticated user may), once per
 * namespace. Rules that are not complete (another authorizer, an evaluation error) or not
 * answered are unknown: decideScope then asks the reviews it would anyway.
 */
function rulesReviews(client: DynamicClient): { source: RulesSource; count: () => number } {
  const cache = new Map<string, Promise<readonly ResourceRule[] | undefined>>();
  return {
    source: (namespace) => {
      let p = cache.get(namespace);
      if (p === undefined) {
        p = client.create<SelfSubjectRulesReviewStatus>(SELF_SUBJECT_RULES_REVIEWS, undefined, {
          apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace },
        }).then((r) => (r.status !== undefined && r.status.incomplete !== true && Array.isArray(r.status.resourceRules) ? r.status.resourceRules : undefined), () => undefined);
        cache.set(namespace, p);
      }
      return p;
    },
    count: () => cache.size,
  };
}

/**
 * The backup's scope as its requester may read it, or why it cannot run. Never throws. `selection`
 * is the backup's, compiled once for the run (the run's request is built from the same one).
 */
export async function planBackupScope(deps: ScopeDeps, backup: Backup, selection: Selection): Promise<ScopeOutcome> {
  const now = deps.now ?? Date.now;
  const who = deps.reviewer.requester.username;
  let discovery: Discovery;
  try {
    discovery = await discoverResources(deps.client);
  } catch (err) {
    return { failure: errorMessage(err) };
  }
  // Discovery is not counted: the run would make it anyway (and uses this one).
  const t0 = now();
  try {
    const byGroupResource = new Map(discovery.resources.map((r) => [r.groupResource, r]));
    const taken = selectResources(discovery.resources, selection.resources, selection.clusterScopedInFull);
    const nsRes = byGroupResource.get('namespaces') ?? CORE.namespaces;
    // Every review goes through `reviewer`, which counts each question once (decideScope asks LIST_EVERYTHING again: cached).
    const reviewer = countingReviewer(deps.reviewer);
    const mayListEverything = (await reviewer.review({ ...LIST_EVERYTHING, namespace: '' })).allowed;
    const mayListNamespaces = mayListEverything || (await reviewer.review({ verb: 'list', group: '', resource: 'namespaces', namespace: '' })).allowed;
    const spec = backup.spec;
    const namedNamespaces = new Set((spec.includedNamespaces ?? []).map((n) => n.trim()).filter((n) => n !== '' && !isGlob(n)));
    const literals = includedResourceEntries(spec);

    let namespaces: string[] = [];
    let namespaceObjects: KubeObject[] | undefined;
    if (taken.namespaced.length > 0 || taken.namespaces !== undefined) {
      const literal = selection.namespaces.literalIncludes();
      if (literal !== undefined) namespaces = literal;
      else {
        const listed = (await (mayListNamespaces ? deps.client : deps.serverClient).listAll(nsRes, { pageSize: deps.pageSize ?? 500 })).items;
        if (mayListNamespaces) namespaceObjects = listed;
        namespaces = listed.map((n) => n.metadata?.name ?? '').filter((n) => n !== '' && selection.namespaces.shouldInclude(n));
      }
    }
    const rules = rulesReviews(deps.client);
    const decision = await decideScope({
      who, namespaced: taken.namespaced, cluster: taken.cluster, namespaceObjects: taken.namespaces, namespaces,
      named: (res) => literals.some((e) => resourceEntryMatches(e, res)),
      namedNamespace: (ns) => namedNamespaces.has(ns),
      mayNameNamespaces: mayListNamespaces,
    }, reviewer, rules.source);
    const reviews = reviewer.asked();
    if (decision.nothingAllowed !== undefined) return { validationErrors: [decision.nothingAllowed] };
    return {
      scope: {
        who, reviewer: deps.reviewer, discovery, access: decision.access, problems: decision.problems, mayListNamespaces,
        ...(namespaceObjects !== undefined ? { namespaceObjects } : {}),
        summary: `checked ${who}'s rights to the backup's scope: ${reviews} SubjectAccessReviews${rules.count() > 0 ? ` (and ${rules.count()} SelfSubjectRulesReviews)` : ''} in ${Math.round(now() - t0)} ms`,
      },
    };
  } catch (err) {
    return { failure: `checking ${who}'s rights to the backup's scope failed: ${errorMessage(err)}` };
  }
}
