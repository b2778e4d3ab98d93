import { describe, expect, it } from 'vitest';
import { isRefusal, isTransient, outageWindowMs, OutageError, retryOutage } from './outage.js';

/** A clock the retry's sleeps move (no real waiting). */
function fakeTime(): { now: () => number; sleep: (ms: number) => Promise<void>; slept: number[] } {
  let t = 1_000_000;
  const slept: number[] = [];
  return { now: () => t, sleep: async (ms) => { slept.push(ms); t += ms; }, slept };
}

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9000'), { code: 'ECONNREFUSED' });
const s3Error = (name: string, status: number): Error => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });

describe('isRefusal', () => {
  it('is a request the store refuses for good, not an outage, throttling or credential trouble', () => {
    expect(isRefusal(s3Error('KeyTooLongError', 400))).toBe(true);
    expect(isRefusal(s3Error('XMinioInvalidObjectName', 400))).toBe(true);
    expect(isRefusal(s3Error('EntityTooLarge', 413))).toBe(true);
    expect(isRefusal(new Error('wrapped', { cause: s3Error('InvalidArgument', 400) }))).toBe(true);
    expect(isRefusal(s3Error('ExpiredToken', 400))).toBe(false);
    expect(isRefusal(s3Error('RequestTimeout', 400))).toBe(false);
    expect(isRefusal(s3Error('AccessDenied', 403))).toBe(false);
    expect(isRefusal(s3Error('NoSuchBucket', 404))).toBe(false);
    expect(isRefusal(s3Error('SlowDown', 503))).toBe(false);
    expect(isRefusal(s3Error('TooManyRequests', 429))).toBe(false);
    expect(isRefusal(refused())).toBe(false);
  });
});

describe('isTransient', () => {
  it('retries transport failures, 5xx and throttling, not what the store refuses', () => {
    expect(isTransient(refused())).toBe(true);
    expect(isTransient(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isTransient(new Error('socket hang up'))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { name: 'TimeoutError' }))).toBe(true);
    expect(isTransient(s3Error('InternalError', 500))).toBe(true);
    expect(isTransient(s3Error('ServiceUnavailable', 503))).toBe(true);
    expect(isTransient(s3Error('SlowDown', 503))).toBe(true);
    expect(isTransient(s3Error('TooManyRequests', 429))).toBe(true);
    expect(isTransient(new Error('wrapped', { cause: refused() }))).toBe(true);
    expect(isTransient(s3Error('AccessDenied', 403))).toBe(false);
    expect(isTransient(s3Error('NoSuchBucket', 404))).toBe(false);
    expect(isTransient(s3Error('InvalidPart', 400))).toBe(false);
    expect(isTransient(s3Error('NotImplemented', 501))).toBe(false);
    expect(isTransient(new Error('the body failed'))).toBe(false);
  });
});

describe('retryOutage', () => {
  it('rides out an outage shorter than the window and answers what the call answered', async () => {
    const time = fakeTime();
    let calls = 0;
    const v = await retryOutage('PutObject b/k', { windowMs: 10_000, ...time }, async (attempt) => {
      calls++;
      if (time.now() < 1_000_000 + 4000) throw refused();
      return `ok after ${attempt}`;
    });
    expect(v).toBe(`ok after ${calls - 1}`);
    expect(calls).toBeGreaterThan(3);
    // Backoff grows but stays under the cap.
    expect(Math.max(...time.slept)).toBeLessThanOrEqual(5000);
    expect(time.slept[1]).toBeGreaterThanOrEqual(time.slept[0] as number);
  });

  it('fails an outage longer than the window, naming it and how long it lasted', async () => {
    const time = fakeTime();
    const err = await retryOutage('UploadPart 3 of b/k', { windowMs: 5000, ...time }, async () => { throw refused(); }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutageError);
    expect((err as Error).message).toMatch(/^UploadPart 3 of b\/k failed: the object store was unreachable for 5s \(\d+ attempts\), longer than the 5s outage window \(--object-store-outage-timeout\): connect ECONNREFUSED 127\.0\.0\.1:9000$/);
    // The last attempt is made at the window's end, not before it.
    expect(time.now() - 1_000_000).toBe(5000);
  });

  it('does not retry an error the store means, nor after the caller gave up', async () => {
    const time = fakeTime();
    let calls = 0;
    await expect(retryOutage('HeadObject b/k', { windowMs: 60_000, ...time }, async () => { calls++; throw s3Error('AccessDenied', 403); })).rejects.toThrow('AccessDenied');
    expect(calls).toBe(1);
    const stop = new AbortController();
    stop.abort();
    await expect(retryOutage('UploadPart 1 of b/k', { windowMs: 60_000, signal: stop.signal, ...time }, async () => { throw refused(); })).rejects.toThrow('ECONNREFUSED');
  });

  it('with a window of 0 fails at the first transient error, saying no outage is ridden out', async () => {
    const time = fakeTime();
    await expect(retryOutage('PutObject b/k', { windowMs: 0, ...time }, async () => { throw refused(); })).rejects.toThrow(
      'PutObject b/k failed: the object store is unreachable, and no outage is ridden out (--object-store-outage-timeout is 0s): connect ECONNREFUSED',
    );
    expect(time.slept).toEqual([]);
  });

  it('counts an outage that began before the call (a broken download reopened)', async () => {
    const time = fakeTime();
    const err = await retryOutage('GetObject b/k from byte 10', { windowMs: 5000, since: time.now() - 4000, ...time }, async () => { throw refused(); }).catch((e: unknown) => e as Error);
    expect(err.message).toContain('unreachable for 5s');
    expect(time.now() - 1_000_000).toBe(1000);
  });
});

describe('outageWindowMs', () => {
  it('reads the window the host passed, else the server default', () => {
    expect(outageWindowMs({ STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS: '5000' })).toBe(5000);
    expect(outageWindowMs({})).toBe(120_000);
    expect(() => outageWindowMs({ STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS: '2m' })).toThrow('whole number of milliseconds');
  });
});

describe('retryOutage and a canceled call', () => {
  it('stops waiting out the outage as soon as the signal aborts, with its reason', async () => {
    const cancel = new AbortController();
    let calls = 0;
    // The real (abortable) sleep: a backoff of 30-60 s that the abort must cut short.
    const p = retryOutage('UploadPart 2 of b/k', { windowMs: 60_000, baseDelayMs: 60_000, maxDelayMs: 60_000, signal: cancel.signal }, async () => {
      calls++;
      throw refused();
    });
    // Aborted once the first attempt has failed and the retry is sleeping.
    await new Promise((r) => setImmediate(r));
    cancel.abort(new Error('canceled by alice'));
    await expect(p).rejects.toThrow('canceled by alice');
    expect(calls).toBe(1);
  });

  it('names what set a shorter window in its error', async () => {
    const time = fakeTime();
    await expect(retryOutage('HeadObject b/k', { windowMs: 0, windowSource: 'the run was canceled', ...time }, async () => { throw refused(); }))
      .rejects.toThrow('HeadObject b/k failed: the object store is unreachable, and no outage is ridden out (the run was canceled): connect ECONNREFUSED');
  });
});
