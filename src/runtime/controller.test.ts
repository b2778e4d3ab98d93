import { describe, expect, it } from 'vitest';
import { TerminalError, startController, type ReconcileOutcome, type Result } from './controller.js';

const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await tick(2);
  }
}

describe('controller', () => {
  it('runs keys on several workers but never one key twice at once', async () => {
    const running = new Set<string>();
    let overlap = false;
    let maxParallel = 0;
    let calls = 0;
    const c = startController({
      name: 't',
      workers: 4,
      reconciler: {
        async reconcile(key) {
          if (running.has(key)) overlap = true;
          running.add(key);
          maxParallel = Math.max(maxParallel, running.size);
          calls++;
          await tick(5);
          running.delete(key);
        },
      },
    });
    await c.ready;
    for (let round = 0; round < 5; round++) {
      for (const k of ['a', 'b', 'c', 'd', 'a', 'a']) c.enqueue(k);
      await tick(1);
    }
    await until('queue drained', () => c.queue.len() === 0 && c.queue.processing() === 0);
    await c.stop();
    expect(overlap).toBe(false);
    expect(maxParallel).toBe(4);
    // Duplicates merged: far fewer calls than the 30 adds.
    expect(calls).toBeLessThan(30);
    expect(calls).toBeGreaterThanOrEqual(4);
  });

  it('requeues after requeueAfter, retries errors with backoff, and drops terminal errors', async () => {
    const outcomes: string[] = [];
    const attempts = new Map<string, number>();
    const c = startController({
      name: 't',
      workers: 2,
      queue: { baseDelayMs: 10 },
      onReconcile: ({ key, outcome }: { key: string; outcome: ReconcileOutcome }) => outcomes.push(`${key}:${outcome}`),
      reconciler: {
        async reconcile(key): Promise<Result> {
          const n = (attempts.get(key) ?? 0) + 1;
          attempts.set(key, n);
          if (key === 'flaky' && n < 3) throw new Error('apiserver hiccup');
          if (key === 'bad') throw new TerminalError('spec is invalid');
          if (key === 'periodic' && n < 3) return { requeueAfter: 20 };
          return undefined;
        },
      },
    });
    await c.ready;
    for (const k of ['flaky', 'bad', 'periodic']) c.enqueue(k);
    await until('all settled', () => attempts.get('flaky') === 3 && attempts.get('periodic') === 3);
    await tick(100);
    await c.stop();
    expect(attempts.get('bad')).toBe(1);
    expect(outcomes.filter((o) => o.startsWith('flaky'))).toEqual(['flaky:error', 'flaky:error', 'flaky:success']);
    expect(outcomes.filter((o) => o.startsWith('periodic'))).toEqual(['periodic:requeue', 'periodic:requeue', 'periodic:success']);
    expect(outcomes.filter((o) => o.startsWith('bad'))).toEqual(['bad:terminal']);
    // Success forgets the failures.
    expect(c.queue.numRequeues('flaky')).toBe(0);
  });

  it('stop waits for running reconciles, then aborts them after the grace period', async () => {
    let finished = false;
    let aborted = false;
    const c = startController({
      name: 't',
      reconciler: {
        async reconcile(key, ctx) {
          if (key === 'quick') {
            await tick(30);
            finished = true;
            return;
          }
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          aborted = true;
        },
      },
    });
    await c.ready;
    c.enqueue('quick');
    await tick(5);
    await c.stop(1000);
    expect(finished).toBe(true);

    const c2 = startController({
      name: 't2',
      reconciler: {
        async reconcile(_key, ctx) {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          aborted = true;
        },
      },
    });
    await c2.ready;
    c2.enqueue('slow');
    await tick(5);
    const t0 = Date.now();
    await c2.stop(50);
    expect(aborted).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    c2.enqueue('after-stop');
    expect(c2.queue.len()).toBe(0);
  });
});
