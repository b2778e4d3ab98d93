// Writes: what a real restore sends to the cluster for one item. A create (retried on transient
// failures), then, when an object of that name exists, a skip or (existingResourcePolicy update) a
// merge patch to match the backup, and the status subresource where the restore keeps status.
import type winston from 'winston';
import { LABEL_RESTORE_NAME, labelValue } from '../apis/v1/index.js';
import { KubeError, isAlreadyExists, isApiUnreachable, isConflict, isNotFound, isTransient, type DynamicClient, type KubeObject as LooseObject } from '../kube/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { backoff, sleep } from '../util/backoff.js';
import { patchToMatch } from './compare.js';
import type { JsonObject } from './objects.js';
import { itemErrorMessage, type Outcomes, type Target } from './outcomes.js';
import type { PlannedItem } from './plan.js';
import type { ItemOutcome, RestoreRequest } from './request.js';

/** An item's desired state: what is created, or what an existing object is compared with. */
export interface Desired {
  item: KubeObject;
  keepStatus: boolean;
  /** The object as backed up. */
  original: KubeObject;
  /** What is created instead of `item` (a pod with its restore hooks' init containers); an existing object is still compared with `item`. */
  createAs?: KubeObject;
  /** Told of the object this restore created. */
  onCreated?: (created: LooseObject) => void;
}

export interface WriteContext {
  client: DynamicClient;
  log: winston.Logger;
  req: RestoreRequest;
  outcomes: Outcomes;
  /** How long to wait for a namespace being deleted to go. */
  waitTimeoutMs: number;
  signal: AbortSignal | undefined;
  /** Stops the whole run, with `reason`. */
  stop(reason: unknown): void;
  /** Told when an object with the item's name is found in the cluster (its owned items need to know). */
  onExisting(p: PlannedItem): void;
}

const nsOf = (t: Target): string | undefined => (t.namespace === '' ? undefined : t.namespace);

export function getLive(client: DynamicClient, p: PlannedItem, t: Target): Promise<LooseObject> {
  return client.get(p.ref, nsOf(t), t.name);
}

/**
 * Creates with a few retries on transient failures (no response, 5xx); the client already retries
 * 429. `state.retried` is set once a retry happened: the first attempt may have succeeded unseen.
 */
export async function createRetrying(
  w: Pick<WriteContext, 'client' | 'signal'>, p: PlannedItem, t: Target, item: KubeObject, dryRun: boolean, state: { retried: boolean },
): Promise<LooseObject> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await w.client.create(p.ref, nsOf(t), item, dryRun ? { dryRun: true } : {});
    } catch (err) {
      if (!isTransient(err) || attempt >= 2) throw err;
      state.retried = true;
      await sleep(backoff(attempt, { baseMs: 200, maxMs: 2000 }), w.signal);
    }
  }
}

/** Creates the item, or handles the object of its name that is already there. */
export async function writeItem(w: WriteContext, p: PlannedItem, t: Target, d: Desired, attempt = 0): Promise<ItemOutcome> {
  const { client, outcomes } = w;
  const state = { retried: false };
  try {
    const created = await createRetrying(w, p, t, d.createAs ?? d.item, false, state);
    const statusProblem = await restoreStatus(w, p, t, d, created);
    d.onCreated?.(created);
    return statusProblem === undefined
      ? outcomes.record(p, t, 'created', 'created')
      : outcomes.record(p, t, 'created', `created, but ${statusProblem}`, { warn: true });
  } catch (err) {
    // An outage that outlasted --api-outage-timeout: the API is gone, not this item; end the run.
    if (isApiUnreachable(err)) w.stop(err);
    if (!isAlreadyExists(err)) {
      // Admission (a quota, a webhook) may refuse the create of an object that exists anyway;
      // then it is an existing object like any other, as a dry run (which reads first) sees it.
      const live = await getLive(client, p, t).catch(() => undefined);
      if (live === undefined) return outcomes.record(p, t, 'failed', itemErrorMessage(p, d.original, err));
      return updateExisting(w, p, t, d, live, false);
    }
  }
  const live = await getLive(client, p, t);
  if (p.groupResource === 'namespaces' && live.metadata?.deletionTimestamp !== undefined && attempt === 0) {
    w.log.info(`namespace ${t.name} is being deleted; waiting until it is gone before restoring it`);
    await waitGone(w, p, t);
    return writeItem(w, p, t, d, attempt + 1);
  }
  // A retried create whose first attempt went through unseen: the object carries this restore's label.
  if (state.retried && live.metadata?.labels?.[LABEL_RESTORE_NAME] === labelValue(w.req.restore.metadata.name)) {
    d.onCreated?.(live);
    return outcomes.record(p, t, 'created', 'created');
  }
  return updateExisting(w, p, t, d, live, false);
}

async function waitGone(w: WriteContext, p: PlannedItem, t: Target): Promise<void> {
  const deadline = Date.now() + w.waitTimeoutMs;
  for (;;) {
    try {
      await getLive(w.client, p, t);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    if (Date.now() > deadline) throw new Error(`namespace ${t.name} is still being deleted after ${Math.round(w.waitTimeoutMs / 1000)} s`);
    await sleep(500, w.signal);
  }
}

/** An object with the item's name exists: skip it, or (policy update) patch it to match the backup. */
export async function updateExisting(w: WriteContext, p: PlannedItem, t: Target, d: Desired, live0: LooseObject, dryRun: boolean): Promise<ItemOutcome> {
  const { client, outcomes } = w;
  w.onExisting(p);
  const validated = dryRun ? { validated: true } : {};
  let live = live0;
  for (let attempt = 0; ; attempt++) {
    const patch = patchToMatch(live as KubeObject, d.item, d.original);
    if (patch === undefined) return outcomes.record(p, t, 'skipped', 'already exists and matches the backup', validated);
    if (w.req.existingResourcePolicy !== 'update') {
      return outcomes.record(p, t, 'skipped', 'already exists and differs from the backup; left unchanged (existingResourcePolicy is none)', {
        warn: true,
        ...validated,
      });
    }
    const md = (patch.metadata ??= {}) as JsonObject;
    md.resourceVersion = live.metadata?.resourceVersion;
    let updated: LooseObject;
    try {
      updated = await client.patch(p.ref, nsOf(t), t.name, patch, 'merge', dryRun ? { dryRun: true } : {});
    } catch (err) {
      if (!isConflict(err) || attempt >= 3) return outcomes.record(p, t, 'failed', `could not update the existing object: ${itemErrorMessage(p, d.original, err)}`);
      live = await getLive(client, p, t);
      continue;
    }
    if (dryRun) return outcomes.record(p, t, 'updated', 'exists and would be updated to match the backup', { validated: true });
    const statusProblem = await restoreStatus(w, p, t, d, updated);
    if (statusProblem !== undefined) return outcomes.record(p, t, 'updated', `existed and was updated to match the backup, but ${statusProblem}`, { warn: true });
    return outcomes.record(p, t, 'updated', 'existed and was updated to match the backup');
  }
}

/**
 * The status subresource is written after the create or update (without a status subresource, the
 * write kept the status already). Returns what went wrong, for a warning.
 */
async function restoreStatus(w: WriteContext, p: PlannedItem, t: Target, d: Desired, written: LooseObject): Promise<string | undefined> {
  if (!d.keepStatus || d.item.status === undefined) return undefined;
  try {
    await w.client.patchStatus(p.ref, nsOf(t), t.name, {
      metadata: { resourceVersion: written.metadata?.resourceVersion },
      status: d.item.status,
    });
  } catch (err) {
    if (!(err instanceof KubeError && err.status === 404)) return `its status could not be restored: ${itemErrorMessage(p, d.original, err)}`;
  }
  return undefined;
}
