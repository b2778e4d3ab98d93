// Client-side token bucket like client-go's (qps refill, burst capacity), shared by every request
// of one client so a backup listing many resources in parallel cannot flood the apiserver.

export interface RateLimiter {
  /** Resolves when a token is available; rejects with the signal's reason if it aborts first. */
  take(signal?: AbortSignal): Promise<void>;
  /** Takes a token without waiting and returns how many ms the caller should wait before using it. */
  reserve(): number;
  /** Tokens available now (for tests and metrics). */
  available(): number;
}

export interface TokenBucketOptions {
  qps: number;
  burst: number;
  /** Millisecond clock; injectable for tests. */
  now?: () => number;
}

/** A token bucket; qps <= 0 means unlimited. Waiters are served first come, first served. */
export function createTokenBucket(opts: TokenBucketOptions): RateLimiter {
  const now = opts.now ?? (() => performance.now());
  const qps = opts.qps;
  if (!(qps > 0)) return { take: async () => undefined, reserve: () => 0, available: () => Infinity };
  const burst = Math.max(1, Math.floor(opts.burst));
  let tokens = burst;
  let last = now();
  // Tokens are handed out in reservation order: each caller reserves one (possibly going negative)
  // and waits until the bucket would have refilled to its reservation.
  const refill = (): void => {
    const t = now();
    tokens = Math.min(burst, tokens + ((t - last) * qps) / 1000);
    last = t;
  };
  const reserve = (): number => {
    refill();
    tokens -= 1;
    return tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / qps);
  };
  return {
    available: () => {
      refill();
      return Math.max(0, Math.floor(tokens));
    },
    reserve,
    take: (signal?: AbortSignal) => {
      const waitMs = reserve();
      if (waitMs === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          tokens += 1; // give the reservation back
          reject(signal?.reason ?? new Error('aborted'));
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, waitMs);
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}
