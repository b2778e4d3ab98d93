import { describe, expect, it } from 'vitest';
import { sleep } from './backoff.js';
import { createSemaphore, eachLimit, mapLimit, mapLimitSettled } from './concurrency.js';

function tracker() {
  let active = 0;
  let peak = 0;
  return {
    async run<T>(value: T, ms: number): Promise<T> {
      active++;
      peak = Math.max(peak, active);
      await sleep(ms);
      active--;
      return value;
    },
    get peak() {
      return peak;
    },
  };
}

describe('mapLimit', () => {
  it('keeps input order and never exceeds the limit', async () => {
    const t = tracker();
    const items = Array.from({ length: 20 }, (_, i) => i);
    const out = await mapLimit(items, 3, (i) => t.run(i * 2, (20 - i) % 5));
    expect(out).toEqual(items.map((i) => i * 2));
    expect(t.peak).toBe(3);
  });

  it('passes the index and handles an empty input', async () => {
    expect(await mapLimit(['a', 'b'], 5, async (s, i) => `${s}${i}`)).toEqual(['a0', 'b1']);
    expect(await mapLimit([], 2, async () => 1)).toEqual([]);
  });

  it('stops starting items after a failure and rethrows the first error', async () => {
    const started: number[] = [];
    const p = mapLimit([0, 1, 2, 3, 4, 5], 2, async (i) => {
      started.push(i);
      if (i === 1) throw new Error('item 1 failed');
      await sleep(20);
      return i;
    });
    await expect(p).rejects.toThrow('item 1 failed');
    expect(started).toEqual([0, 1]);
  });

  it('rejects with the abort reason and starts nothing more', async () => {
    const ac = new AbortController();
    const started: number[] = [];
    const p = mapLimit(
      [0, 1, 2, 3],
      1,
      async (i) => {
        started.push(i);
        if (i === 1) ac.abort(new Error('stop'));
        await sleep(1);
        return i;
      },
      { signal: ac.signal },
    );
    await expect(p).rejects.toThrow('stop');
    expect(started).toEqual([0, 1]);
  });

  it('refuses a bad limit', async () => {
    await expect(mapLimit([1], 0, async (x) => x)).rejects.toThrow('concurrency limit must be an integer >= 1 (got 0)');
  });
});

describe('mapLimitSettled', () => {
  it('runs every item and reports each outcome', async () => {
    const out = await mapLimitSettled([1, 2, 3], 2, async (i) => {
      if (i === 2) throw new Error('two');
      return i * 10;
    });
    expect(out[0]).toEqual({ status: 'fulfilled', value: 10 });
    expect(out[1]).toMatchObject({ status: 'rejected', reason: new Error('two') });
    expect(out[2]).toEqual({ status: 'fulfilled', value: 30 });
  });
});

describe('eachLimit', () => {
  it('runs every item, at most `limit` at once, and hands each rejection to onRejected', async () => {
    let inFlight = 0;
    let peak = 0;
    const done: number[] = [];
    const rejected: [string, number][] = [];
    await eachLimit([0, 1, 2, 3, 4, 5, 6], 3, async (i) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, (7 - i) % 4));
      inFlight--;
      if (i % 3 === 1) throw new Error(`item ${i}`);
      done.push(i);
    }, { onRejected: (reason, item) => rejected.push([(reason as Error).message, item]) });
    expect(peak).toBe(3);
    expect(done.sort()).toEqual([0, 2, 3, 5, 6]);
    expect(rejected.sort()).toEqual([['item 1', 1], ['item 4', 4]]);
  });

  it('stops starting items once aborted and rejects with the reason', async () => {
    const ac = new AbortController();
    const started: number[] = [];
    const p = eachLimit([0, 1, 2, 3, 4], 2, async (i) => {
      started.push(i);
      if (i === 1) ac.abort(new Error('stop'));
      await Promise.resolve();
    }, { signal: ac.signal });
    await expect(p).rejects.toThrow('stop');
    expect(started).toEqual([0, 1]);
    await expect(eachLimit([1], 0, async () => undefined)).rejects.toThrow('concurrency limit must be an integer >= 1 (got 0)');
  });
});

describe('createSemaphore', () => {
  it('limits holders and grants waiters in FIFO order', async () => {
    const sem = createSemaphore(2);
    const r1 = await sem.acquire();
    const r2 = await sem.acquire();
    expect(sem.available).toBe(0);
    const order: string[] = [];
    const a = sem.acquire().then((r) => (order.push('a'), r));
    const b = sem.acquire().then((r) => (order.push('b'), r));
    expect(sem.waiting).toBe(2);
    r1();
    r1(); // a second call must not free another slot
    const ra = await a;
    expect(order).toEqual(['a']);
    expect(sem.waiting).toBe(1);
    r2();
    const rb = await b;
    expect(order).toEqual(['a', 'b']);
    ra();
    rb();
    expect(sem.available).toBe(2);
  });

  it('run releases the slot even when fn throws', async () => {
    const sem = createSemaphore(1);
    await expect(sem.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(sem.available).toBe(1);
    expect(await sem.run(async () => 7)).toBe(7);
  });

  it('an aborted waiter leaves the queue without taking a slot', async () => {
    const sem = createSemaphore(1);
    const release = await sem.acquire();
    const ac = new AbortController();
    const waiting = sem.acquire(ac.signal);
    ac.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(sem.waiting).toBe(0);
    release();
    expect(sem.available).toBe(1);
  });

  it('refuses a bad limit', () => {
    expect(() => createSemaphore(1.5)).toThrow('concurrency limit must be an integer >= 1 (got 1.5)');
  });
});
