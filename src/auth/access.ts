// Whether a requester may do something, asked of the API server with SubjectAccessReviews (the
// server's own account may create them; the answer is the cluster's RBAC, webhooks and all).
// One reviewer per run caches its answers: a backup of 40 kinds in 30 namespaces asks each
// (verb, resource, namespace) once, and "everywhere" (namespace "") first, which settles most.
import { SUBJECT_ACCESS_REVIEWS, type DynamicClient } from '../kube/index.js';
import { mapLimit } from '../util/concurrency.js';
import type { Requester } from './requester.js';

export interface ResourceAccess {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  /** '' (or absent) for cluster-scoped resources, and for "in every namespace" of namespaced ones. */
  namespace?: string;
  name?: string;
}

export interface AccessAnswer {
  allowed: boolean;
  /** The authorizer's reason, when it gave one. */
  reason: string;
}

export interface NamespaceAccess {
  /** Allowed in every namespace (the cluster-wide review said yes). */
  everywhere: boolean;
  allowed: string[];
  denied: string[];
}

export interface AccessReviewer {
  readonly requester: Requester;
  review(a: ResourceAccess): Promise<AccessAnswer>;
  /** `verb` on `resource` in each of `namespaces`: one cluster-wide review, then one per namespace only if that says no. */
  inNamespaces(a: Omit<ResourceAccess, 'namespace'>, namespaces: readonly string[]): Promise<NamespaceAccess>;
}

interface SubjectAccessReviewStatus {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/** `verb group/resource[/subresource] [name] in ns` for messages. */
export function describeAccess(a: ResourceAccess): string {
  const what = `${a.resource}${a.subresource !== undefined && a.subresource !== '' ? `/${a.subresource}` : ''}${a.group !== '' ? `.${a.group}` : ''}`;
  const name = a.name !== undefined && a.name !== '' ? ` "${a.name}"` : '';
  const where = a.namespace !== undefined && a.namespace !== '' ? ` in namespace ${a.namespace}` : '';
  return `${a.verb} ${what}${name}${where}`;
}

export function createAccessReviewer(client: DynamicClient, requester: Requester, opts: { concurrency?: number } = {}): AccessReviewer {
  const cache = new Map<string, Promise<AccessAnswer>>();
  const concurrency = opts.concurrency ?? 16;

  function review(a: ResourceAccess): Promise<AccessAnswer> {
    const key = [a.verb, a.group, a.resource, a.subresource ?? '', a.namespace ?? '', a.name ?? ''].join('\u0000');
    let p = cache.get(key);
    if (p === undefined) {
      p = client.create<SubjectAccessReviewStatus>(SUBJECT_ACCESS_REVIEWS, undefined, {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: requester.username,
          groups: requester.groups,
          ...(requester.uid !== '' ? { uid: requester.uid } : {}),
          resourceAttributes: {
            verb: a.verb, group: a.group, resource: a.resource,
            ...(a.subresource !== undefined ? { subresource: a.subresource } : {}),
            ...(a.namespace !== undefined ? { namespace: a.namespace } : {}),
            ...(a.name !== undefined ? { name: a.name } : {}),
          },
        },
      }).then((r) => ({ allowed: r.status?.allowed === true && r.status.denied !== true, reason: r.status?.reason ?? r.status?.evaluationError ?? '' }));
      // A failed review is not an answer: the next caller asks again.
      p.catch(() => cache.delete(key));
      cache.set(key, p);
    }
    return p;
  }

  return {
    requester,
    review,
    async inNamespaces(a, namespaces) {
      if ((await review({ ...a, namespace: '' })).allowed) return { everywhere: true, allowed: [...namespaces], denied: [] };
      const answers = await mapLimit(namespaces, concurrency, async (ns) => ({ ns, ok: (await review({ ...a, namespace: ns })).allowed }));
      return { everywhere: false, allowed: answers.filter((x) => x.ok).map((x) => x.ns), denied: answers.filter((x) => !x.ok).map((x) => x.ns) };
    },
  };
}
