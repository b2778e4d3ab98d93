// Cancel: `spec.cancel: true` on a Backup or Restore. A run still New ends Canceled at once (it
// never starts); a run going on this server is aborted through the AbortSignal its engine already
// carries (the one shutdown and a lost lease use), with a RunCanceled reason, so the lifecycle
// ends it Canceled rather than Failed (lifecycle.ts). A finished run is left as it is.
//
// The informer event is the trigger: a running run's key is busy in the work queue until the run
// ends, so the reconcile cannot see the change in time; the watch below acts on the event itself.
import { ANNOTATION_CANCELED_BY, type StowageKind } from '../../apis/v1/index.js';
import type { KubeObject, ResourceRef } from '../../kube/index.js';
import type { RunKind } from '../../logging/index.js';
import type { Informer, WatchSource } from '../../runtime/index.js';
import type { ControllerContext } from './context.js';
import { stamp } from './runs.js';
import { patchStatusIfCurrent } from './patch.js';

type Cancelable = KubeObject & { metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> }; spec?: { cancel?: boolean } };

const KIND_OF: Record<RunKind, StowageKind> = { backup: 'Backup', restore: 'Restore' };

/** The abort reason of a canceled run: who asked, when the admission webhook recorded it. */
export class RunCanceled extends Error {
  override readonly name = 'RunCanceled';
  constructor(readonly by: string | undefined) {
    super(`canceled ${by !== undefined ? `by ${by}` : 'through spec.cancel (by whom is not recorded)'}`);
  }
}

export function cancelRequested(obj: Cancelable | undefined): boolean {
  return obj?.spec?.cancel === true;
}

/** Who set spec.cancel, as the admission webhook recorded it (absent without the webhook, in trust mode cluster-admin). */
export function canceledBy(obj: Cancelable): string | undefined {
  const by = obj.metadata?.annotations?.[ANNOTATION_CANCELED_BY];
  return by === undefined || by === '' ? undefined : by;
}

/** The cancel that aborted `signal`, if a cancel did (not a shutdown or a lost lease). */
export function cancelOf(signal: AbortSignal): RunCanceled | undefined {
  return signal.aborted && signal.reason instanceof RunCanceled ? signal.reason : undefined;
}

/** Aborts this server's run of `obj` when its spec asks for a cancel; a run not going here is left to the reconcile. */
export function abortIfCanceled(ctx: Pick<ControllerContext, 'runs' | 'namespace'>, kind: RunKind, obj: Cancelable | undefined): void {
  if (obj === undefined || !cancelRequested(obj)) return;
  ctx.runs.get(kind, obj.metadata?.namespace ?? ctx.namespace, obj.metadata?.name ?? '')?.abort(new RunCanceled(canceledBy(obj)));
}

/**
 * Closes the gap between the run going InProgress and registering to be aborted: a cancel whose
 * event came in between is already in the cache (the informer caches before it tells handlers).
 */
export function abortIfCanceledNow(ctx: ControllerContext, kind: RunKind, namespace: string, name: string): void {
  abortIfCanceled(ctx, kind, ctx.informer<Cancelable>(KIND_OF[kind]).get(`${namespace}/${name}`));
}

/**
 * A watch on the kind's informer that enqueues nothing (the controller's own watch does) and aborts
 * a running run as soon as its spec.cancel turns true.
 */
export function cancelWatch(ctx: ControllerContext, kind: RunKind, informer: Informer<KubeObject>): WatchSource {
  return {
    informer,
    mapKeys: (ev) => {
      if (ev.type !== 'delete') abortIfCanceled(ctx, kind, ev.object as Cancelable);
      return [];
    },
  };
}

/**
 * Ends a run that never started as Canceled, conditional on the version read (one that changed
 * meanwhile is decided again on its next event). `record` counts it in the metrics.
 */
export async function cancelBeforeStart(ctx: ControllerContext, kind: RunKind, resource: ResourceRef, obj: Cancelable & { metadata: { name: string; resourceVersion?: string } }, record: () => void): Promise<void> {
  const reason = `${new RunCanceled(canceledBy(obj)).message} before it started`;
  const status = { phase: 'Canceled', failureReason: reason, completionTimestamp: stamp(ctx.clock.now()), waitingFor: null };
  if (!(await patchStatusIfCurrent(ctx, resource, obj, status))) return;
  void ctx.events.event(obj, 'Warning', 'Canceled', reason);
  ctx.logger.info(`${kind} ${obj.metadata.namespace ?? ctx.namespace}/${obj.metadata.name} Canceled: ${reason}`);
  record();
}
