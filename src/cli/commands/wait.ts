// `--wait`: polls a Backup or Restore until its phase is final, drawing progress as it goes.
// Ctrl-C stops waiting only; the run goes on in the server.
import type { ResourceRef } from '../../kube/index.js';
import { isNotFound } from '../../kube/index.js';
import { sleep } from '../../util/backoff.js';
import { CliError } from './errors.js';
import type { CliContext } from './kubeContext.js';
import { createProgress, type ProgressSnapshot } from './progress.js';

export interface WaitSpec<T> {
  ctx: CliContext;
  res: ResourceRef;
  kind: 'backup' | 'restore';
  name: string;
  /** Counted noun for the bar: "items backed up". */
  noun: string;
  snapshot(obj: T): ProgressSnapshot;
  isTerminal(obj: T): boolean;
  pollMs?: number;
  /** After this long still in phase New, say that the server may not be running. */
  stuckNewMs?: number;
}

export class WaitInterrupted extends CliError {
  constructor(kind: string, name: string) {
    super(`stopped waiting; the ${kind} goes on in the server. Check on it with \`stowage ${kind} describe ${name}\``, 130);
  }
}

export async function waitForRun<T>(spec: WaitSpec<T>): Promise<T> {
  const { ctx, res, kind, name } = spec;
  const progress = createProgress({ noun: spec.noun });
  const pollMs = spec.pollMs ?? (process.stdout.isTTY ? 250 : 1000);
  const stuckMs = spec.stuckNewMs ?? 20_000;
  const abort = new AbortController();
  const onSigint = (): void => abort.abort();
  process.once('SIGINT', onSigint);
  const started = Date.now();
  let warnedStuck = false;
  try {
    for (;;) {
      let obj: T;
      try {
        obj = await ctx.client.get<T>(res, ctx.namespace, name, { signal: abort.signal });
      } catch (err) {
        if (abort.signal.aborted) throw new WaitInterrupted(kind, name);
        if (isNotFound(err)) throw new CliError(`${kind} "${name}" was deleted while waiting for it`);
        throw err;
      }
      const snap = spec.snapshot(obj);
      progress.update(snap);
      if (spec.isTerminal(obj)) return obj;
      if (!warnedStuck && snap.phase === 'New' && Date.now() - started > stuckMs) {
        warnedStuck = true;
        progress.finish();
        process.stderr.write(
          `warning: the ${kind} has not started after ${Math.round(stuckMs / 1000)}s; is the Stowage server running in namespace ${ctx.namespace}? (check with \`stowage version\`)\n`,
        );
      }
      try {
        await sleep(pollMs, abort.signal);
      } catch {
        throw new WaitInterrupted(kind, name);
      }
    }
  } finally {
    progress.finish();
    process.off('SIGINT', onSigint);
  }
}
