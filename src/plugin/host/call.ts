// Every call into a plugin goes through callPlugin(): it (re)starts the process if needed, sets
// the run's metadata and a deadline, and retries once on a new process when the old one died
// while the call was in flight.
import { abortReason, GrpcStatus, RemoteCallError, runMetadata, type CallContext } from '../grpc/index.js';
import type { PluginKind, RunIdentity } from '../api/index.js';
import { PluginCallError, PluginCrashLoopError } from './errors.js';
import type { Live, RestartableProcess } from './restartable.js';
import type { PluginStartError } from './spawn.js';

/**
 * Per-call choices of whoever holds the handle, read at each call: a signal that cancels the call
 * at once (a canceled run), and an outage window shorter than the plugin's own (a canceled run's
 * clean-up asks for 0: a store that is down fails the call instead of being waited for).
 */
export interface RunCallOptions {
  signal?: AbortSignal;
  outageWindowMs?: number;
}

export interface CallSite {
  proc: RestartableProcess;
  kind: PluginKind;
  plugin: string;
  run: RunIdentity | undefined;
  /** Counts retries after a process death (pool statistics). */
  onRetry: (method: string, attempt: number) => void;
  /** Throws when the call may no longer be made (its handle was released). */
  check: () => void;
  options?: () => RunCallOptions;
}

export interface CallPolicy {
  /** Deadline of the whole call. */
  timeoutMs: number;
  /** Streams: longest stall before the call is cancelled. */
  idleTimeoutMs?: number;
  /** Retries allowed after the process died mid-call (the issue asks for one). */
  maxRetries: number;
  /** undefined when the call can be retried after a process death, else the reason it cannot. */
  retryBlocker?: () => string | undefined;
}

/** Transport failures worth waiting a moment for the child's 'exit' event to confirm. */
const TRANSPORT_CODES = new Set<number>([GrpcStatus.UNAVAILABLE, GrpcStatus.INTERNAL, GrpcStatus.CANCELLED, GrpcStatus.UNKNOWN]);

export async function diedDuring(proc: RestartableProcess, live: Live, err: unknown): Promise<boolean> {
  if (!live.proc.alive()) return true;
  if (!(err instanceof RemoteCallError) || err.fromPlugin || !TRANSPORT_CODES.has(err.grpcCode)) return false;
  return proc.hasDied(live, 1000);
}

function describe(site: CallSite, method: string): string {
  return `${site.kind} ${site.plugin} (executable ${site.proc.executable}): ${method}`;
}

/** The error a caller sees: names the plugin and method, keeps 'NotFound', explains deadlines. */
export function wrap(site: CallSite, method: string, policy: CallPolicy, err: unknown): Error {
  if (err instanceof PluginCallError || err instanceof PluginCrashLoopError) return err;
  if (err instanceof RemoteCallError) {
    if (err.grpcCode === GrpcStatus.DEADLINE_EXCEEDED) {
      // A stalled stream says "made no progress for N ms (deadline exceeded)".
      const what = err.message.startsWith('made no progress') ? err.message : `did not finish within ${policy.timeoutMs} ms (deadline exceeded)`;
      return new PluginCallError(`${describe(site, method)} ${what}`, 'DeadlineExceeded', { cause: err });
    }
    return new PluginCallError(`${describe(site, method)} failed: ${err.message}`, err.code, { cause: err });
  }
  const start = err as Partial<PluginStartError>;
  if (start.name === 'PluginStartError') return new PluginCallError(`${describe(site, method)}: ${String(start.message)}`, undefined, { cause: err });
  // Errors of the caller's own making (a failing PutObject body) pass through unchanged.
  return err instanceof Error ? err : new Error(String(err));
}

export function callContext(site: Pick<CallSite, 'run' | 'options'>, policy: CallPolicy): CallContext {
  const o = site.options?.() ?? {};
  const ctx: CallContext = { metadata: runMetadata(site.run, o.outageWindowMs), deadline: new Date(Date.now() + policy.timeoutMs) };
  if (policy.idleTimeoutMs !== undefined) ctx.idleTimeoutMs = policy.idleTimeoutMs;
  if (o.signal !== undefined) ctx.signal = o.signal;
  return ctx;
}

/** Throws the reason when the call's signal has aborted (no new call starts for a canceled run). */
export function checkAborted(site: Pick<CallSite, 'options'>): void {
  const signal = site.options?.().signal;
  if (signal?.aborted === true) throw abortReason(signal);
}

export async function callPlugin<T>(
  site: CallSite,
  method: string,
  policy: CallPolicy,
  op: (live: Live, ctx: CallContext) => Promise<T>,
): Promise<T> {
  site.check();
  for (let attempt = 0; ; attempt++) {
    checkAborted(site);
    let live: Live;
    try {
      live = await site.proc.acquire();
    } catch (err) {
      throw wrap(site, method, policy, err);
    }
    let ctx: CallContext | undefined;
    try {
      ctx = callContext(site, policy);
      const result = await op(live, ctx);
      site.proc.markHealthy(live);
      return result;
    } catch (err) {
      if (ctx?.signal?.aborted === true) throw abortReason(ctx.signal);
      if (!(await diedDuring(site.proc, live, err))) throw wrap(site, method, policy, err);
      const fatal = deathError(site, method, live, attempt, policy, err);
      if (fatal !== undefined) throw fatal;
      site.onRetry(method, attempt + 1);
    } finally {
      site.proc.release();
    }
  }
}

/** After the process died mid-call: the error to throw, or undefined when a retry is allowed. */
export function deathError(site: CallSite, method: string, live: Live, attempt: number, policy: CallPolicy, err: unknown): PluginCallError | undefined {
  const pid = live.proc.pid;
  if (attempt >= policy.maxRetries) {
    const again = attempt > 0 ? `, and again during the ${attempt === 1 ? 'retry' : `${attempt} retries`}` : '';
    return new PluginCallError(
      `${describe(site, method)} failed: the plugin process (pid ${pid}) died during the call${again}; ${live.proc.tail.describe()}`,
      undefined,
      { cause: err },
    );
  }
  const blocker = policy.retryBlocker?.();
  if (blocker !== undefined) {
    return new PluginCallError(`${describe(site, method)} failed: the plugin process (pid ${pid}) died during the call, and ${blocker}`, undefined, {
      cause: err,
    });
  }
  return undefined;
}
