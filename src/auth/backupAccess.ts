// Whether a requester may use a finished backup (download it or its artifacts, delete it): only
// when, for everything it holds, they could have backed it up themselves (`list` it) or could
// restore it (`create` it). The test is per (resource, namespace): someone who may list Secrets in
// team-a and create ConfigMaps in team-b may use a backup holding exactly those, since either right
// alone would let them see or write each item. What they lack is named, so the refusal says exactly
// which rights to ask for.
import { mapLimit } from '../util/concurrency.js';
import type { AccessReviewer } from './access.js';

/** groupResource (`deployments.apps`) -> item names, `ns/name` or `name` for cluster-scoped (persistence's ResourceList). */
export type HeldResources = Readonly<Record<string, readonly string[]>>;

/** Something the backup holds that the requester may neither list nor create. */
export type Lack =
  | { groupResource: string; namespaces: string[] }
  | { groupResource: string; clusterScoped: true }
  /** Namespace objects themselves: readable with `get` on the namespace (granted in it by `view`). */
  | { groupResource: 'namespaces'; names: string[] };

function split(groupResource: string): { group: string; resource: string } {
  const dot = groupResource.indexOf('.');
  return dot < 0 ? { group: '', resource: groupResource } : { group: groupResource.slice(dot + 1), resource: groupResource.slice(0, dot) };
}

/** Everything in `held` that the reviewer's requester may neither list nor create, in resource order. */
export async function lackedRights(reviewer: AccessReviewer, held: HeldResources): Promise<Lack[]> {
  const kinds = Object.keys(held).sort();
  const lacks = await mapLimit(kinds, 8, async (gr): Promise<Lack | undefined> => {
    const { group, resource } = split(gr);
    const names = held[gr] ?? [];
    if (gr === 'namespaces') {
      const missing: string[] = [];
      if ((await reviewer.review({ verb: 'list', group, resource, namespace: '' })).allowed) return undefined;
      if ((await reviewer.review({ verb: 'create', group, resource, namespace: '' })).allowed) return undefined;
      for (const name of names) {
        // A request on a namespace object is authorized in that namespace: a RoleBinding there counts.
        if (!(await reviewer.review({ verb: 'get', group, resource, namespace: name, name })).allowed) missing.push(name);
      }
      return missing.length === 0 ? undefined : { groupResource: 'namespaces', names: missing };
    }
    const namespaces = [...new Set(names.filter((n) => n.includes('/')).map((n) => n.slice(0, n.indexOf('/'))))].sort();
    const clusterScoped = names.some((n) => !n.includes('/'));
    if (clusterScoped) {
      if ((await reviewer.review({ verb: 'list', group, resource, namespace: '' })).allowed) return undefined;
      if ((await reviewer.review({ verb: 'create', group, resource, namespace: '' })).allowed) return undefined;
      return { groupResource: gr, clusterScoped: true };
    }
    if (namespaces.length === 0) return undefined;
    const listed = await reviewer.inNamespaces({ verb: 'list', group, resource }, namespaces);
    if (listed.denied.length === 0) return undefined;
    const created = await reviewer.inNamespaces({ verb: 'create', group, resource }, listed.denied);
    return created.denied.length === 0 ? undefined : { groupResource: gr, namespaces: created.denied };
  });
  return lacks.filter((l): l is Lack => l !== undefined);
}

function someOf(names: readonly string[], max = 3): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

function describeLack(l: Lack): string {
  if ('clusterScoped' in l) return `${l.groupResource} (cluster-scoped)`;
  if ('names' in l) return `${l.names.length === 1 ? 'the namespace' : 'the namespaces'} ${someOf(l.names)}`;
  return `${l.groupResource} in ${l.namespaces.length === 1 ? 'namespace' : 'namespaces'} ${someOf(l.namespaces)}`;
}

/** `secrets in namespace team-b, configmaps in namespaces team-b, team-c and 2 more kinds`: the first `max` lacks. */
export function describeLacks(lacks: readonly Lack[], max = 3): string {
  const shown = lacks.slice(0, max).map(describeLack);
  const rest = lacks.length - shown.length;
  if (rest > 0) return `${shown.join(', ')} and ${rest} more ${rest === 1 ? 'kind' : 'kinds'}`;
  if (shown.length <= 1) return shown.join('');
  return `${shown.slice(0, -1).join(', ')} and ${shown.at(-1) ?? ''}`;
}

/**
 * Why the reviewer's requester may not `action` (e.g. `download backup "b1"`), or undefined when
 * they may. `holder` names what holds the resources in the message (`it`, `its backup "b1"`).
 */
export async function backupUseRefusal(reviewer: AccessReviewer, held: HeldResources, action: string, holder = 'it'): Promise<string | undefined> {
  const lacks = await lackedRights(reviewer, held);
  if (lacks.length === 0) return undefined;
  const who = reviewer.requester.username;
  return `${who} may not ${action}: ${holder} holds ${describeLacks(lacks)}, which ${who} may neither list nor create`;
}
