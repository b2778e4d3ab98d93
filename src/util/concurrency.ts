// Bounded concurrency: a FIFO semaphore and order-preserving mapLimit helpers.

export interface Semaphore {
  /** Waits for a slot; the returned function gives it back (calling it twice is a no-op). */
  acquire(signal?: AbortSignal): Promise<() => void>;
  /** Runs fn while holding a slot. */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Free slots now. */
  readonly available: number;
  /** Callers waiting for a slot. */
  readonly waiting: number;
}

export function createSemaphore(limit: number): Semaphore {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency limit must be an integer >= 1 (got ${limit})`);
  let free = limit;
  const queue: Array<{ grant: () => void }> = [];

  const makeRelease = (): (() => void) => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = queue.shift();
      if (next) next.grant();
      else free++;
    };
  };

  const acquire = (signal?: AbortSignal): Promise<() => void> => {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (free > 0) {
      free--;
      return Promise.resolve(makeRelease());
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(makeRelease());
        },
      };
      const onAbort = (): void => {
        const i = queue.indexOf(entry);
        if (i >= 0) queue.splice(i, 1);
        reject(abortReason(signal));
      };
      queue.push(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  };

  return {
    acquire,
    async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      const release = await acquire(signal);
      try {
        return await fn();
      } finally {
        release();
      }
    },
    get available() {
      return free;
    },
    get waiting() {
      return queue.length;
    },
  };
}

export interface MapLimitOptions {
  /** Stops starting new items once aborted; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Maps items with at most `limit` calls in flight; results keep input order. On the first failure
 * no new items start, in-flight ones are awaited, and the first error is thrown.
 */
export async function mapLimit<T, R>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  opts: MapLimitOptions = {},
): Promise<R[]> {
  const settled = await runLimited(items, limit, fn, opts, true);
  const out: R[] = [];
  for (const r of settled) {
    if (r.status === 'rejected') throw r.reason;
    out.push(r.value);
  }
  return out;
}

/** Like mapLimit but runs every item and reports each outcome (for "continue on error" loops). */
export async function mapLimitSettled<T, R>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  opts: MapLimitOptions = {},
): Promise<PromiseSettledResult<R>[]> {
  return runLimited(items, limit, fn, opts, false);
}

/**
 * Runs `fn` on every item, at most `limit` at a time, and keeps no result: for loops over many items
 * whose outcomes `fn` records itself (a restore's tier of 50,000 items held a settled result per item
 * until the tier ended). A rejection does not stop the others; it goes to `onRejected`, if given.
 */
export async function eachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<unknown>,
  opts: MapLimitOptions & { onRejected?: (reason: unknown, item: T) => void } = {},
): Promise<void> {
  const { signal, onRejected } = opts;
  checkStart(limit, signal);
  await pool(items.length, limit, (i) => fn(items[i] as T, i).then(() => undefined, (reason: unknown) => onRejected?.(reason, items[i] as T)), () => false, signal);
  if (signal?.aborted) throw abortReason(signal);
}

function checkStart(limit: number, signal: AbortSignal | undefined): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency limit must be an integer >= 1 (got ${limit})`);
  if (signal?.aborted) throw abortReason(signal);
}

/** Runs `run(i)` for i in [0, n), at most `limit` at once, until `stop()` or the signal says so. `run` never rejects. */
async function pool(n: number, limit: number, run: (i: number) => Promise<void>, stop: () => boolean, signal: AbortSignal | undefined): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n && !stop() && !signal?.aborted) await run(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
}

async function runLimited<T, R>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  opts: MapLimitOptions,
  failFast: boolean,
): Promise<PromiseSettledResult<R>[]> {
  const { signal } = opts;
  checkStart(limit, signal);
  const list = [...items];
  const results: PromiseSettledResult<R>[] = new Array<PromiseSettledResult<R>>(list.length);
  let failed = false;
  const run = async (i: number): Promise<void> => {
    try {
      results[i] = { status: 'fulfilled', value: await fn(list[i] as T, i) };
    } catch (reason) {
      results[i] = { status: 'rejected', reason };
      failed = true;
    }
  };
  await pool(list.length, limit, run, () => failFast && failed, signal);
  if (signal?.aborted) throw abortReason(signal);
  if (failFast && failed) {
    // Report the first failure in input order, which is deterministic for callers and tests.
    const first = results.find((r): r is PromiseRejectedResult => r !== undefined && r.status === 'rejected');
    throw first?.reason;
  }
  return results;
}

function abortReason(signal: AbortSignal | undefined): unknown {
  const reason: unknown = signal?.reason;
  if (reason !== undefined) return reason;
  const err = new Error('the operation was aborted');
  err.name = 'AbortError';
  return err;
}
