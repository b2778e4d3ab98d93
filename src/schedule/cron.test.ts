import { describe, expect, it } from 'vitest';
import {
  CronError,
  MAX_SCHEDULE_NAME_LENGTH,
  formatBackupTimestamp,
  parseCron,
  parseScheduledBackupName,
  scheduledBackupName,
  validateCron,
} from './cron.js';

const at = (iso: string): Date => new Date(iso);
const iso = (d: Date): string => d.toISOString();

/** The next n ticks after `from`. */
function ticks(expr: string, from: string, n: number): string[] {
  const c = parseCron(expr);
  const out: string[] = [];
  let t = at(from);
  for (let i = 0; i < n; i++) {
    t = c.next(t);
    out.push(iso(t));
  }
  return out;
}

describe('parseCron: next', () => {
  it('every minute', () => {
    expect(ticks('* * * * *', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-01-01T00:01:00.000Z',
      '2024-01-01T00:02:00.000Z',
      '2024-01-01T00:03:00.000Z',
    ]);
  });

  it('is strictly after, and rounds up from seconds', () => {
    const c = parseCron('*/5 * * * *');
    expect(iso(c.next(at('2024-01-01T00:05:00Z')))).toBe('2024-01-01T00:10:00.000Z');
    expect(iso(c.next(at('2024-01-01T00:04:59.999Z')))).toBe('2024-01-01T00:05:00.000Z');
    expect(iso(c.next(at('2024-01-01T00:05:00.001Z')))).toBe('2024-01-01T00:10:00.000Z');
  });

  it('steps, ranges and lists', () => {
    expect(ticks('*/15 * * * *', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-01T00:15:00.000Z',
      '2024-01-01T00:30:00.000Z',
      '2024-01-01T00:45:00.000Z',
      '2024-01-01T01:00:00.000Z',
    ]);
    expect(ticks('10-20/5 3 * * *', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-01T03:10:00.000Z',
      '2024-01-01T03:15:00.000Z',
      '2024-01-01T03:20:00.000Z',
      '2024-01-02T03:10:00.000Z',
    ]);
    expect(ticks('0 1,13,22 * * *', '2024-01-01T12:00:00Z', 3)).toEqual([
      '2024-01-01T13:00:00.000Z',
      '2024-01-01T22:00:00.000Z',
      '2024-01-02T01:00:00.000Z',
    ]);
    // "A/S" runs from A to the field maximum.
    expect(ticks('50/4 0 * * *', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-01-01T00:50:00.000Z',
      '2024-01-01T00:54:00.000Z',
      '2024-01-01T00:58:00.000Z',
    ]);
  });

  it('month and weekday names, any case', () => {
    // 2024-01-01 is a Monday.
    expect(ticks('0 9 * * mon-FRI', '2024-01-05T10:00:00Z', 2)).toEqual(['2024-01-08T09:00:00.000Z', '2024-01-09T09:00:00.000Z']);
    expect(ticks('0 0 1 jun,Dec *', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-06-01T00:00:00.000Z',
      '2024-12-01T00:00:00.000Z',
      '2025-06-01T00:00:00.000Z',
    ]);
  });

  it('day-of-week 7 and 0 are both Sunday', () => {
    expect(ticks('0 0 * * 7', '2024-01-01T00:00:00Z', 1)).toEqual(['2024-01-07T00:00:00.000Z']);
    expect(ticks('0 0 * * 0', '2024-01-01T00:00:00Z', 1)).toEqual(['2024-01-07T00:00:00.000Z']);
    expect(ticks('0 0 * * 5-7', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-01-05T00:00:00.000Z',
      '2024-01-06T00:00:00.000Z',
      '2024-01-07T00:00:00.000Z',
    ]);
  });

  it('both day fields restricted: either matches (OR)', () => {
    // The 13th, or any Friday.
    expect(ticks('0 0 13 * FRI', '2024-01-01T00:00:00Z', 4)).toEqual([
      '2024-01-05T00:00:00.000Z',
      '2024-01-12T00:00:00.000Z',
      '2024-01-13T00:00:00.000Z',
      '2024-01-19T00:00:00.000Z',
    ]);
  });

  it('a day field starting with * is unrestricted: the other decides (AND)', () => {
    expect(ticks('0 0 13 * *', '2024-01-01T00:00:00Z', 2)).toEqual(['2024-01-13T00:00:00.000Z', '2024-02-13T00:00:00.000Z']);
    expect(ticks('0 0 * * FRI', '2024-01-01T00:00:00Z', 2)).toEqual(['2024-01-05T00:00:00.000Z', '2024-01-12T00:00:00.000Z']);
    // Vixie cron: "*/2" in day-of-week still counts as "*", so day-of-month 13 must ALSO fall on Sun/Tue/Thu/Sat.
    // 2024-01-13 is a Saturday (6), 2024-02-13 a Tuesday (2), 2024-03-13 a Wednesday (3, skipped).
    expect(ticks('0 0 13 * */2', '2024-01-01T00:00:00Z', 3)).toEqual([
      '2024-01-13T00:00:00.000Z',
      '2024-02-13T00:00:00.000Z',
      '2024-04-13T00:00:00.000Z',
    ]);
  });

  it('the 31st skips short months; Feb 29 waits for a leap year (across 2100, which is not one)', () => {
    expect(ticks('0 0 31 * *', '2024-01-31T00:00:00Z', 3)).toEqual([
      '2024-03-31T00:00:00.000Z',
      '2024-05-31T00:00:00.000Z',
      '2024-07-31T00:00:00.000Z',
    ]);
    expect(ticks('0 0 29 2 *', '2024-03-01T00:00:00Z', 1)).toEqual(['2028-02-29T00:00:00.000Z']);
    expect(ticks('0 0 29 2 *', '2096-03-01T00:00:00Z', 1)).toEqual(['2104-02-29T00:00:00.000Z']);
  });

  it('crosses year ends', () => {
    expect(ticks('30 23 31 12 *', '2024-12-31T23:30:00Z', 1)).toEqual(['2025-12-31T23:30:00.000Z']);
    expect(ticks('0 0 * * *', '2024-12-31T12:00:00Z', 1)).toEqual(['2025-01-01T00:00:00.000Z']);
  });

  it('whitespace between fields may be several spaces or tabs', () => {
    expect(ticks(' 0\t12  * * * ', '2024-01-01T00:00:00Z', 1)).toEqual(['2024-01-01T12:00:00.000Z']);
  });
});

describe('parseCron: descriptors', () => {
  it.each([
    ['@yearly', '2025-01-01T00:00:00.000Z'],
    ['@annually', '2025-01-01T00:00:00.000Z'],
    ['@monthly', '2024-04-01T00:00:00.000Z'],
    ['@weekly', '2024-03-17T00:00:00.000Z'],
    ['@daily', '2024-03-16T00:00:00.000Z'],
    ['@midnight', '2024-03-16T00:00:00.000Z'],
    ['@hourly', '2024-03-15T11:00:00.000Z'],
    ['@DAILY', '2024-03-16T00:00:00.000Z'],
  ])('%s', (expr, next) => {
    // 2024-03-15 is a Friday.
    expect(iso(parseCron(expr).next(at('2024-03-15T10:20:00Z')))).toBe(next);
  });

  it('@every ticks on multiples of the interval since the epoch', () => {
    const c = parseCron('@every 6h');
    expect(iso(c.next(at('2024-01-01T05:59:59Z')))).toBe('2024-01-01T06:00:00.000Z');
    expect(iso(c.next(at('2024-01-01T06:00:00Z')))).toBe('2024-01-01T12:00:00.000Z');
    expect(iso(c.prev(at('2024-01-01T06:00:00Z')))).toBe('2024-01-01T00:00:00.000Z');
    expect(iso(c.prev(at('2024-01-01T06:00:00.001Z')))).toBe('2024-01-01T06:00:00.000Z');
    expect(iso(parseCron('@every 90s').next(at('1970-01-01T00:01:00Z')))).toBe('1970-01-01T00:01:30.000Z');
    expect(iso(parseCron('@every 1h30m').next(at('1970-01-01T01:00:00Z')))).toBe('1970-01-01T01:30:00.000Z');
  });
});

describe('parseCron: prev', () => {
  it('is strictly before', () => {
    const c = parseCron('*/5 * * * *');
    expect(iso(c.prev(at('2024-01-01T00:10:00Z')))).toBe('2024-01-01T00:05:00.000Z');
    expect(iso(c.prev(at('2024-01-01T00:10:00.001Z')))).toBe('2024-01-01T00:10:00.000Z');
    expect(iso(c.prev(at('2024-01-01T00:00:00Z')))).toBe('2023-12-31T23:55:00.000Z');
  });

  it('walks back across months and leap days', () => {
    expect(iso(parseCron('0 0 31 * *').prev(at('2024-05-01T00:00:00Z')))).toBe('2024-03-31T00:00:00.000Z');
    expect(iso(parseCron('0 0 29 2 *').prev(at('2028-02-01T00:00:00Z')))).toBe('2024-02-29T00:00:00.000Z');
    expect(iso(parseCron('15 3 * * MON').prev(at('2024-01-08T03:15:00Z')))).toBe('2024-01-01T03:15:00.000Z');
  });
});

/** Independent reference: minute-by-minute search against a hand-written predicate. */
function bruteNext(match: (d: Date) => boolean, after: Date): Date {
  let t = Math.floor(after.getTime() / 60_000) * 60_000 + 60_000;
  for (;;) {
    const d = new Date(t);
    if (match(d)) return d;
    t += 60_000;
  }
}
function brutePrev(match: (d: Date) => boolean, before: Date): Date {
  let t = Math.floor((before.getTime() - 1) / 60_000) * 60_000;
  for (;;) {
    const d = new Date(t);
    if (match(d)) return d;
    t -= 60_000;
  }
}

describe('parseCron agrees with a brute-force search', () => {
  const cases: [string, (d: Date) => boolean][] = [
    ['7 */3 * * *', (d) => d.getUTCMinutes() === 7 && d.getUTCHours() % 3 === 0],
    ['0,30 9-17 * * 1-5', (d) => d.getUTCMinutes() % 30 === 0 && d.getUTCHours() >= 9 && d.getUTCHours() <= 17 && d.getUTCDay() >= 1 && d.getUTCDay() <= 5],
    ['0 0 1,15 * 3', (d) => d.getUTCMinutes() === 0 && d.getUTCHours() === 0 && ([1, 15].includes(d.getUTCDate()) || d.getUTCDay() === 3)],
    ['45 23 * FEB,AUG SUN', (d) => d.getUTCMinutes() === 45 && d.getUTCHours() === 23 && [1, 7].includes(d.getUTCMonth()) && d.getUTCDay() === 0],
    ['*/20 4 10-12 * *', (d) => d.getUTCMinutes() % 20 === 0 && d.getUTCHours() === 4 && d.getUTCDate() >= 10 && d.getUTCDate() <= 12],
  ];
  // Deterministic pseudo-random start times over 2023-2025.
  let seed = 42;
  const rand = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const starts = Array.from({ length: 40 }, () => new Date(Date.UTC(2023, 0, 1) + Math.floor(rand() * 3 * 365 * 86_400_000)));

  it.each(cases)('%s', (expr, match) => {
    const c = parseCron(expr);
    for (const s of starts) {
      expect(iso(c.next(s)), `next after ${iso(s)}`).toBe(iso(bruteNext(match, s)));
      expect(iso(c.prev(s)), `prev before ${iso(s)}`).toBe(iso(brutePrev(match, s)));
    }
  });
});

describe('parseCron: errors are precise', () => {
  it.each([
    ['', 'cron expression is empty: expected 5 fields (minute hour day-of-month month day-of-week) or a descriptor like @daily'],
    ['* * * *', 'cron expression "* * * *" has 4 fields; expected 5 (minute hour day-of-month month day-of-week)'],
    ['0 0 * * * *', 'cron expression "0 0 * * * *" has 6 fields; expected 5 (minute hour day-of-month month day-of-week)'],
    ['0 25 * * *', 'field 2 (hour): 25 is out of range 0-23'],
    ['60 * * * *', 'field 1 (minute): 60 is out of range 0-59'],
    ['* * 0 * *', 'field 3 (day-of-month): 0 is out of range 1-31'],
    ['* * 32 * *', 'field 3 (day-of-month): 32 is out of range 1-31'],
    ['* * * 13 *', 'field 4 (month): 13 is out of range 1-12'],
    ['* * * * 8', 'field 5 (day-of-week): 8 is out of range 0-7'],
    ['* * * FOO *', 'field 4 (month): "FOO" is not a number 1-12 or a name JAN-DEC'],
    ['* * * * MONDAY', 'field 5 (day-of-week): "MONDAY" is not a number 0-7 or a name SUN-SAT'],
    ['JAN * * * *', 'field 1 (minute): "JAN" is not a number 0-59'],
    ['30-10 * * * *', 'field 1 (minute): range 30-10 is backwards: 30 is after 10'],
    ['*/0 * * * *', 'field 1 (minute): step 0 in "*/0" must be at least 1'],
    ['*/x * * * *', 'field 1 (minute): step "x" in "*/x" is not a positive number'],
    ['*/60 * * * *', 'field 1 (minute): step 60 in "*/60" is larger than 59'],
    ['1/2/3 * * * *', 'field 1 (minute): "1/2/3" has more than one "/"'],
    ['1,,2 * * * *', 'field 1 (minute): "1,,2" has an empty list element'],
    ['1-2-3 * * * *', 'field 1 (minute): "1-2-3" is not a value or a range A-B'],
    ['5- * * * *', 'field 1 (minute): a range is missing a value'],
    ['-5 * * * *', 'field 1 (minute): a range is missing a value'],
    ['? * * * *', 'field 1 (minute): "?" is not a number 0-59'],
    ['0 0 30 2 *', 'field 3 (day-of-month): day 30 never occurs in month FEB, so the schedule would never fire'],
    ['0 0 31 4,6 *', 'field 3 (day-of-month): day 31 never occurs in month APR,JUN, so the schedule would never fire'],
    ['@weekdays', 'unknown cron descriptor "@weekdays": use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>'],
    ['@every', '"@every": @every needs a duration, e.g. "@every 6h"'],
    ['@every5m', '"@every5m": @every needs a duration, e.g. "@every 6h"'],
    ['@every 5x', '@every interval "5x" is not a duration like 720h0m0s: unknown unit "x" (use h, m, s, ms, us or ns)'],
    ['@every 500ms', '@every interval "500ms" must be at least 1s'],
    ['@every 1500ms', '@every interval "1500ms" must be a whole number of seconds'],
  ])('%j', (expr, message) => {
    expect(() => parseCron(expr)).toThrow(new CronError(message));
    expect(validateCron(expr)).toEqual([message]);
  });

  it('validateCron returns nothing for a valid expression', () => {
    expect(validateCron('0 3 * * *')).toEqual([]);
    expect(validateCron('@every 24h')).toEqual([]);
  });

  it('Feb 29 and the 31st in some month are valid', () => {
    expect(validateCron('0 0 29 2 *')).toEqual([]);
    expect(validateCron('0 0 31 4,5 *')).toEqual([]);
    // With a weekday too (OR), the 30th of February is harmless: Mondays in February still match.
    expect(validateCron('0 0 30 2 MON')).toEqual([]);
  });
});

describe('backup names', () => {
  it('formats <schedule>-<yyyyMMddHHmmss> in UTC, zero-padded', () => {
    expect(scheduledBackupName('nightly', at('2024-03-05T07:08:09.999Z'))).toBe('nightly-20240305070809');
    expect(formatBackupTimestamp(at('0999-12-31T23:59:59Z'))).toBe('09991231235959');
    // A non-UTC input time is still written in UTC.
    expect(scheduledBackupName('s', at('2024-03-05T01:00:00+05:00'))).toBe('s-20240304200000');
  });

  it('parses a name back, and rejects what is not one', () => {
    expect(parseScheduledBackupName('nightly', 'nightly-20240305070809')?.toISOString()).toBe('2024-03-05T07:08:09.000Z');
    expect(parseScheduledBackupName('a-b', 'a-b-20240101000000')?.toISOString()).toBe('2024-01-01T00:00:00.000Z');
    expect(parseScheduledBackupName('nightly', 'weekly-20240305070809')).toBeUndefined();
    expect(parseScheduledBackupName('nightly', 'nightly-2024030507080')).toBeUndefined();
    expect(parseScheduledBackupName('nightly', 'nightly-20240230000000')).toBeUndefined();
    expect(parseScheduledBackupName('nightly', 'nightly-manual')).toBeUndefined();
  });

  it('a schedule name of the maximum length yields a 253-character backup name', () => {
    const name = 'a'.repeat(MAX_SCHEDULE_NAME_LENGTH);
    expect(scheduledBackupName(name, at('2024-01-01T00:00:00Z'))).toHaveLength(253);
  });
});
