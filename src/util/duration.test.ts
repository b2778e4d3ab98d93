import { describe, expect, it } from 'vitest';
import { DurationError, formatDuration, parseDuration, tryParseDuration, validateTtl } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['720h0m0s', 720 * 3_600_000],
    ['1h30m', 5_400_000],
    ['90s', 90_000],
    ['500ms', 500],
    ['1m', 60_000],
    ['0', 0],
    ['0s', 0],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['1.s', 1000],
    ['-1m30s', -90_000],
    ['+2s', 2000],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['1500μs', 1.5],
    ['250ns', 0.00025],
    ['1h1m1s1ms', 3_661_001],
    [' 10s ', 10_000],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ['abc', 'ttl "abc" is not a duration like 720h0m0s: expected a number at position 1, found "a"'],
    ['', 'ttl "" is not a duration like 720h0m0s: it is empty'],
    ['10', 'ttl "10" is not a duration like 720h0m0s: missing unit after "10" (use h, m, s, ms, us or ns)'],
    ['5d', 'ttl "5d" is not a duration like 720h0m0s: unknown unit "d" (use h, m, s, ms, us or ns)'],
    ['1h30', 'ttl "1h30" is not a duration like 720h0m0s: missing unit after "30" (use h, m, s, ms, us or ns)'],
    ['1.2.3s', 'ttl "1.2.3s" is not a duration like 720h0m0s: "1.2.3" is not a number'],
    ['-', 'ttl "-" is not a duration like 720h0m0s: a number must follow the sign'],
    ['.s', 'ttl ".s" is not a duration like 720h0m0s: "." is not a number'],
    ['1 h', 'ttl "1 h" is not a duration like 720h0m0s: unknown unit " h" (use h, m, s, ms, us or ns)'],
    ['9999999999h', 'ttl "9999999999h" is not a duration like 720h0m0s: it is too large'],
  ])('rejects %j with a precise message', (text, message) => {
    expect(() => parseDuration(text, 'ttl')).toThrow(new DurationError(message));
  });

  it('names the value generically by default', () => {
    expect(() => parseDuration('x')).toThrow(/^duration "x" is not a duration like 720h0m0s/);
  });

  it('tryParseDuration returns the value or the message', () => {
    expect(tryParseDuration('2m')).toEqual({ ms: 120_000 });
    expect(tryParseDuration('2x', 'backup-sync-period')).toEqual({
      error: 'backup-sync-period "2x" is not a duration like 720h0m0s: unknown unit "x" (use h, m, s, ms, us or ns)',
    });
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [720 * 3_600_000, '720h0m0s'],
    [5_400_000, '1h30m0s'],
    [90_000, '1m30s'],
    [60_000, '1m0s'],
    [1000, '1s'],
    [1500, '1.5s'],
    [90_500, '1m30.5s'],
    [500, '500ms'],
    [1.5, '1.5ms'],
    [0.5, '500µs'],
    [0.00025, '250ns'],
    [-90_000, '-1m30s'],
    [3_600_001, '1h0m0.001s'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 2_592_000_000, 123_456_789, 0.001, 1.25, -5000]) {
      expect(parseDuration(formatDuration(ms))).toBeCloseTo(ms, 9);
    }
    for (const text of ['720h0m0s', '1h30m0s', '1m30s', '500ms', '1.5s', '0s']) {
      expect(formatDuration(parseDuration(text))).toBe(text);
    }
  });

  it('refuses non-finite input', () => {
    expect(() => formatDuration(Number.NaN)).toThrow('cannot format NaN as a duration');
  });
});

describe('validateTtl', () => {
  it('accepts absent and valid values', () => {
    expect(validateTtl(undefined)).toEqual([]);
    expect(validateTtl(null)).toEqual([]);
    expect(validateTtl('24h')).toEqual([]);
    expect(validateTtl('0s')).toEqual([]);
  });
  it('reports bad and negative values', () => {
    expect(validateTtl('abc')).toEqual(['ttl "abc" is not a duration like 720h0m0s: expected a number at position 1, found "a"']);
    expect(validateTtl('-1h', 'spec.ttl')).toEqual(['spec.ttl "-1h" must not be negative']);
  });
});
