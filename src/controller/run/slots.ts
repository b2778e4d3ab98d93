// Admission of backups (or restores) to run at the same time. A validated run starts when it
// overlaps no running run (scope.ts), none queued before it, and fewer than the limit
// (--concurrent-backups / --concurrent-restores) run or are about to. Otherwise it stays New, and
// `status.waitingFor` and a Queued event say what it waits for.
//
// Who goes next is one plan, computed from the same state by every reconcile: the waiting runs in
// creation order, each admitted if nothing running or admitted before it in the plan overlaps it
// and a slot is left. So an older run is never overtaken by a newer one that overlaps it, and no
// two workers can both decide to start overlapping runs (the plan is computed and the slot taken
// with no await in between). When a run ends, or a waiting run goes away, the waiting keys are
// queued again in creation order (no polling). The registry is in memory: only the leader runs
// controllers, and a new leader rebuilds it from the New runs its informers list.
import type { KubeObject, ResourceRef } from '../../kube/index.js';
import type { RunKind } from '../../logging/index.js';
import type { ControllerContext } from './context.js';
import { scopeOverlap, type RunScope } from './scope.js';
import { patchStatusIfCurrent } from './patch.js';

export interface SlotRequest {
  key: string;
  name: string;
  /** metadata.creationTimestamp: the queue's order (then the name). */
  created: string;
  scope: RunScope;
}

export type Verdict = { admit: true } | { admit: false; waitingFor: string };

export interface Slot {
  release(): void;
}

export interface RunSlots {
  /** Takes a slot for the run, or records it as waiting and says for what. */
  admit(req: SlotRequest): Slot | { waitingFor: string };
  /** The key waits no more (deleted, or its phase moved on): runs queued behind it are looked at again. */
  drop(key: string): void;
  /** Where woken keys go: the controller's queue. */
  bind(enqueue: (key: string) => void): void;
  running(): string[];
}

interface Entry extends SlotRequest {
  seq: number;
}

const byAge = (a: SlotRequest, b: SlotRequest): number => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.name.localeCompare(b.name));

/**
 * The plan (see the module comment): a verdict for every waiting run. `flag` names the limit in
 * messages ("--concurrent-backups").
 */
export function planSlots(kind: RunKind, running: readonly SlotRequest[], waiting: readonly SlotRequest[], limit: number, flag: string): Map<string, Verdict> {
  const verdicts = new Map<string, Verdict>();
  const starting: SlotRequest[] = [];
  const queued: SlotRequest[] = [];
  const ref = (r: SlotRequest): string => `${kind} "${r.name}"`;
  for (const w of [...waiting].sort(byAge)) {
    const blockers: string[] = [];
    for (const [others, note] of [[running, ''], [starting, ', starting'], [queued, ', queued earlier']] as const) {
      for (const o of others) {
        const why = scopeOverlap(w.scope, o.scope);
        if (why !== undefined) blockers.push(`${ref(o)}${note} (${why})`);
      }
    }
    if (blockers.length > 0) {
      verdicts.set(w.key, { admit: false, waitingFor: `waiting for ${blockers.join(' and ')}` });
      queued.push(w);
    } else if (running.length + starting.length >= limit) {
      const taken = [...running.map(ref), ...starting.map((s) => `${ref(s)} (starting)`)];
      verdicts.set(w.key, { admit: false, waitingFor: `waiting for a free slot: ${flag}=${limit}, taken by ${taken.join(', ')}` });
      queued.push(w);
    } else {
      verdicts.set(w.key, { admit: true });
      starting.push(w);
    }
  }
  return verdicts;
}

/**
 * The registry of one kind. `stillWaiting` says whether a recorded waiting key still waits (it
 * exists and is New in the cache): one that does not is left out of the plan even before its
 * drop() comes.
 */
export function createRunSlots(opts: { kind: RunKind; limit: number; flag: string; stillWaiting: (key: string) => boolean }): RunSlots {
  const running = new Map<string, Entry>();
  const waiting = new Map<string, SlotRequest>();
  let enqueue: ((key: string) => void) | undefined;
  let seq = 0;

  // Every waiting key but `except` is looked at again, oldest first (their plan may have changed).
  const wake = (except?: string): void => {
    for (const w of [...waiting.values()].sort(byAge)) if (w.key !== except) enqueue?.(w.key);
  };

  return {
    admit(req) {
      waiting.set(req.key, req);
      let pruned = false;
      for (const k of waiting.keys()) {
        if (k !== req.key && !opts.stillWaiting(k)) pruned = waiting.delete(k);
      }
      const verdict = planSlots(opts.kind, [...running.values()], [...waiting.values()], opts.limit, opts.flag).get(req.key);
      if (verdict === undefined || !verdict.admit) {
        if (pruned) wake(req.key);
        return { waitingFor: verdict?.waitingFor ?? 'waiting' };
      }
      waiting.delete(req.key);
      const entry = { ...req, seq: ++seq };
      running.set(req.key, entry);
      // What the others wait for now names this run as running.
      wake();
      return {
        release() {
          // Only this admission's entry: a later admission of the same key is its own.
          if (running.get(req.key)?.seq !== entry.seq) return;
          running.delete(req.key);
          wake();
        },
      };
    },
    drop(key) {
      if (waiting.delete(key)) wake();
    },
    bind(fn) {
      enqueue = fn;
    },
    running: () => [...running.keys()],
  };
}

type Queueable = KubeObject & {
  metadata: { name: string; namespace?: string; resourceVersion?: string; creationTimestamp?: string };
  status?: { waitingFor?: string };
};

/**
 * Admits `obj` through `slots`, or records what it waits for: `status.waitingFor` (patched only
 * when it changed, conditional on the cached version) and a Queued event. Undefined while it waits.
 */
export async function takeSlot(
  ctx: ControllerContext, slots: RunSlots, kind: RunKind, resource: ResourceRef, obj: Queueable, key: string, scope: RunScope,
): Promise<Slot | undefined> {
  const got = slots.admit({ key, name: obj.metadata.name, created: obj.metadata.creationTimestamp ?? '', scope });
  if ('release' in got) return got;
  if (obj.status?.waitingFor === got.waitingFor) return undefined;
  const namespace = obj.metadata.namespace ?? ctx.namespace;
  if (!(await patchStatusIfCurrent(ctx, resource, obj, { waitingFor: got.waitingFor }))) return undefined;
  void ctx.events.event(obj, 'Normal', 'Queued', got.waitingFor);
  ctx.logger.info(`${kind} ${namespace}/${obj.metadata.name} is queued: ${got.waitingFor}`);
  return undefined;
}
