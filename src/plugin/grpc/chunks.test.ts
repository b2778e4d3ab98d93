import { describe, expect, it } from 'vitest';
import { rechunk } from './chunks.js';

async function sizes(parts: number[], size: number): Promise<{ sizes: number[]; bytes: Buffer }> {
  let v = 0;
  async function* src(): AsyncGenerator<Uint8Array> {
    for (const n of parts) yield Uint8Array.from({ length: n }, () => v++ % 251);
  }
  const out: Buffer[] = [];
  for await (const c of rechunk(src(), size)) out.push(c);
  return { sizes: out.map((c) => c.length), bytes: Buffer.concat(out) };
}

describe('rechunk', () => {
  it('splits large pieces and coalesces small ones, never above the chunk size, keeping every byte in order', async () => {
    const { sizes: s, bytes } = await sizes([25, 3, 3, 3, 1, 0, 12], 10);
    expect(s).toEqual([10, 10, 10, 10, 7]);
    expect([...bytes]).toEqual(Array.from({ length: 47 }, (_, i) => i % 251));
  });

  it('yields nothing for an empty source', async () => {
    expect((await sizes([], 10)).sizes).toEqual([]);
  });
});
