// Whether a restore may go where it is asked to, in trust mode "requester": before anything is
// written, each target namespace (after namespaceMapping) must be one where the requester may
// create at least one of the kinds the backup holds for it. A namespace where they may create none
// is refused with its name, so a restore mapped into kube-system fails validation instead of
// failing item by item. Everything finer (this Role, that Deployment) is the API server's to
// decide on each impersonated write: no per-item review is made here.
import type { AccessReviewer, HeldResources } from '../auth/index.js';
import { mapLimit } from '../util/concurrency.js';
import { parseGroupResource } from '../selection/filters.js';
import type { ResourceList } from '../persistence/results.js';
import { neverRestoredReason } from './kinds.js';
import { targetNamespace, type RestoreRequest } from './request.js';

/** A namespace the restore writes into, the backup's namespaces mapped onto it, and the kinds it would create there. */
export interface TargetNamespace {
  namespace: string;
  /** Source namespaces (more than one when a mapping merges them). */
  sources: string[];
  /** Group-resources (`configmaps`, `deployments.apps`), sorted. */
  kinds: string[];
}

export interface RightsVerdict {
  /** One message per refused namespace, in namespace order. */
  refused: string[];
  /** SubjectAccessReviews asked (each (kind, namespace) at most once). */
  reviews: number;
}

/** How many kinds a refusal names before "and N more". */
const KINDS_NAMED = 12;

type TargetRequest = Pick<RestoreRequest, 'namespaces' | 'resources' | 'namespaceMapping'>;
type SourceRequest = Pick<RestoreRequest, 'namespaces' | 'resources' | 'includeClusterScoped' | 'includeRelatedClusterScoped'>;

function collect(
  entries: Iterable<{ groupResource: string; namespace: string }>, mapping: Pick<RestoreRequest, 'namespaceMapping'>,
  selected: (groupResource: string, namespace: string) => boolean,
): TargetNamespace[] {
  const byTarget = new Map<string, { sources: Set<string>; kinds: Set<string> }>();
  for (const { groupResource, namespace } of entries) {
    if (namespace === '' || neverRestoredReason(groupResource) !== undefined || !selected(groupResource, namespace)) continue;
    const target = targetNamespace(mapping, namespace);
    let t = byTarget.get(target);
    if (t === undefined) byTarget.set(target, (t = { sources: new Set(), kinds: new Set() }));
    t.sources.add(namespace);
    t.kinds.add(groupResource);
  }
  return [...byTarget.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([namespace, t]) => ({ namespace, sources: [...t.sources].sort(), kinds: [...t.kinds].sort() }));
}

/**
 * The target namespaces of a restore from the backup's resource list (`groupResource -> ["ns/name"]`),
 * with the restore's namespace and resource filters and mapping applied. Undefined when the list is
 * not in Stowage's form (a Velero backup keys it by `group/version/Kind`): the plan's items are
 * used instead (targetsOfPlan), still before anything is written.
 */
export function targetsOfResourceList(list: ResourceList, req: TargetRequest): TargetNamespace[] | undefined {
  const entries: { groupResource: string; namespace: string }[] = [];
  for (const [groupResource, names] of Object.entries(list)) {
    if (groupResource.includes('/')) return undefined;
    for (const n of names) {
      const slash = n.indexOf('/');
      if (slash > 0) entries.push({ groupResource, namespace: n.slice(0, slash) });
    }
  }
  // Namespaced entries only (ns/name), which the scope-specific filters need to know.
  return collect(entries, req, (gr, ns) => req.namespaces.shouldInclude(ns) && req.resources.shouldInclude({ ...parseGroupResource(gr), namespaced: true }));
}

/**
 * What a restore would read from the backup's resource list, as `groupResource -> ["ns/name" | "name"]`
 * (the form auth/backupAccess.ts checks, the one rule downloads and deletions use too): namespaced
 * items its namespace and resource filters take, the Namespace objects of those namespaces, and
 * the cluster-scoped items it may bring (all of them the resource filter takes when it restores
 * cluster resources; else, unless includeClusterResources is false, every one that could come along
 * as related, since which do is known only from the archive). Undefined when the list is not in
 * Stowage's form: the plan's items are checked instead (sourcesOfPlan).
 */
export function sourcesOfResourceList(list: ResourceList, req: SourceRequest): HeldResources | undefined {
  const out: Record<string, string[]> = {};
  const add = (gr: string, n: string): void => {
    (out[gr] ??= []).push(n);
  };
  for (const [groupResource, names] of Object.entries(list)) {
    if (groupResource.includes('/')) return undefined;
    if (neverRestoredReason(groupResource) !== undefined) continue;
    const res = parseGroupResource(groupResource);
    for (const n of names) {
      const slash = n.indexOf('/');
      if (slash > 0) {
        if (req.namespaces.shouldInclude(n.slice(0, slash)) && req.resources.shouldInclude({ ...res, namespaced: true })) add(groupResource, n);
      } else if (groupResource === 'namespaces') {
        if (req.namespaces.shouldInclude(n)) add(groupResource, n);
      } else if (req.includeClusterScoped ? req.resources.shouldInclude({ ...res, namespaced: false }) : req.includeRelatedClusterScoped && !req.resources.excludesExplicitly(res)) {
        add(groupResource, n);
      }
    }
  }
  return out;
}

/** What a planned restore reads, by its items' places in the backup (the same form as sourcesOfResourceList). */
export function sourcesOfPlan(items: Iterable<{ groupResource: string; sourceNamespace: string; sourceName: string; skip?: string; archived?: unknown }>): HeldResources {
  const out: Record<string, string[]> = {};
  for (const p of items) {
    // A Namespace the backup does not hold is made bare: nothing of the backup is read for it.
    if (p.skip !== undefined || (p.groupResource === 'namespaces' && p.archived === undefined)) continue;
    (out[p.groupResource] ??= []).push(p.sourceNamespace === '' ? p.sourceName : `${p.sourceNamespace}/${p.sourceName}`);
  }
  return out;
}

/**
 * A Velero backup's resource list (keyed `apps/v1/Deployment`, `v1/Secret`) in Stowage's form
 * (`deployments.apps`, `secrets`), by the kinds the cluster serves; undefined when it names a kind
 * the cluster does not serve (the plan then decides what the restore reads).
 */
export function inStowageForm(list: ResourceList, served: readonly { group: string; kind: string; groupResource: string }[]): ResourceList | undefined {
  const out: ResourceList = {};
  for (const [key, names] of Object.entries(list)) {
    if (!key.includes('/')) {
      out[key] = [...(out[key] ?? []), ...names];
      continue;
    }
    const parts = key.split('/');
    const kind = parts.at(-1) ?? '';
    const group = parts.length === 3 ? (parts[0] ?? '') : '';
    const found = served.find((r) => r.group === group && r.kind === kind);
    if (found === undefined) return undefined;
    out[found.groupResource] = [...(out[found.groupResource] ?? []), ...names];
  }
  return out;
}

/** The target namespaces of a planned restore: its namespaced items, by source namespace (the plan has filtered them already). */
export function targetsOfPlan(items: Iterable<{ groupResource: string; sourceNamespace: string; skip?: string }>, req: Pick<RestoreRequest, 'namespaceMapping'>): TargetNamespace[] {
  const entries = [...items].filter((p) => p.skip === undefined).map((p) => ({ groupResource: p.groupResource, namespace: p.sourceNamespace }));
  return collect(entries, req, () => true);
}

/**
 * Asks whether the requester may create the targets' kinds: each kind everywhere first (one review
 * each; a cluster-wide grant settles every namespace holding it), then, for a namespace not settled
 * so, its kinds one at a time until one is allowed. So a restore into namespaces where the
 * requester has edit costs (kinds + namespaces) reviews at most, whatever the number of items.
 */
export async function checkTargetNamespaces(
  reviewer: Pick<AccessReviewer, 'review' | 'requester'>, targets: readonly TargetNamespace[], opts: { concurrency?: number } = {},
): Promise<RightsVerdict> {
  let reviews = 0;
  const mayCreate = async (groupResource: string, namespace: string): Promise<boolean> => {
    reviews++;
    const { group, resource } = parseGroupResource(groupResource);
    return (await reviewer.review({ verb: 'create', group, resource, namespace })).allowed;
  };
  const concurrency = opts.concurrency ?? 8;
  const kinds = [...new Set(targets.flatMap((t) => t.kinds))].sort();
  const everywhere = new Set(
    (await mapLimit(kinds, concurrency, async (k) => ((await mayCreate(k, '')) ? k : undefined))).filter((k): k is string => k !== undefined),
  );
  const verdicts = await mapLimit(targets, concurrency, async (t) => {
    if (t.kinds.some((k) => everywhere.has(k))) return undefined;
    for (const k of t.kinds) if (await mayCreate(k, t.namespace)) return undefined;
    return refusal(reviewer.requester.username, t);
  });
  return { refused: verdicts.filter((m): m is string => m !== undefined), reviews };
}

/** `alice may not create objects in namespace kube-system (mapped from team-a): not allowed to create configmaps, deployments.apps` */
export function refusal(username: string, t: TargetNamespace): string {
  const mapped = t.sources.filter((s) => s !== t.namespace);
  const from = mapped.length > 0 ? ` (mapped from ${mapped.join(', ')})` : '';
  const named = t.kinds.slice(0, KINDS_NAMED).join(', ');
  const more = t.kinds.length > KINDS_NAMED ? ` and ${t.kinds.length - KINDS_NAMED} more` : '';
  return `${username} may not create objects in namespace ${t.namespace}${from}: not allowed to create ${named}${more}`;
}
