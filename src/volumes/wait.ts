// Waiting for one object to reach a state, on a watch (never polling on a fixed sleep): a LIST by
// name gives the state now and the version to watch from; each event is checked as it comes; a
// watch the server ends is opened again from the last version seen.
import { isGone, isTransient, type DynamicClient, type KubeObject, type ResourceRef } from '../kube/index.js';
import type { TimerClock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';

/** What a check says of the object now (undefined: it does not exist): keep waiting, or done with a value. */
export type Check<R> = (obj: KubeObject | undefined) => { done: R } | undefined;

const RETRY_MS = 500;

export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  constructor(message: string, readonly lastSeen: string | undefined) {
    super(message);
  }
}

export interface WaitOptions {
  timeoutMs: number;
  clock: TimerClock;
  signal?: AbortSignal | undefined;
  /** For the timeout's message: `VolumeSnapshot "ns/x" to become ready`. */
  what: string;
  /** The object as last seen, said in the timeout's message (its status, say). */
  lastSeen?: (obj: KubeObject | undefined) => string;
}

/** Resolves with the check's value once it is done; rejects with WaitTimeoutError after timeoutMs, or the signal's reason. */
export async function waitForObject<R>(
  client: DynamicClient, res: ResourceRef, namespace: string | undefined, name: string, check: Check<R>, opts: WaitOptions,
): Promise<R> {
  const ac = new AbortController();
  // Combined, not a listener on the run's signal: a run waits on many objects at once.
  const signal = opts.signal === undefined ? ac.signal : AbortSignal.any([opts.signal, ac.signal]);
  let last: KubeObject | undefined;
  const timer = opts.clock.sleep(opts.timeoutMs, signal).then(() => {
    const seen = opts.lastSeen?.(last);
    ac.abort(new WaitTimeoutError(`timed out after ${opts.timeoutMs / 1000} s waiting for ${opts.what}${seen === undefined ? '' : `; ${seen}`}`, seen));
  }, () => undefined);
  const fieldSelector = `metadata.name=${name}`;
  try {
    for (;;) {
      try {
        const listed = await client.list(res, { namespace, fieldSelector, signal });
        last = listed.items[0];
        const now = check(last);
        if (now !== undefined) return now.done;
        for await (const ev of client.watch(res, { namespace, fieldSelector, resourceVersion: listed.resourceVersion, signal })) {
          if (ev.type === 'BOOKMARK') continue;
          last = ev.type === 'DELETED' ? undefined : ev.object;
          const r = check(last);
          if (r !== undefined) return r.done;
        }
      } catch (err) {
        // The timeout's error, or the run's reason (cancelled).
        if (signal.aborted) throw signal.reason;
        // 410 Gone or a dropped connection: list again. Anything else is the caller's to report.
        if (!isGone(err) && !isTransient(err)) throw new Error(`watching ${opts.what} failed: ${errorMessage(err)}`, { cause: err });
        // A retry backoff, not a wait for the state: the timeout still bounds the whole wait.
        if (!isGone(err)) await opts.clock.sleep(RETRY_MS, signal).catch(() => undefined);
      }
    }
  } finally {
    if (!ac.signal.aborted) ac.abort();
    await timer;
  }
}
