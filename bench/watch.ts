// Waiting for one object to reach a state, on a watch: the benchmark's end-of-run signal for every
// server it measures (Stowage's and the peer's), so no row pays a poll interval the others do not.
import type { DynamicClient, KubeObject, ResourceRef } from '../src/kube/index.js';

const WATCH_RETRY_MS = 200;

/**
 * Waits until `done` says so, on a watch of the one object from `fromVersion` on (the version its
 * create returned), so a finished run is seen when the apiserver has it, not up to a poll later.
 * A broken or expired watch is resumed from a fresh GET. Reports progress every 10 s.
 */
export async function waitFor<T extends KubeObject>(
  client: DynamicClient,
  res: ResourceRef,
  namespace: string,
  name: string,
  fromVersion: string | undefined,
  done: (o: T) => boolean,
  timeoutMs: number,
  progress: (o: T) => void,
): Promise<T> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const what = `${res.resource} ${namespace}/${name}`;
  let lastReport = Date.now();
  let version = fromVersion;
  let last: T | undefined;
  for (;;) {
    if (deadline.aborted) throw new Error(`${what} not done after ${timeoutMs / 1000} s: ${JSON.stringify(last?.status ?? {})}`);
    if (version === undefined) {
      last = await client.get<T>(res, namespace, name);
      if (done(last)) return last;
      version = last.metadata?.resourceVersion;
    }
    let deleted = false;
    try {
      for await (const ev of client.watch<T>(res, { namespace, fieldSelector: `metadata.name=${name}`, resourceVersion: version, signal: deadline })) {
        if (ev.type === 'BOOKMARK') continue;
        if (ev.type === 'DELETED') {
          deleted = true;
          break;
        }
        last = ev.object;
        version = last.metadata?.resourceVersion;
        if (done(last)) return last;
        if (Date.now() - lastReport > 10_000) {
          lastReport = Date.now();
          progress(last);
        }
      }
    } catch {
      // Broken or expired (410): the GET below starts a new watch; the deadline ends the wait.
      if (!deadline.aborted) await new Promise((r) => setTimeout(r, WATCH_RETRY_MS));
    }
    if (deleted) throw new Error(`${what} was deleted while the benchmark waited for it`);
    version = undefined;
  }
}
