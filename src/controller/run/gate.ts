// The way into a run, shared by the Backup and Restore reconcilers so that both decide alike:
// what a reconcile does before its kind's validation (a run gone, left InProgress by a dead
// server, canceled before it started, or met by a shutting-down server), and after it (waiting
// for its location, held for the webhook, queued for a slot).
import type { BackupStorageLocation } from '../../apis/v1/index.js';
import type { ResourceRef } from '../../kube/index.js';
import type { Informer, ReconcileContext, Result, WatchSource } from '../../runtime/index.js';
import { cancelBeforeStart, cancelRequested, cancelWatch } from './cancel.js';
import type { ControllerContext, ControllerDefinition } from './context.js';
import type { RunObject } from './lifecycle.js';
import { waitForLocation, type LocationProblem } from './locations.js';
import { statusPatch } from './patch.js';
import type { RunScope } from './scope.js';
import { createRunSlots, takeSlot, type RunSlots } from './slots.js';
import { failStaleRun } from './staleRuns.js';
import { createWebhookHold, type WebhookHold } from './webhookHold.js';

/** A Backup or a Restore as the gate reads it. */
export type GatedRun = RunObject & {
  metadata: { creationTimestamp?: string; annotations?: Record<string, string> };
  spec?: { cancel?: boolean };
  status?: { phase?: string; waitingFor?: string };
};

export interface RunGateOptions<T extends GatedRun> {
  kind: 'backup' | 'restore';
  resource: ResourceRef;
  informer: Informer<T>;
  /** How many runs of the kind may run at once, and the flag that sets it. */
  limit: number;
  flag: string;
  /** The failureReason of a run this server finds InProgress but is not running. */
  staleReason: string;
  /** Counts the kind's runs (reconciles set the gauge) and a run canceled before it started. */
  countAll(n: number): void;
  recordCanceled(obj: T): void;
}

export interface RunGate<T extends GatedRun> {
  /** The controller's wiring: its informer, the caches it reads, the cancel watch, its workers. */
  definition(name: string, reads: WatchSource[], reconcile: (key: string, rc: ReconcileContext) => Promise<Result>): ControllerDefinition;
  /**
   * The New run `key` names, or the Result of a reconcile that ends here. `ignore`: a New run that
   * is not to be started (nor canceled) now.
   */
  newRun(key: string, ignore?: (obj: T) => boolean): Promise<{ run: T } | { done: Result }>;
  /** True (and its slot given up) while the run waits for its location to become ready. */
  waitsForLocation(key: string, location: BackupStorageLocation | undefined, pending: LocationProblem | undefined): Promise<boolean>;
  /** Runs `fn` holding a slot, unless the run is held for the webhook or queued behind others. */
  inSlot(obj: T, key: string, scope: RunScope, fn: () => Promise<void>): Promise<void>;
}

export function createRunGate<T extends GatedRun>(ctx: ControllerContext, o: RunGateOptions<T>): RunGate<T> {
  const { kind, resource, informer } = o;
  // Trust mode requester: no run starts while the admission webhook is not in effect (webhookHold.ts).
  const hold: WebhookHold = createWebhookHold(ctx, kind, resource);
  const slots: RunSlots = createRunSlots({
    kind, limit: Math.max(1, o.limit), flag: o.flag,
    stillWaiting: (key) => (informer.get(key)?.status?.phase ?? 'New') === 'New',
  });
  return {
    definition: (name, reads, reconcile) => ({
      name,
      watches: [informer, ...reads, cancelWatch(ctx, kind, informer)],
      // One worker more than can run: a queued run's status says what it waits for while all run.
      workers: Math.max(1, o.limit) + 1,
      bind: (enqueue) => {
        slots.bind(enqueue);
        hold.bind(enqueue);
      },
      reconciler: { reconcile },
    }),
    newRun: (key, ignore) => newRun(ctx, o, slots, key, ignore),
    async waitsForLocation(key, location, pending) {
      if (pending === undefined || location === undefined || !(await waitForLocation(ctx, location, pending))) return false;
      slots.drop(key); // while its location is not ready it holds up no other run (it keeps its age for later)
      return true;
    },
    async inSlot(obj, key, scope, fn) {
      if (await hold.holds(obj, key)) {
        slots.drop(key); // held for the webhook, it holds up no other run
        return;
      }
      const slot = await takeSlot(ctx, slots, kind, resource, obj, key, scope);
      if (slot === undefined) return; // queued: woken when what it waits for ends
      try {
        await fn();
      } finally {
        slot.release();
      }
    },
  };
}

async function newRun<T extends GatedRun>(
  ctx: ControllerContext, o: RunGateOptions<T>, slots: RunSlots, key: string, ignore: ((obj: T) => boolean) | undefined,
): Promise<{ run: T } | { done: Result }> {
  const { kind, resource, informer } = o;
  o.countAll(informer.keys().length);
  const obj = informer.get(key);
  const phase = obj?.status?.phase ?? 'New';
  if (obj === undefined || phase !== 'New') slots.drop(key);
  if (obj === undefined) return { done: undefined };
  // Its requeue is kept: informers never resync, so a stale run whose location read failed
  // is only settled by the retry failStaleRun asks for.
  if (phase === 'InProgress') {
    const patch = (status: Record<string, unknown>, rv: string | undefined): Promise<unknown> =>
      ctx.client.patchStatus(resource, obj.metadata.namespace, obj.metadata.name, statusPatch(status, rv));
    return { done: await failStaleRun(ctx, kind, obj, patch, o.staleReason) };
  }
  if (phase !== 'New' || ignore?.(obj) === true) return { done: undefined };
  if (cancelRequested(obj)) {
    await cancelBeforeStart(ctx, kind, resource, obj, () => o.recordCanceled(obj));
    return { done: undefined };
  }
  if (ctx.shutdown.aborted) return { done: undefined }; // a shutting-down server starts nothing new
  return { run: obj };
}
