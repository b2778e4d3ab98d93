import { describe, expect, it } from 'vitest';
import { movableClock } from './clock.js';

describe('movableClock', () => {
  it('ends, in order, the waits an advance jumps past, and only those', async () => {
    const clock = movableClock();
    const ended: string[] = [];
    const t0 = clock.now().getTime();
    const long = clock.sleep(3_600_000).then(() => ended.push('hour'));
    void clock.sleep(60_000).then(() => ended.push('minute'));
    void clock.sleep(30_000).then(() => ended.push('half'));
    clock.advance(90_000);
    await clock.sleep(0);
    expect(ended).toEqual(['half', 'minute']);
    expect(clock.now().getTime() - t0).toBeGreaterThanOrEqual(90_000);
    expect(clock.offsetMs()).toBe(90_000);
    clock.advance(3_600_000);
    await long;
    expect(ended).toEqual(['half', 'minute', 'hour']);
  });

  it('lets short waits end on the wall clock without being moved', async () => {
    const clock = movableClock();
    await clock.sleep(5);
    expect(clock.offsetMs()).toBe(0);
  });

  it('rejects a wait whose signal aborts, with the reason, and forgets it', async () => {
    const clock = movableClock();
    const ac = new AbortController();
    const wait = clock.sleep(60_000, ac.signal);
    ac.abort(new Error('stopping'));
    await expect(wait).rejects.toThrow('stopping');
    clock.advance(120_000);
    await expect(clock.sleep(1, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });

  it('refuses to move backwards', () => {
    expect(() => movableClock().advance(-1)).toThrow(/only moves forward/);
  });
});
