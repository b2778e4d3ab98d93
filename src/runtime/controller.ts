// Runs a Reconciler over keys from informers with N workers, the way controller-runtime does:
// success forgets the key's failures, `requeueAfter` schedules the next look, errors retry with
// per-key backoff, and a TerminalError is logged once and not retried.
import type { KubeObject } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import type { Informer, InformerEvent } from './informer.js';
import { silentLogger, type Logger } from './logger.js';
import { createWorkQueue, type WorkQueue, type WorkQueueOptions } from './queue.js';

/** What a reconcile asks for next: nothing, or another look after `requeueAfter` ms. */
export type Result = { requeueAfter?: number } | void;

export interface ReconcileContext {
  /** Aborted when the controller stops and its grace period is over. */
  signal: AbortSignal;
  logger: Logger;
}

export interface Reconciler {
  reconcile(key: string, ctx: ReconcileContext): Promise<Result>;
}

/** An error that retrying cannot fix (bad input, a missing prerequisite the user must create). */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export function isTerminalError(err: unknown): boolean {
  return err instanceof TerminalError;
}

/** An informer the controller watches; `mapKeys` turns its events into keys to reconcile (default: the event's key). */
export interface WatchSource {
  informer: Informer<KubeObject>;
  mapKeys?: (event: InformerEvent<KubeObject>) => string[];
}

export type ReconcileOutcome = 'success' | 'requeue' | 'error' | 'terminal';

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  /** Informers whose events enqueue keys; all must sync before workers start. Started if not yet. */
  informers?: (Informer<KubeObject> | WatchSource)[];
  /** Concurrent reconciles (never two for one key). Default 1. */
  workers?: number;
  logger?: Logger;
  queue?: WorkQueueOptions;
  /** Observes each reconcile (for metrics). */
  onReconcile?: (info: { controller: string; key: string; outcome: ReconcileOutcome; durationMs: number }) => void;
}

export interface Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  /** Queues a key by hand (e.g. from a timer or another controller). */
  enqueue(key: string): void;
  /** Resolves when every informer has synced and the workers run. */
  readonly ready: Promise<void>;
  /**
   * Stops taking keys and waits for running reconciles; after graceMs (default 30 s) their signal
   * is aborted. Informers are left running: other controllers may share them.
   */
  stop(graceMs?: number): Promise<void>;
}

function isWatchSource(x: unknown): x is WatchSource {
  return typeof x === 'object' && x !== null && 'informer' in x;
}

export function startController(opts: ControllerOptions): Controller {
  const logger = opts.logger ?? silentLogger;
  const queue = createWorkQueue(opts.queue);
  const workers = Math.max(1, Math.floor(opts.workers ?? 1));
  const ac = new AbortController();
  const syncAc = new AbortController();
  const sources = (opts.informers ?? []).map((s) => (isWatchSource(s) ? s : { informer: s }));
  const unsubscribe: (() => void)[] = [];
  let stopping = false;

  for (const src of sources) {
    const map = src.mapKeys;
    unsubscribe.push(
      src.informer.addHandler((ev: InformerEvent<KubeObject>) => {
        if (map === undefined) queue.add(ev.key);
        else for (const k of map(ev)) queue.add(k);
      }),
    );
    src.informer.start();
  }

  async function reconcileOne(key: string): Promise<void> {
    const t0 = performance.now();
    let outcome: ReconcileOutcome = 'success';
    try {
      const result = await opts.reconciler.reconcile(key, { signal: ac.signal, logger });
      queue.forget(key);
      if (result !== undefined && result.requeueAfter !== undefined && result.requeueAfter > 0) {
        outcome = 'requeue';
        queue.addAfter(key, result.requeueAfter);
      }
    } catch (err) {
      if (isTerminalError(err)) {
        outcome = 'terminal';
        queue.forget(key);
        logger.error(`${opts.name}: ${key}: ${errorMessage(err)} (not retried)`, { controller: opts.name, key });
      } else {
        outcome = 'error';
        queue.addRateLimited(key);
        logger.warn(`${opts.name}: ${key}: ${errorMessage(err)} (retry ${queue.numRequeues(key)})`, { controller: opts.name, key });
      }
    } finally {
      queue.done(key);
      opts.onReconcile?.({ controller: opts.name, key, outcome, durationMs: performance.now() - t0 });
    }
  }

  async function worker(): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      await reconcileOne(key);
    }
  }

  let workersDone: Promise<void> = Promise.resolve();
  const ready = (async () => {
    await Promise.all(sources.map((s) => s.informer.waitForSync(syncAc.signal)));
    if (stopping) return;
    workersDone = Promise.all(Array.from({ length: workers }, () => worker())).then(() => undefined);
    logger.debug(`${opts.name}: started ${workers} worker(s)`);
  })();
  // A stop before sync rejects `ready`; callers that never await it must not see an unhandled rejection.
  ready.catch(() => undefined);

  return {
    name: opts.name,
    queue,
    ready,
    enqueue: (key) => queue.add(key),
    async stop(graceMs = 30_000) {
      if (stopping) return workersDone;
      stopping = true;
      for (const u of unsubscribe) u();
      queue.shutDown();
      syncAc.abort(new Error(`controller ${opts.name} stopped before its informers synced`));
      const timer = setTimeout(() => ac.abort(new Error(`controller ${opts.name} stopped`)), graceMs);
      try {
        await ready.catch(() => undefined);
        await workersDone;
      } finally {
        clearTimeout(timer);
        if (!ac.signal.aborted) ac.abort(new Error(`controller ${opts.name} stopped`));
      }
    },
  };
}
