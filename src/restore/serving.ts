// Serving checks: before a custom resource is restored, the cluster must serve its resource. A CRD
// restored in this run is restored first and waited for (Established, then listed by discovery);
// each resource is checked once per run, and every item of it shares the answer.
import { CUSTOM_RESOURCE_DEFINITIONS, isNotFound, type DynamicClient } from '../kube/index.js';
import { sleep } from '../util/backoff.js';
import { errorMessage } from '../util/errors.js';
import type { PlannedItem, RestorePlan } from './plan.js';
import type { ItemOutcome } from './request.js';

const POLL_MS = 250;

/** Whether the item's resource is served; `pending` in a dry run whose CRD would be created (not validated). */
export type ServedState = { pending: boolean } | string;

export interface ServingContext {
  client: DynamicClient;
  plan: Pick<RestorePlan, 'crds'>;
  dryRun: boolean;
  /** Group-resources the cluster served when the restore began. */
  servedNow: ReadonlySet<string>;
  waitTimeoutMs: number;
  signal: AbortSignal | undefined;
  /** Restores an item (the CRD) through the executor, which runs each item once. */
  restoreItem(p: PlannedItem): Promise<ItemOutcome>;
}

export interface Serving {
  /** Makes sure the cluster serves the item's resource; returns the failure as a string. */
  ensureServed(p: PlannedItem): Promise<ServedState>;
}

export function newServing(ctx: ServingContext): Serving {
  const served = new Map<string, Promise<{ pending: boolean }>>();
  const restoreCrd = async (p: PlannedItem, crd: PlannedItem): Promise<{ pending: boolean }> => {
    const out = await ctx.restoreItem(crd);
    if (out.action === 'failed') throw new Error(`its CustomResourceDefinition ${crd.name} could not be restored: ${out.reason}`);
    if (ctx.dryRun) return { pending: out.action === 'created' };
    await waitEstablished(ctx, crd.name);
    await waitServed(ctx, p);
    return { pending: false };
  };
  return {
    ensureServed(p) {
      const crd = ctx.plan.crds.get(p.groupResource);
      if (crd === undefined) {
        if (!ctx.servedNow.has(p.groupResource)) {
          return Promise.resolve(`${p.groupResource} is not served by this cluster, and the restore holds no CustomResourceDefinition for it`);
        }
        return Promise.resolve({ pending: false });
      }
      let s = served.get(p.groupResource);
      if (s === undefined) {
        s = restoreCrd(p, crd);
        served.set(p.groupResource, s);
      }
      return s.catch((err: unknown) => errorMessage(err));
    },
  };
}

type WaitContext = Pick<ServingContext, 'client' | 'waitTimeoutMs' | 'signal'>;

async function waitEstablished(ctx: WaitContext, name: string): Promise<void> {
  const deadline = Date.now() + ctx.waitTimeoutMs;
  for (;;) {
    const crd = await ctx.client.get<{ status?: { conditions?: { type?: string; status?: string; message?: string }[] } }>(CUSTOM_RESOURCE_DEFINITIONS, undefined, name);
    const conds = crd.status?.conditions ?? [];
    if (conds.some((c) => c.type === 'Established' && c.status === 'True')) return;
    const rejected = conds.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
    if (rejected !== undefined) throw new Error(`CustomResourceDefinition ${name} was not accepted: ${rejected.message ?? 'its names conflict'}`);
    if (Date.now() > deadline) throw new Error(`CustomResourceDefinition ${name} is not Established after ${Math.round(ctx.waitTimeoutMs / 1000)} s`);
    await sleep(POLL_MS, ctx.signal);
  }
}

/** After Established, the apiserver may take a moment to serve the new resource; discovery says when. */
async function waitServed(ctx: WaitContext, p: PlannedItem): Promise<void> {
  const deadline = Date.now() + ctx.waitTimeoutMs;
  const path = `/apis/${p.ref.group}/${p.ref.version}`;
  for (;;) {
    try {
      const list = await ctx.client.request<{ resources?: { name?: string }[] }>({ method: 'GET', path, target: { verb: 'discover', resource: path } });
      if ((list.resources ?? []).some((r) => r.name === p.ref.resource)) return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (Date.now() > deadline) throw new Error(`${p.groupResource} version ${p.ref.version} is not served ${Math.round(ctx.waitTimeoutMs / 1000)} s after its CRD was Established`);
    await sleep(POLL_MS, ctx.signal);
  }
}
