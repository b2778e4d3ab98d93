// Riding out an unreachable object store: a call that fails with a transient error (the network,
// a 5xx, throttling) is retried with backoff until it succeeds or the outage has lasted longer than
// the window (--object-store-outage-timeout, passed to plugin processes in the environment). Errors
// the store means (AccessDenied, NoSuchBucket, any other 4xx) fail at once.
// A call the host cancels (its run was canceled) stops at once: its signal ends the wait.
import { sleep as abortableSleep } from '../../util/backoff.js';
import { formatDuration } from '../../util/duration.js';
import { log, OBJECT_STORE_OUTAGE_ENV } from '../sdk/index.js';

/** The window when the host did not pass one (a plugin started by hand): the server's default. */
export const DEFAULT_OUTAGE_WINDOW_MS = 120_000;

/** The outage window this process was started with. */
export function outageWindowMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[OBJECT_STORE_OUTAGE_ENV];
  if (raw === undefined || raw === '') return DEFAULT_OUTAGE_WINDOW_MS;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`${OBJECT_STORE_OUTAGE_ENV} must be a whole number of milliseconds, not ${JSON.stringify(raw)}`);
  return ms;
}

const TRANSPORT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EAI_AGAIN', 'ENOTFOUND', 'EADDRNOTAVAIL', 'ERR_STREAM_PREMATURE_CLOSE']);
const TRANSPORT_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'NetworkingError']);
const THROTTLING_NAMES = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded', 'ProvisionedThroughputExceededException', 'RequestThrottled', 'BandwidthLimitExceeded', 'InternalError', 'ServiceUnavailable']);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
  $response?: unknown;
}

/** Whether `err` says the store could not be reached or is overloaded, rather than refusing the call. */
export function isTransient(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as ErrorShape).cause, depth++) {
    const s = e as ErrorShape;
    const status = s.$metadata?.httpStatusCode;
    if (typeof s.name === 'string' && THROTTLING_NAMES.has(s.name)) return true;
    // 501: the store does not implement the call; waiting does not change that.
    if (status !== undefined) return (status >= 500 && status !== 501) || status === 429;
    if (typeof s.code === 'string' && TRANSPORT_CODES.has(s.code)) return true;
    if (typeof s.name === 'string' && TRANSPORT_NAMES.has(s.name)) return true;
    if (typeof s.message === 'string' && /socket hang up|other side closed|ECONNREFUSED|ECONNRESET/.test(s.message)) return true;
  }
  return false;
}

// Answers that no retry changes: the request itself is refused (a key the store cannot take, a body
// too large). Throttling, timeouts and credential trouble (an expired token, a rotated key) are not
// among them: they pass, so what waits on them must keep waiting.
const REFUSAL_STATUSES = new Set([400, 405, 411, 413, 414]);
const NOT_REFUSAL_NAMES = /token|auth|credential|signature|accessdenied|timeout|throttl|slowdown/i;

/** Whether `err` is the store refusing this request for good (so it must not be retried forever). */
export function isRefusal(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as ErrorShape).cause, depth++) {
    const s = e as ErrorShape;
    if (typeof s.name === 'string' && NOT_REFUSAL_NAMES.test(s.name)) return false;
    if (s.name === 'KeyTooLongError') return true;
    const status = s.$metadata?.httpStatusCode;
    if (status !== undefined) return REFUSAL_STATUSES.has(status);
  }
  return false;
}

/** A refusal as the plugin reports it: `code` 'Refused' crosses the wire (plugin/grpc/errors.ts). */
export class RefusedError extends Error {
  override readonly name = 'RefusedError';
  readonly code = 'Refused';
}

/** Thrown when an outage outlasted the window: names the call, how long it lasted, and the last error. */
export class OutageError extends Error {
  override readonly name = 'OutageError';
}

export interface RetryOptions {
  windowMs: number;
  /** What set the window, for the error (default the server flag). */
  windowSource?: string;
  /** First backoff; doubles per attempt up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Stops retrying at once, with the signal's reason (the upload failed elsewhere, the host canceled the call). */
  signal?: AbortSignal;
  /** When the outage began, if before this call (a download reopened after its stream broke). */
  since?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}


function describeError(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}

/**
 * Runs `op` until it succeeds; a transient failure is retried with jittered exponential backoff
 * while the outage (counted from this call's first failure) is shorter than the window.
 * `op` receives the attempt number (0 first), so a retry can tell a lost answer from a failure.
 */
export async function retryOutage<T>(what: string, opts: RetryOptions, op: (attempt: number) => Promise<T>): Promise<T> {
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? ((ms: number) => abortableSleep(ms, opts.signal));
  const base = opts.baseDelayMs ?? 250;
  const max = opts.maxDelayMs ?? 5000;
  let since = opts.since;
  let warned = false;
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await op(attempt);
      if (since !== undefined) log.info('object store reachable again', { call: what, outage: formatDuration(Math.round((now() - since) / 100) * 100), attempts: attempt + 1 });
      return result;
    } catch (err) {
      if (!isTransient(err) || opts.signal?.aborted === true) throw err;
      const t = now();
      since ??= t;
      if (!warned && opts.windowMs > 0) log.warn('object store unreachable; retrying', { call: what, error: describeError(err), window: formatDuration(opts.windowMs) });
      warned = true;
      const lasted = t - since;
      const lastedText = formatDuration(Math.round(lasted / 100) * 100);
      if (opts.windowMs <= 0) {
        throw new OutageError(`${what} failed: the object store is unreachable, and no outage is ridden out (${opts.windowSource ?? '--object-store-outage-timeout is 0s'}): ${describeError(err)}`, { cause: err });
      }
      if (lasted >= opts.windowMs) {
        throw new OutageError(
          `${what} failed: the object store was unreachable for ${lastedText}` +
            `${attempt > 0 ? ` (${attempt + 1} attempts)` : ''}, longer than the ${formatDuration(opts.windowMs)} outage window ` +
            `(--object-store-outage-timeout): ${describeError(err)}`,
          { cause: err },
        );
      }
      const exp = Math.min(max, base * 2 ** attempt);
      const delay = exp / 2 + (Math.random() * exp) / 2;
      // The last attempt lands at the window's end, so an outage just shorter than it is ridden out.
      await sleep(Math.max(1, Math.min(delay, opts.windowMs - lasted)));
    }
  }
}
