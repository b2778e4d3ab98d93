import { describe, expect, it } from 'vitest';
import { MIN_SECRET_LENGTH, createSecretSet, normalizeLevel, renderText, safeStringify, scrubValue } from './format.js';

describe('normalizeLevel', () => {
  it.each([
    ['info', 'info'],
    ['WARN', 'warn'],
    ['warning', 'warn'],
    ['fatal', 'error'],
    ['panic', 'error'],
    ['critical', 'error'],
    ['trace', 'debug'],
    ['debug', 'debug'],
    ['whatever', 'info'],
    [undefined, 'info'],
  ])('%s -> %s', (input, expected) => {
    expect(normalizeLevel(input)).toBe(expected);
  });
});

describe('createSecretSet', () => {
  it('scrubs registered values and their base64 form, ignoring very short values', () => {
    const s = createSecretSet();
    s.add('abc'); // shorter than MIN_SECRET_LENGTH
    s.add('s3cr3t!');
    expect(MIN_SECRET_LENGTH).toBe(4);
    expect(s.values()).toEqual(['s3cr3t!']);
    expect(s.scrub(`abc s3cr3t! ${Buffer.from('s3cr3t!').toString('base64')}`)).toBe('abc [REDACTED] [REDACTED]');
  });

  it('a child also scrubs its parent values, including ones added later', () => {
    const parent = createSecretSet();
    const child = createSecretSet(parent);
    child.add('child-secret');
    expect(child.scrub('parent-secret child-secret')).toBe('parent-secret [REDACTED]');
    parent.add('parent-secret');
    expect(child.scrub('parent-secret child-secret')).toBe('[REDACTED] [REDACTED]');
    expect(parent.scrub('child-secret')).toBe('child-secret');
  });

  it('also scrubs well-known credential shapes', () => {
    expect(createSecretSet().scrub('password=abc123 at https://u:p@h/x')).toBe('password=[REDACTED] at https://[REDACTED]@h/x');
  });
});

describe('scrubValue', () => {
  const scrub = (s: string) => s.replaceAll('secret', '***');

  it('copies nested structures, scrubbing strings and turning errors into messages', () => {
    const input = { a: 'secret', b: [1, 'my secret', { c: new Error('secret failed') }], d: null, e: true };
    expect(scrubValue(input, scrub)).toEqual({ a: '***', b: [1, 'my ***', { c: '*** failed' }], d: null, e: true });
    expect(input.a).toBe('secret');
  });

  it('renders buffers, dates, cycles and deep nesting safely', () => {
    const cyc: Record<string, unknown> = { name: 'x' };
    cyc.self = cyc;
    expect(scrubValue(cyc, scrub)).toEqual({ name: 'x', self: '[Circular]' });
    expect(scrubValue(Buffer.from('secret'), scrub)).toBe('[6 bytes]');
    expect(scrubValue(new Date(0), scrub)).toBe('1970-01-01T00:00:00.000Z');
    let deep: unknown = 'secret';
    for (let i = 0; i < 12; i++) deep = { d: deep };
    expect(JSON.stringify(scrubValue(deep, scrub))).toContain('[Truncated]');
  });
});

describe('rendering', () => {
  it('safeStringify survives cycles, bigint and errors', () => {
    const o: Record<string, unknown> = { n: 10n, e: new Error('x') };
    o.o = o;
    expect(safeStringify(o)).toBe('{"n":"10","e":"x","o":"[Circular]"}');
  });

  it('renderText quotes values that need it', () => {
    expect(renderText('T', 'info', 'm', [['a', 'b c'], ['q', 'say "hi"'], ['eq', 'a=b'], ['n', 1]])).toBe(
      'T info  m a="b c" q="say \\"hi\\"" eq="a=b" n=1',
    );
  });
});
