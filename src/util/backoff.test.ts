import { describe, expect, it } from 'vitest';
import { backoff, sleep } from './backoff.js';

describe('backoff', () => {
  const noJitter = { baseMs: 100, maxMs: 5000, jitter: 0 };

  it('doubles per attempt from the base', () => {
    expect([0, 1, 2, 3, 4].map((a) => backoff(a, noJitter))).toEqual([100, 200, 400, 800, 1600]);
  });

  it('is capped at maxMs, also for huge attempts', () => {
    expect(backoff(6, noJitter)).toBe(5000);
    expect(backoff(10_000, noJitter)).toBe(5000);
  });

  it('treats negative and fractional attempts as whole attempts from 0', () => {
    expect(backoff(-3, noJitter)).toBe(100);
    expect(backoff(2.7, noJitter)).toBe(400);
  });

  it('applies jitter downwards within the jitter fraction', () => {
    expect(backoff(3, { baseMs: 100, maxMs: 5000, jitter: 0.5, random: () => 0 })).toBe(800);
    expect(backoff(3, { baseMs: 100, maxMs: 5000, jitter: 0.5, random: () => 0.999999 })).toBe(400);
    expect(backoff(20, { baseMs: 100, maxMs: 5000, jitter: 0.2, random: () => 0.5 })).toBe(4500);
  });

  it('never exceeds the cap nor goes below (1 - jitter) of the delay with the default jitter', () => {
    for (let i = 0; i < 200; i++) {
      const d = backoff(8, { baseMs: 50, maxMs: 3000 });
      expect(d).toBeLessThanOrEqual(3000);
      expect(d).toBeGreaterThanOrEqual(2400);
    }
  });

  it('rejects negative bounds', () => {
    expect(() => backoff(1, { baseMs: -1, maxMs: 10 })).toThrow('backoff needs baseMs and maxMs >= 0 (got -1, 10)');
  });
});

describe('sleep', () => {
  it('resolves after the delay', async () => {
    const t = Date.now();
    await sleep(30);
    expect(Date.now() - t).toBeGreaterThanOrEqual(25);
  });

  it('rejects with the abort reason when aborted while sleeping', async () => {
    const ac = new AbortController();
    const p = sleep(10_000, ac.signal);
    const reason = new Error('shutting down');
    ac.abort(reason);
    await expect(p).rejects.toBe(reason);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(sleep(10_000, ac.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('does not keep an abort listener after finishing', async () => {
    const ac = new AbortController();
    await sleep(1, ac.signal);
    // Aborting later must not reject anything or throw.
    ac.abort(new Error('late'));
    expect(ac.signal.aborted).toBe(true);
  });
});
