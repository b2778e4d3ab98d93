// Ordering between items at run time: each item is restored once however many others wait for it;
// an item that needs another (its namespace, its CRD, its controller owner, an action's additional
// item) restores that one first, unless that would close a cycle. Controller-owned items are
// decided on what became of their owner (ownership.ts).
import type { KubeObject } from '../plugin/api/index.js';
import { itemErrorMessage, type Outcomes } from './outcomes.js';
import { ownedSkipReason, ownerFate, type OwnerFate } from './ownership.js';
import type { PlannedItem, RestorePlan } from './plan.js';
import type { ItemOutcome } from './request.js';

export interface OrderContext {
  plan: Pick<RestorePlan, 'items'>;
  dryRun: boolean;
  outcomes: Outcomes;
  /** Reads an item's backed-up object (from the spill file), only when it is about to be restored. */
  load(p: PlannedItem): Promise<KubeObject>;
  /** Restores one item whose turn it is, from its backed-up object. */
  restoreOne(p: PlannedItem, original: KubeObject): Promise<ItemOutcome>;
  /** Told how many items are being restored at once, after each start. */
  onInFlight(n: number): void;
}

export interface Order {
  /** Restores the item, or returns its restore already under way or done. */
  restoreItem(p: PlannedItem): Promise<ItemOutcome>;
  /**
   * Restores `to` before `from` goes on, unless `to` is (transitively) waiting for `from`: then
   * undefined, as waiting would deadlock (actions naming each other as additional items).
   */
  restoreFirst(from: PlannedItem, to: PlannedItem): Promise<ItemOutcome | undefined>;
  /** Notes that an object with the item's name exists in the cluster (found by a create or a read). */
  noteExisting(p: PlannedItem): void;
}

export function newOrder(ctx: OrderContext): Order {
  const { outcomes } = ctx;
  // item -> the item it is waiting for (its namespace, an additional item): to refuse cycles.
  const waitingOn = new Map<PlannedItem, PlannedItem>();
  const owners = newOwnerFates(ctx.plan, ctx.dryRun);
  let inFlight = 0;

  const run = async (p: PlannedItem): Promise<ItemOutcome> => {
    const at = { namespace: p.namespace, name: p.name };
    if (p.skip !== undefined) return outcomes.record(p, at, 'skipped', p.skip);
    const owned = p.owner;
    const skip = owned === undefined ? undefined : owners.skipReason(p, owned, await restoreFirst(p, owned.owner));
    if (skip !== undefined) return outcomes.record(p, at, 'skipped', skip);
    ctx.onInFlight(++inFlight);
    // Held only while this item is restored: memory follows the concurrency, not the backup's size.
    let original: KubeObject | undefined;
    try {
      original = await ctx.load(p);
      return await ctx.restoreOne(p, original);
    } catch (err) {
      return outcomes.record(p, at, 'failed', itemErrorMessage(p, original, err));
    } finally {
      inFlight--;
    }
  };

  const restoreItem = (p: PlannedItem): Promise<ItemOutcome> => {
    const have = p.restored;
    if (have !== undefined) return have instanceof Promise ? have : Promise.resolve(have);
    const running = run(p);
    // Kept on the item rather than in a table by key, and once settled as the outcome alone, which
    // the outcomes hold anyway: a table of 50,000 promises was ~4 MB.
    p.restored = running;
    void running.then((o) => {
      p.restored = o;
    }, () => undefined);
    return running;
  };

  async function restoreFirst(from: PlannedItem, to: PlannedItem): Promise<ItemOutcome | undefined> {
    for (let k: PlannedItem | undefined = to; k !== undefined; k = waitingOn.get(k)) if (k === from) return undefined;
    waitingOn.set(from, to);
    try {
      return await restoreItem(to);
    } finally {
      waitingOn.delete(from);
    }
  }

  return { restoreItem, restoreFirst, noteExisting: (p) => owners.noteExisting(p) };
}

/**
 * What owned items need to know of their owners, kept for owners only (most items own nothing):
 * which exist in the cluster, and which were left to their own controller (a ReplicaSet whose
 * Deployment is recreated), with that controller's fate.
 */
function newOwnerFates(plan: Pick<RestorePlan, 'items'>, dryRun: boolean): {
  /** The reason to leave an owned item to its owner's controller, decided on the owner's outcome, not on the plan. */
  skipReason(p: PlannedItem, owned: NonNullable<PlannedItem['owner']>, ownerOutcome: ItemOutcome | undefined): string | undefined;
  noteExisting(p: PlannedItem): void;
} {
  // The plan holds one item per object, so items are their own keys.
  const owners = new Set<PlannedItem>();
  for (const p of plan.items.values()) if (p.owner !== undefined) owners.add(p.owner.owner);
  const existsLive = new Set<PlannedItem>();
  const leftToController = new Map<PlannedItem, OwnerFate>();
  return {
    skipReason(p, owned, ownerOutcome) {
      const fate = ownerFate(ownerOutcome, leftToController.get(owned.owner), existsLive.has(owned.owner));
      const reason = ownedSkipReason(owned.label, fate, dryRun);
      if (reason !== undefined && owners.has(p)) leftToController.set(p, fate);
      return reason;
    },
    noteExisting(p) {
      if (owners.has(p)) existsLive.add(p);
    },
  };
}
