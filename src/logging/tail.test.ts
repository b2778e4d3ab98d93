import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createServerLogger } from './server.js';
import { createLogTail } from './tail.js';

describe('log tail', () => {
  it('keeps the last lines, oldest first, and counts what it dropped', () => {
    const t = createLogTail({ maxLines: 3, maxBytes: 1000 });
    for (let i = 0; i < 5000; i++) t.push(`line ${i}`);
    expect(t.lines()).toEqual(['line 4997', 'line 4998', 'line 4999']);
    expect(t.dropped()).toBe(4997);
  });

  it('stays within its byte budget, and truncates one line larger than the budget', () => {
    const t = createLogTail({ maxLines: 100, maxBytes: 30 });
    t.push('a'.repeat(10));
    t.push('b'.repeat(10));
    t.push('c'.repeat(15));
    expect(t.lines()).toEqual(['b'.repeat(10), 'c'.repeat(15)]);
    t.push('d'.repeat(100));
    const [only] = t.lines();
    expect(t.lines()).toHaveLength(1);
    expect(only).toMatch(/^d+ \[line truncated\]$/);
    expect(only?.length).toBeLessThanOrEqual(30);
  });

  it('receives the server logger\'s rendered, scrubbed lines', async () => {
    const tail = createLogTail();
    const log = createServerLogger({ format: 'text', stream: new PassThrough(), tail });
    log.info('location validated', { location: 'default' });
    log.warn('upload failed: Authorization: Bearer abcdefghijklmnop');
    await new Promise((r) => setImmediate(r));
    const lines = tail.lines();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\S+ info {2}location validated location=default$/);
    expect(lines[1]).not.toContain('abcdefghijklmnop');
    expect(lines[1]).toContain('[REDACTED]');
  });
});
