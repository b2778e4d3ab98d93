import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createSecretSet } from './format.js';
import { createServerLogger } from './server.js';

function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString('utf8')));
  return {
    stream,
    lines: async (): Promise<string[]> => {
      await new Promise((r) => setImmediate(r));
      return text.split('\n').filter((l) => l !== '');
    },
  };
}

describe('createServerLogger', () => {
  it('writes one readable text line per entry: time level message key=value', async () => {
    const out = capture();
    const log = createServerLogger({ level: 'info', format: 'text', stream: out.stream });
    log.info('backup completed', { backup: 'stowage/b1', items: 12, ok: true, note: 'two words', empty: '', obj: { a: 1 } });
    log.warn('multi\nline');
    const [first, second] = await out.lines();
    expect(first).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info {2}backup completed backup=stowage\/b1 items=12 ok=true note="two words" empty="" obj="\{\\"a\\":1\}"$/,
    );
    expect(second).toMatch(/^\S+ warn {2}multi\\nline$/);
  });

  it('writes JSON lines with time, level, msg and fields', async () => {
    const out = capture();
    const log = createServerLogger({ level: 'debug', format: 'json', stream: out.stream });
    log.debug('listing', { resource: 'pods', err: new Error('boom') });
    const [line] = await out.lines();
    const rec = JSON.parse(line ?? '') as Record<string, unknown>;
    expect(rec).toMatchObject({ level: 'debug', msg: 'listing', resource: 'pods', err: 'boom' });
    expect(Object.keys(rec).slice(0, 3)).toEqual(['time', 'level', 'msg']);
    expect(new Date(String(rec.time)).toString()).not.toBe('Invalid Date');
  });

  it('drops entries below its level', async () => {
    const out = capture();
    const log = createServerLogger({ level: 'warn', stream: out.stream });
    log.info('hidden');
    log.debug('hidden too');
    log.error('shown');
    const lines = await out.lines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('error shown');
  });

  it('scrubs credentials and registered secrets from every line', async () => {
    const out = capture();
    const secrets = createSecretSet();
    secrets.add('hunter2-value');
    const log = createServerLogger({ format: 'json', stream: out.stream, secrets });
    log.error('upload to https://AKID:SECRET@minio:9000/b failed', {
      detail: { nested: ['token hunter2-value', Buffer.from('hunter2-value').toString('base64')] },
    });
    const [line] = await out.lines();
    expect(line).not.toContain('SECRET');
    expect(line).not.toContain('hunter2-value');
    expect(line).not.toContain(Buffer.from('hunter2-value').toString('base64'));
    expect(JSON.parse(line ?? '')).toMatchObject({
      msg: 'upload to https://[REDACTED]@minio:9000/b failed',
      detail: { nested: ['token [REDACTED]', '[REDACTED]'] },
    });
  });

  it('rejects unknown levels and formats', () => {
    expect(() => createServerLogger({ level: 'loud' })).toThrow(
      'log level "loud" is not one of error, warn, info, http, verbose, debug, silly',
    );
    expect(() => createServerLogger({ format: 'xml' as 'json' })).toThrow('log format "xml" is not one of text, json');
  });
});
