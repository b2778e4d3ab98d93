// Capped exponential backoff with jitter, and an abortable sleep.

export interface BackoffOptions {
  /** Delay for attempt 0. */
  baseMs: number;
  /** Upper bound for any delay. */
  maxMs: number;
  /**
   * Fraction of the delay that is randomised, 0..1 (default 0.2): the result lies in
   * [delay * (1 - jitter), delay], so workers retrying together spread out and the cap still holds.
   */
  jitter?: number;
  /** Source of randomness in [0, 1); injectable for tests. */
  random?: () => number;
}

/** Delay before retry number `attempt` (0-based): base * 2^attempt, capped at maxMs, with jitter. */
export function backoff(attempt: number, opts: BackoffOptions): number {
  const { baseMs, maxMs } = opts;
  if (!(baseMs >= 0) || !(maxMs >= 0)) throw new RangeError(`backoff needs baseMs and maxMs >= 0 (got ${baseMs}, ${maxMs})`);
  const jitter = Math.min(Math.max(opts.jitter ?? 0.2, 0), 1);
  const random = opts.random ?? Math.random;
  const n = Math.max(0, Math.floor(attempt));
  // 2^n overflows to Infinity for huge n, which min() turns into the cap.
  const delay = Math.min(maxMs, baseMs * 2 ** n);
  return Math.round(delay * (1 - jitter * random()));
}

/** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** What a sleep rejects with when `signal` aborts: its reason, or an AbortError. */
export function abortReason(signal: AbortSignal | undefined): unknown {
  const reason: unknown = signal?.reason;
  if (reason !== undefined) return reason;
  const err = new Error('the operation was aborted');
  err.name = 'AbortError';
  return err;
}
