import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createWorkQueue } from './queue.js';

describe('work queue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('merges duplicate keys and keeps FIFO order', async () => {
    const q = createWorkQueue();
    for (const k of ['a', 'b', 'a', 'c', 'b']) q.add(k);
    expect(q.len()).toBe(3);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['a', 'b', 'c']);
  });

  it('never hands a key to two workers; a re-add while processing comes back after done', async () => {
    const q = createWorkQueue();
    q.add('a');
    const first = await q.get();
    expect(first).toBe('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0); // held back while 'a' is in progress
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await vi.advanceTimersByTimeAsync(0);
    expect(second).toBeUndefined();
    q.done('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(second).toBe('a'); // exactly once, despite two re-adds
    q.done('a');
    expect(q.len()).toBe(0);
    expect(q.processing()).toBe(0);
  });

  /** Milliseconds of fake time until the queue hands out a key. */
  async function msUntilGet(q: ReturnType<typeof createWorkQueue>): Promise<number> {
    let got: string | undefined;
    void q.get().then((k) => (got = k));
    let ms = 0;
    await vi.advanceTimersByTimeAsync(0);
    while (got === undefined) {
      await vi.advanceTimersByTimeAsync(1);
      ms++;
    }
    q.done(got);
    return ms;
  }

  it('backs off per key exponentially up to the cap, and forget resets it', async () => {
    const q = createWorkQueue({ baseDelayMs: 100, maxDelayMs: 350 });
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      q.addRateLimited('a');
      delays.push(await msUntilGet(q));
    }
    expect(delays).toEqual([100, 200, 350, 350]);
    expect(q.numRequeues('a')).toBe(4);
    // Another key has its own count.
    q.addRateLimited('b');
    expect(await msUntilGet(q)).toBe(100);
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
    q.addRateLimited('a');
    expect(await msUntilGet(q)).toBe(100);
  });

  it('addAfter delays the key, keeps the earliest time, and merges with a plain add', async () => {
    const q = createWorkQueue();
    q.addAfter('a', 1000);
    q.addAfter('a', 300);
    q.addAfter('a', 5000);
    await vi.advanceTimersByTimeAsync(299);
    expect(q.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(q.len()).toBe(1);
    q.add('a');
    expect(q.len()).toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(q.len()).toBe(1); // the later timers were replaced, not stacked
  });

  it('shuts down: waiting getters get undefined and delayed keys are dropped', async () => {
    const q = createWorkQueue();
    const waiting = q.get();
    q.addAfter('x', 100);
    q.shutDown();
    expect(await waiting).toBeUndefined();
    await vi.advanceTimersByTimeAsync(200);
    expect(await q.get()).toBeUndefined();
    q.add('y');
    expect(q.len()).toBe(0);
    expect(q.isShuttingDown()).toBe(true);
  });

  it('limits rate-limited re-adds overall, across keys', async () => {
    const q = createWorkQueue({ baseDelayMs: 1, qps: 10, burst: 2 });
    for (const k of ['a', 'b', 'c', 'd']) q.addRateLimited(k);
    await vi.advanceTimersByTimeAsync(1);
    expect(q.len()).toBe(2);
    await vi.advanceTimersByTimeAsync(100);
    expect(q.len()).toBe(3);
    await vi.advanceTimersByTimeAsync(100);
    expect(q.len()).toBe(4);
  });
});
