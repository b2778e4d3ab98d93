import { describe, expect, it } from 'vitest';
import { replayableBody } from '../api/index.js';
import { PutBody } from './replay.js';

const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

async function readSome(body: AsyncIterable<Uint8Array>, count: number): Promise<number[]> {
  const out: number[] = [];
  for await (const c of body) {
    out.push(c[0] ?? -1);
    if (out.length === count) break;
  }
  return out;
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<number[]> {
  const out: number[] = [];
  for await (const c of body) out.push(c[0] ?? -1);
  return out;
}

describe('PutBody', () => {
  it('re-opens a replayable body for every attempt', async () => {
    let opens = 0;
    const body = new PutBody(
      replayableBody(() => {
        opens++;
        return [bytes(10, 1), bytes(10, 2), bytes(10, 3)];
      }),
      1,
    );
    expect(await readSome(body.attempt(), 2)).toEqual([1, 2]);
    expect(body.blocker()).toBeUndefined();
    expect(await readAll(body.attempt())).toEqual([1, 2, 3]);
    expect(body.attemptBytes).toBe(30);
    expect(opens).toBe(2);
  });

  it('replays what it read of a one-shot body, then continues the same source', async () => {
    let closed = false;
    async function* oneShot(): AsyncGenerator<Uint8Array> {
      try {
        for (let i = 1; i <= 4; i++) yield bytes(10, i);
      } finally {
        closed = true;
      }
    }
    const body = new PutBody(oneShot(), 100);
    expect(await readSome(body.attempt(), 2)).toEqual([1, 2]);
    expect(closed).toBe(false); // ending an attempt early leaves the source open
    expect(body.blocker()).toBeUndefined();
    expect(await readAll(body.attempt())).toEqual([1, 2, 3, 4]);
    expect(body.attemptBytes).toBe(40);
    await body.close();
    expect(closed).toBe(true);
  });

  it('refuses a retry once a one-shot body outgrew the replay buffer, naming the sizes', async () => {
    async function* big(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 10; i++) yield bytes(1000, i);
    }
    const body = new PutBody(big(), 2500);
    await readSome(body.attempt(), 3);
    expect(body.blocker()).toContain('3000 bytes');
    expect(body.blocker()).toContain('2500-byte replay buffer');
    expect(body.blocker()).toContain('replayableBody()');
  });

  it('gives the next attempt the chunk a dead attempt was still waiting for, and counts only its own bytes', async () => {
    // The source answers when the test says: attempt 1's writer is waiting for chunk 3 when its process dies.
    const gates: ((c: Uint8Array) => void)[] = [];
    const source: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => {
        let i = 0;
        return {
          next: async (): Promise<IteratorResult<Uint8Array>> => {
            i++;
            if (i <= 2) return { done: false, value: bytes(10, i) };
            if (i > 4) return { done: true, value: undefined };
            return { done: false, value: await new Promise<Uint8Array>((resolve) => gates.push(resolve)) };
          },
        };
      },
    };
    const body = new PutBody(source, 100);
    const first = body.attempt()[Symbol.asyncIterator]();
    expect((await first.next()).value?.[0]).toBe(1);
    expect((await first.next()).value?.[0]).toBe(2);
    const stale = first.next(); // waits for chunk 3
    await new Promise((r) => setImmediate(r));
    const second = readAll(body.attempt());
    await new Promise((r) => setImmediate(r));
    gates.shift()?.(bytes(5, 3)); // chunk 3 arrives after the retry began
    await new Promise((r) => setImmediate(r));
    gates.shift()?.(bytes(5, 4));
    expect(await second).toEqual([1, 2, 3, 4]);
    expect(body.attemptBytes).toBe(30);
    expect((await stale).done).toBe(true);
  });

  it('keeps a chunk the current attempt has not taken when the buffer overflows', async () => {
    async function* big(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 10; i++) yield bytes(1000, i);
    }
    const body = new PutBody(big(), 2500);
    expect(await readAll(body.attempt())).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(body.attemptBytes).toBe(10_000);
    expect(body.blocker()).toContain('10000 bytes');
  });
});
