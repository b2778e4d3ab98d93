// What every controller receives from the composition root (src/main.ts), and how it declares
// itself. Controllers are plain functions `xxxController(ctx) => ControllerDefinition`; main.ts
// starts each definition's reconciler with runtime/startController once this replica leads.
import type winston from 'winston';
import type { StowageKind } from '../../apis/v1/index.js';
import type { Authority } from '../../auth/index.js';
import type { ServerConfig } from '../../config/index.js';
import type { DynamicClient, EventRecorder, KubeObject } from '../../kube/index.js';
import type { LogSpool, LogTail } from '../../logging/index.js';
import type { StowageMetrics } from '../../metrics/index.js';
import type { PluginPool } from '../../plugin/host/index.js';
import type { Informer, Reconciler, WatchSource } from '../../runtime/index.js';
import type { Clock, TimerClock } from '../../util/clock.js';

export interface ControllerContext {
  config: ServerConfig;
  /** The namespace the server watches for its own resources (Backups, locations, ...). */
  namespace: string;
  client: DynamicClient;
  /** The server log (stdout). Per-run logs are created by the backup and restore controllers. */
  logger: winston.Logger;
  metrics: StowageMetrics;
  plugins: PluginPool;
  events: EventRecorder;
  spool: LogSpool;
  clock: Clock;
  /** Times the waits of runs (a CSI snapshot's csiSnapshotTimeout); the system clock when absent. */
  timer?: TimerClock;
  /** Where run logs are written while a run is going (served live to `stowage backup logs --follow`). */
  runLogDir: string;
  /** Scratch space (credential files for plugins, temporary downloads). */
  scratchDir: string;
  /** The server log's last lines in memory (served as the ServerLog download target); absent, that target is refused. */
  logTail?: LogTail;
  serverVersion: string;
  /** Shared informer over one of Stowage's kinds in `namespace`; one per kind per server. */
  informer<T extends KubeObject = KubeObject>(kind: StowageKind): Informer<T>;
  /** Aborted when the server starts shutting down: stop starting new work. */
  shutdown: AbortSignal;
  /** Runs in progress on this server (backups and restores), for live logs and shutdown. */
  runs: RunRegistry;
  /**
   * The rights a run or request on `obj` acts with (auth/authority.ts): its requester's, through an
   * impersonating client, in trust mode `requester`; the server's own in `cluster-admin`. An error
   * when it has none (no stamp from the admission webhook).
   */
  authority(obj: Pick<KubeObject, 'metadata' | 'kind'>): Authority | { error: string };
  /**
   * Trust mode requester: whether the admission webhook is in effect for this namespace
   * (webhook/health.ts). While it is not, no backup or restore starts (run/webhookHold.ts).
   */
  webhookGate?: WebhookGate;
}

export interface WebhookGate {
  /** Why runs are held now, or undefined. */
  holdReason(): string | undefined;
  /** Called each time the webhook is in effect again. */
  onHealthy(fn: () => void): void;
}

export interface ControllerDefinition {
  name: string;
  reconciler: Reconciler;
  /** Informers whose events enqueue keys (see runtime WatchSource for mapping events to other keys). */
  watches: (Informer<KubeObject> | WatchSource)[];
  /** Concurrent reconciles. Default 1. */
  workers?: number;
  /** Runs once when this replica starts leading, before the workers start (e.g. the stale-run sweep). */
  onStart?: () => Promise<void>;
  /** Called with the controller's enqueue once it runs: for keys woken by something other than their own events. */
  bind?: (enqueue: (key: string) => void) => void;
}

/**
 * A cache the controller reads but whose events enqueue nothing. Listed in `watches` so that it has
 * synced before the workers start: at start-up or failover a reconcile must not find a Backup or a
 * location missing only because that informer's first LIST has not finished.
 */
export function readsFrom(informer: Informer<KubeObject>): WatchSource {
  return { informer, mapKeys: () => [] };
}

export interface ActiveRun {
  kind: 'backup' | 'restore';
  namespace: string;
  name: string;
  /** Path of the run's gzip log while it is going. */
  logPath: string;
  /** The lines written so far (while the run is going). */
  linesSoFar(): Promise<string[]>;
  /** Live lines of the run's log; returns the unsubscribe function. */
  follow(cb: (line: string) => void, opts?: { fromStart?: boolean; onEnd?: () => void }): () => void;
  /** Aborts the run: it ends Failed with `reason`, or Canceled when the reason is a RunCanceled (run/cancel.ts). */
  abort(reason: string | Error): void;
  /** Settles when the run has finished and its status is written. */
  done: Promise<void>;
}

export interface RunRegistry {
  add(run: ActiveRun): void;
  remove(kind: ActiveRun['kind'], namespace: string, name: string): void;
  get(kind: ActiveRun['kind'], namespace: string, name: string): ActiveRun | undefined;
  list(): ActiveRun[];
}

/** How many runs of each kind are in progress. */
export interface RunCounts {
  backups: number;
  restores: number;
}

/** `onChange` hears the counts after every add and remove (the server's heap policy follows the backups). */
export function createRunRegistry(onChange?: (counts: RunCounts) => void): RunRegistry {
  const runs = new Map<string, ActiveRun>();
  const key = (kind: string, ns: string, name: string): string => `${kind}/${ns}/${name}`;
  const changed = (): void => {
    if (onChange === undefined) return;
    const counts: RunCounts = { backups: 0, restores: 0 };
    for (const r of runs.values()) counts[r.kind === 'backup' ? 'backups' : 'restores']++;
    onChange(counts);
  };
  return {
    add: (run) => {
      runs.set(key(run.kind, run.namespace, run.name), run);
      changed();
    },
    remove: (kind, ns, name) => {
      if (runs.delete(key(kind, ns, name))) changed();
    },
    get: (kind, ns, name) => runs.get(key(kind, ns, name)),
    list: () => [...runs.values()],
  };
}

/** What opening a location's store needs (storage/context.ts): the controller context has it. */
export type { StoreContext } from '../../storage/context.js';
