import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTokenBucket } from './rateLimiter.js';

describe('token bucket', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('allows a burst at once, then qps per second, first come first served', async () => {
    const bucket = createTokenBucket({ qps: 10, burst: 3, now: () => Date.now() });
    const done: number[] = [];
    const t0 = Date.now();
    const all = Array.from({ length: 8 }, (_, i) => bucket.take().then(() => done.push(i)));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toEqual([0, 1, 2]);
    await vi.advanceTimersByTimeAsync(100);
    expect(done).toEqual([0, 1, 2, 3]);
    await vi.advanceTimersByTimeAsync(400);
    await Promise.all(all);
    expect(done).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Date.now() - t0).toBe(500);
  });

  it('refills up to burst only', async () => {
    const bucket = createTokenBucket({ qps: 100, burst: 5, now: () => Date.now() });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(bucket.available()).toBe(5);
  });

  it('gives up a waiting reservation when its signal aborts', async () => {
    const bucket = createTokenBucket({ qps: 1, burst: 1, now: () => Date.now() });
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    ac.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await vi.advanceTimersByTimeAsync(1000);
    expect(bucket.available()).toBe(1);
  });

  it('does not limit when qps is 0', async () => {
    const bucket = createTokenBucket({ qps: 0, burst: 0 });
    await Promise.all(Array.from({ length: 1000 }, () => bucket.take()));
    expect(bucket.available()).toBe(Infinity);
  });
});
