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
  const onOuter = (): void => ac.abort(opts.signal?.reason);
  if (opts.signal?.aborted === true) onOuter();
  opts.signal?.addEventListener('abort', onOuter, { once: true });
  let last: KubeObject | undefined;
  let timedOut = false;
  const timer = opts.clock.sleep(opts.timeoutMs, ac.signal).then(() => {
    timedOut = true;
    const seen = opts.lastSeen?.(last);
    ac.abort(new WaitTimeoutError(`timed out after ${opts.timeoutMs / 1000} s waiting for ${opts.what}${seen === undefined ? '' : `; ${seen}`}`, seen));
  }, () => undefined);
  const fieldSelector = `metadata.name=${name}`;
  try {
    for (;;) {
      try {
        const listed = await client.list(res, { namespace, fieldSelector, signal: ac.signal });
        last = listed.items[0];
        const now = check(last);
        if (now !== undefined) return now.done;
        for await (const ev of client.watch(res, { namespace, fieldSelector, resourceVersion: listed.resourceVersion, signal: ac.signal })) {
          if (ev.type === 'BOOKMARK') continue;
          last = ev.type === 'DELETED' ? undefined : ev.object;
          const r = check(last);
          if (r !== undefined) return r.done;
        }
      } catch (err) {
        if (ac.signal.aborted) throw timedOut ? ac.signal.reason : (opts.signal?.reason ?? err);
        // 410 Gone or a dropped connection: list again. Anything else is the caller's to report.
        if (!isGone(err) && !isTransient(err)) throw new Error(`watching ${opts.what} failed: ${errorMessage(err)}`, { cause: err });
        // A retry backoff, not a wait for the state: the timeout still bounds the whole wait.
        if (!isGone(err)) await opts.clock.sleep(RETRY_MS, ac.signal).catch(() => undefined);
      }
    }
  } finally {
    opts.signal?.removeEventListener('abort', onOuter);
    if (!ac.signal.aborted) ac.abort();
    await timer;
  }
}
