import { describe, expect, it } from 'vitest';
import { outputTail } from './tail.js';

const write = (t: ReturnType<typeof outputTail>, ...chunks: string[]): Promise<void> =>
  new Promise((resolve) => {
    for (const c of chunks) t.stream.write(Buffer.from(c));
    t.stream.end(resolve);
  });

describe('outputTail', () => {
  it('keeps everything under the limit, unmarked', async () => {
    const t = outputTail(10);
    await write(t, 'abc', 'def');
    expect(t.text()).toBe('abcdef');
    expect(t.total()).toBe(6);
  });

  it('keeps only the last bytes across chunks and says how many came before', async () => {
    const t = outputTail(5);
    await write(t, 'hello ', 'wor', 'ld!');
    expect(t.text()).toBe('[7 bytes before]orld!');
    expect(t.total()).toBe(12);
  });

  it('cuts one chunk larger than the limit to its end', async () => {
    const t = outputTail(4);
    await write(t, 'x'.repeat(1000) + 'tail');
    expect(t.text()).toBe('[1000 bytes before]tail');
  });

  it('never shows half a UTF-8 character where it cut', async () => {
    const t = outputTail(4);
    await write(t, 'aé€'); // a (1) é (2) € (3): the last 4 bytes start inside é
    expect(t.text()).toBe('[3 bytes before]€');
  });

  it('holds bounded memory however much is written', async () => {
    const t = outputTail(64);
    const chunk = 'y'.repeat(1000);
    await write(t, ...Array.from({ length: 1000 }, () => chunk));
    expect(t.total()).toBe(1_000_000);
    expect(Buffer.byteLength(t.text().replace(/^\[\d+ bytes before\]/, ''))).toBe(64);
  });
});
