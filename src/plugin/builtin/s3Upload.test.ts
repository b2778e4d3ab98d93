import { describe, expect, it } from 'vitest';
import { parts } from './s3Upload.js';

async function collect(body: AsyncIterable<Uint8Array>, size: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const p of parts(body, size)) out.push(p);
  return out;
}

async function* chunks(...sizes: number[]): AsyncGenerator<Uint8Array> {
  let n = 0;
  for (const s of sizes) {
    const b = Buffer.alloc(s);
    for (let i = 0; i < s; i++) b[i] = n++ % 251;
    yield b;
  }
}

describe('parts', () => {
  it('cuts any chunking into full parts and a shorter last one, keeping every byte in order', async () => {
    const got = await collect(chunks(3, 10, 1, 1, 7, 2), 8);
    expect(got.map((p) => p.length)).toEqual([8, 8, 8]);
    const all = Buffer.concat(got);
    for (let i = 0; i < all.length; i++) expect(all[i]).toBe(i % 251);
    expect((await collect(chunks(5), 8)).map((p) => p.length)).toEqual([5]);
    expect((await collect(chunks(16), 8)).map((p) => p.length)).toEqual([8, 8]);
    expect(await collect(chunks(), 8)).toEqual([]);
  });

  it('copies what it holds: a source reusing its buffer does not change parts already cut', async () => {
    const shared = Buffer.alloc(4);
    async function* reusing(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 3; i++) {
        shared.fill(i + 1);
        yield shared;
      }
    }
    const got = await collect(reusing(), 6);
    expect(Buffer.concat(got)).toEqual(Buffer.from([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]));
  });
});
