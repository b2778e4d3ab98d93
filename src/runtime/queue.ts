// A work queue with client-go's guarantees: a key waits in the queue at most once however often it
// is added, one key is never handed to two workers at once (a key added while it is being
// processed is re-queued when done() is called), and failures back off per key.
import { createTokenBucket } from '../kube/rateLimiter.js';

export interface WorkQueueOptions {
  /** First retry delay of a failing key; doubles per failure. Default 5 ms. */
  baseDelayMs?: number;
  /** Cap of the per-key retry delay. Default 5 minutes. */
  maxDelayMs?: number;
  /**
   * Overall limit on rate-limited re-adds (all keys together), as client-go's default controller
   * rate limiter does, so a burst of failures cannot hammer the apiserver. Default 10/s, burst 100.
   */
  qps?: number;
  burst?: number;
}

export interface WorkQueue {
  /** Queues the key unless it is already waiting. */
  add(key: string): void;
  /** Queues the key after `ms` (the earliest pending time wins when added several times). */
  addAfter(key: string, ms: number): void;
  /** Queues the key after its per-key backoff, and counts a failure. */
  addRateLimited(key: string): void;
  /** Resets the key's failure count (call on success). */
  forget(key: string): void;
  /** Failures counted for the key since the last forget(). */
  numRequeues(key: string): number;
  /** The next key to process, or undefined once the queue is shut down. Pair every key with done(). */
  get(): Promise<string | undefined>;
  /** Marks the key processed; if it was added meanwhile, it goes back in the queue. */
  done(key: string): void;
  /** Keys waiting now (not delayed ones, not in progress). */
  len(): number;
  /** Keys being processed now. */
  processing(): number;
  /** Stops handing out keys; pending get() calls resolve undefined; delayed adds are dropped. */
  shutDown(): void;
  isShuttingDown(): boolean;
}

export function createWorkQueue(opts: WorkQueueOptions = {}): WorkQueue {
  const baseDelayMs = opts.baseDelayMs ?? 5;
  const maxDelayMs = opts.maxDelayMs ?? 5 * 60_000;
  const bucket = createTokenBucket({ qps: opts.qps ?? 10, burst: opts.burst ?? 100, now: () => Date.now() });

  const queue: string[] = [];
  let head = 0; // index of the next key; avoids O(n) shift()
  const dirty = new Set<string>();
  const inProgress = new Set<string>();
  const failures = new Map<string, number>();
  const delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  const waiters: ((key: string | undefined) => void)[] = [];
  let shuttingDown = false;

  function push(key: string): void {
    const w = waiters.shift();
    if (w !== undefined) {
      inProgress.add(key);
      dirty.delete(key);
      w(key);
      return;
    }
    queue.push(key);
  }

  function add(key: string): void {
    if (shuttingDown || dirty.has(key)) return;
    dirty.add(key);
    if (inProgress.has(key)) return;
    push(key);
  }

  function addAfter(key: string, ms: number): void {
    if (shuttingDown) return;
    if (!(ms > 0)) {
      add(key);
      return;
    }
    const at = Date.now() + ms;
    const prev = delayed.get(key);
    if (prev !== undefined) {
      if (prev.at <= at) return;
      clearTimeout(prev.timer);
    }
    const timer = setTimeout(() => {
      delayed.delete(key);
      add(key);
    }, ms);
    // A pending retry must not keep the process alive on its own.
    timer.unref?.();
    delayed.set(key, { at, timer });
  }

  return {
    add,
    addAfter,
    addRateLimited(key) {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      const perKey = Math.min(maxDelayMs, baseDelayMs * 2 ** n);
      addAfter(key, Math.max(perKey, bucket.reserve()));
    },
    forget(key) {
      failures.delete(key);
    },
    numRequeues: (key) => failures.get(key) ?? 0,
    get() {
      if (shuttingDown) return Promise.resolve(undefined);
      if (head < queue.length) {
        const key = queue[head] as string;
        head++;
        if (head > 1024 && head * 2 > queue.length) {
          queue.splice(0, head);
          head = 0;
        }
        inProgress.add(key);
        dirty.delete(key);
        return Promise.resolve(key);
      }
      return new Promise((resolve) => waiters.push(resolve));
    },
    done(key) {
      inProgress.delete(key);
      if (dirty.has(key) && !shuttingDown) push(key);
    },
    len: () => queue.length - head,
    processing: () => inProgress.size,
    shutDown() {
      shuttingDown = true;
      for (const d of delayed.values()) clearTimeout(d.timer);
      delayed.clear();
      for (const w of waiters.splice(0)) w(undefined);
    },
    isShuttingDown: () => shuttingDown,
  };
}
