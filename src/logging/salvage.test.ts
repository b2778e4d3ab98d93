import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { salvageRunLog } from './salvage.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmpFile(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'salvage-'));
  dirs.push(d);
  return path.join(d, 'out.log.gz');
}

async function* chunks(b: Buffer, size = 300): AsyncIterable<Uint8Array> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

const LINES = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ level: 'info', msg: `item ${i} ${'x'.repeat(i % 50)}` }));
const FULL = zlib.gzipSync(`${LINES.join('\n')}\n`);
const read = (file: string): string[] => zlib.gunzipSync(fs.readFileSync(file)).toString('utf8').split('\n').filter((l) => l !== '');

describe('salvageRunLog', () => {
  it('keeps every line of a complete log and appends the closing lines', async () => {
    const dest = tmpFile();
    const r = await salvageRunLog(chunks(FULL), dest, (n) => [`closing after ${n}`]);
    expect(r).toEqual({ recovered: 3000 });
    expect(read(dest)).toEqual([...LINES, 'closing after 3000']);
  });

  it('keeps the whole lines of a log cut off mid-stream, in order, and drops the cut line', async () => {
    // Without its 8-byte trailer every line is still there; cut deeper, lines go from the end.
    const whole = await salvageRunLog(chunks(FULL.subarray(0, FULL.length - 8)), tmpFile(), () => []);
    expect(whole.recovered).toBe(3000);
    for (const cut of [Math.floor(FULL.length / 2), 200]) {
      const dest = tmpFile();
      const r = await salvageRunLog(chunks(FULL.subarray(0, cut)), dest, () => ['the end']);
      const got = read(dest);
      expect(got.at(-1)).toBe('the end');
      expect(got.slice(0, -1)).toEqual(LINES.slice(0, r.recovered));
      expect(r.recovered).toBeLessThan(3000);
      if (cut > 1000) expect(r.recovered).toBeGreaterThan(0);
    }
  });

  it('turns an empty or header-only file into a valid log holding only the closing lines', async () => {
    for (const bytes of [Buffer.alloc(0), FULL.subarray(0, 10)]) {
      const dest = tmpFile();
      const r = await salvageRunLog(chunks(bytes), dest, (n) => [`recovered ${n}`]);
      expect(r.recovered).toBe(0);
      expect(read(dest)).toEqual(['recovered 0']);
    }
  });

  it('names the damage of bytes that are not gzip, and still writes a valid log', async () => {
    const dest = tmpFile();
    const r = await salvageRunLog(chunks(Buffer.from('plain text, not a gzip stream\n')), dest, (n) => [`recovered ${n}`]);
    expect(r.damage).toMatch(/header/);
    expect(read(dest)).toEqual(['recovered 0']);
  });
});
