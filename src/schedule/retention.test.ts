import { describe, expect, it } from 'vitest';
import {
  backupTime,
  describeKeepPolicy,
  effectiveExpiration,
  hasKeepPolicy,
  isoWeek,
  periodKey,
  planRetention,
  type RetentionBackup,
} from './retention.js';
import { scheduledBackupName } from './cron.js';

const HOUR = 3_600_000;
const schedule = { protectLastSuccessful: true };
const manual = { protectLastSuccessful: false };

function backup(name: string, start: string, extra: Partial<RetentionBackup> = {}): RetentionBackup {
  return { name, phase: 'Completed', startTimestamp: start, completionTimestamp: start, ...extra };
}

/** One backup per hour from `from` (inclusive) to `to` (exclusive), with a 720h ttl. */
function hourly(from: string, to: string): RetentionBackup[] {
  const out: RetentionBackup[] = [];
  for (let t = Date.parse(from); t < Date.parse(to); t += HOUR) {
    const d = new Date(t);
    out.push({
      name: scheduledBackupName('s', d),
      phase: 'Completed',
      startTimestamp: d.toISOString(),
      completionTimestamp: new Date(t + 5 * 60_000).toISOString(),
      expiration: new Date(t + 720 * HOUR).toISOString(),
    });
  }
  return out;
}

const names = (list: { name: string }[]): string[] => list.map((v) => v.name).sort();

describe('planRetention: TTL only', () => {
  it('deletes exactly the expired backups, with the expiry as reason', () => {
    const now = new Date('2024-02-01T00:00:00Z');
    const plan = planRetention(
      [
        backup('old', '2023-12-01T00:00:00Z', { expiration: '2023-12-31T00:00:00Z' }),
        backup('edge', '2024-01-01T00:00:00Z', { expiration: '2024-02-01T00:00:00Z' }),
        backup('fresh', '2024-01-20T00:00:00Z', { expiration: '2024-02-19T00:00:00Z' }),
        backup('failed-old', '2023-12-02T00:00:00Z', { phase: 'Failed', expiration: '2024-01-01T00:00:00Z' }),
        backup('invalid-old', '2023-12-03T00:00:00Z', { phase: 'FailedValidation', expiration: '2024-01-02T00:00:00Z' }),
        backup('no-expiry', '2023-01-01T00:00:00Z', { expiration: undefined }),
      ],
      undefined,
      now,
      schedule,
    );
    expect(plan.delete).toEqual([
      { name: 'old', reason: 'expired at 2023-12-31T00:00:00.000Z (ttl)' },
      { name: 'failed-old', reason: 'expired at 2024-01-01T00:00:00.000Z (ttl)' },
      { name: 'invalid-old', reason: 'expired at 2024-01-02T00:00:00.000Z (ttl)' },
      // Expiring exactly now counts as expired.
      { name: 'edge', reason: 'expired at 2024-02-01T00:00:00.000Z (ttl)' },
    ]);
    expect(plan.keep).toEqual([
      { name: 'fresh', reason: 'expires at 2024-02-19T00:00:00.000Z' },
      { name: 'no-expiry', reason: 'has no expiration' },
    ]);
  });

  it('a policy of all zeros is no policy', () => {
    expect(hasKeepPolicy({ keepLast: 0, keepDaily: 0 })).toBe(false);
    expect(hasKeepPolicy(undefined)).toBe(false);
    expect(hasKeepPolicy({ keepMonthly: 1 })).toBe(true);
    const plan = planRetention(
      [backup('a', '2024-01-01T00:00:00Z', { expiration: '2024-01-02T00:00:00Z' }), backup('b', '2024-01-03T00:00:00Z', { expiration: '2024-01-04T00:00:00Z' })],
      { keepLast: 0, keepDaily: 0 },
      new Date('2024-01-03T12:00:00Z'),
      schedule,
    );
    expect(plan.delete).toEqual([{ name: 'a', reason: 'expired at 2024-01-02T00:00:00.000Z (ttl)' }]);
  });

  it('never picks a running or deleting backup, even expired', () => {
    const plan = planRetention(
      [
        backup('new', '2024-01-01T00:00:00Z', { phase: 'New', expiration: '2024-01-02T00:00:00Z' }),
        backup('running', '2024-01-01T01:00:00Z', { phase: 'InProgress', expiration: '2024-01-02T00:00:00Z' }),
        backup('unset', '2024-01-01T02:00:00Z', { phase: undefined, expiration: '2024-01-02T00:00:00Z' }),
        backup('deleting', '2024-01-01T03:00:00Z', { phase: 'Deleting', expiration: '2024-01-02T00:00:00Z' }),
      ],
      { keepLast: 1 },
      new Date('2024-02-01T00:00:00Z'),
      manual,
    );
    expect(plan.delete).toEqual([]);
    expect(plan.keep).toEqual([
      { name: 'deleting', reason: 'already being deleted' },
      { name: 'unset', reason: 'still running (phase unset)' },
      { name: 'running', reason: 'still running (phase InProgress)' },
      { name: 'new', reason: 'still running (phase New)' },
    ]);
  });
});

describe('planRetention: the last successful backup survives', () => {
  const now = new Date('2024-06-01T00:00:00Z');
  const expired = { expiration: '2024-05-01T00:00:00Z' };

  it('keeps the newest Completed backup of a schedule even when every backup expired', () => {
    const plan = planRetention(
      [
        backup('s-1', '2024-01-01T00:00:00Z', expired),
        backup('s-2', '2024-01-02T00:00:00Z', expired),
        backup('s-3', '2024-01-03T00:00:00Z', { ...expired, phase: 'Failed' }),
      ],
      undefined,
      now,
      schedule,
    );
    expect(names(plan.delete)).toEqual(['s-1', 's-3']);
    expect(plan.keep).toEqual([
      { name: 's-2', reason: 'last successful backup of the schedule, never deleted (would be: expired at 2024-05-01T00:00:00.000Z (ttl))' },
    ]);
  });

  it('prefers the newest Completed over a newer PartiallyFailed one', () => {
    const plan = planRetention(
      [backup('s-1', '2024-01-01T00:00:00Z', expired), backup('s-2', '2024-01-02T00:00:00Z', { ...expired, phase: 'PartiallyFailed' })],
      undefined,
      now,
      schedule,
    );
    expect(names(plan.keep)).toEqual(['s-1']);
    expect(names(plan.delete)).toEqual(['s-2']);
  });

  it('with no Completed backup, keeps the newest PartiallyFailed one', () => {
    const plan = planRetention(
      [
        backup('s-1', '2024-01-01T00:00:00Z', { ...expired, phase: 'PartiallyFailed' }),
        backup('s-2', '2024-01-02T00:00:00Z', { ...expired, phase: 'PartiallyFailed' }),
        backup('s-3', '2024-01-03T00:00:00Z', { ...expired, phase: 'Failed' }),
      ],
      undefined,
      now,
      schedule,
    );
    expect(names(plan.keep)).toEqual(['s-2']);
    expect(names(plan.delete)).toEqual(['s-1', 's-3']);
  });

  it('survives a keep policy that would drop it', () => {
    // keepHourly would keep the newest (Failed backups do not count), so use keepLast on a PartiallyFailed newer one.
    const plan = planRetention(
      [backup('s-1', '2024-01-01T00:00:00Z'), backup('s-2', '2024-01-02T00:00:00Z', { phase: 'PartiallyFailed' })],
      { keepLast: 1 },
      now,
      schedule,
    );
    expect(plan.keep).toEqual([
      { name: 's-2', reason: 'kept by policy: keepLast #1' },
      { name: 's-1', reason: "last successful backup of the schedule, never deleted (would be: not kept by the schedule's policy (keepLast=1))" },
    ]);
    expect(plan.delete).toEqual([]);
  });

  it('is not protected for unscheduled backups', () => {
    const plan = planRetention([backup('m-1', '2024-01-01T00:00:00Z', expired)], undefined, now, manual);
    expect(plan.delete).toEqual([{ name: 'm-1', reason: 'expired at 2024-05-01T00:00:00.000Z (ttl)' }]);
  });
});

describe('planRetention: keep policy (GFS)', () => {
  it('a simulated month of hourly backups keeps exactly the expected set', () => {
    // 2024-01-15T00:00 .. 2024-02-14T23:00: 744 hourly backups. 2024-01-01 and 2024-02-12 are Mondays.
    const backups = hourly('2024-01-15T00:00:00Z', '2024-02-15T00:00:00Z');
    expect(backups).toHaveLength(744);
    const plan = planRetention(
      backups,
      { keepLast: 3, keepHourly: 6, keepDaily: 7, keepWeekly: 3, keepMonthly: 2 },
      new Date('2024-02-15T00:10:00Z'),
      schedule,
    );
    const expected = [
      // keepHourly 6 (covers keepLast 3): the last six hours.
      's-20240214180000',
      's-20240214190000',
      's-20240214200000',
      's-20240214210000',
      's-20240214220000',
      's-20240214230000',
      // keepDaily 7: the newest of each of the last seven days (Feb 14 already above).
      's-20240213230000',
      's-20240212230000',
      's-20240211230000',
      's-20240210230000',
      's-20240209230000',
      's-20240208230000',
      // keepWeekly 3: ISO weeks 7 (Feb 14, above), 6 (ends Sun Feb 11, above), 5 (ends Sun Feb 4).
      's-20240204230000',
      // keepMonthly 2: February (Feb 14, above) and January (Jan 31).
      's-20240131230000',
    ];
    expect(names(plan.keep)).toEqual([...expected].sort());
    expect(plan.delete).toHaveLength(744 - expected.length);
    expect(new Set(plan.delete.map((d) => d.reason))).toEqual(
      new Set(["not kept by the schedule's policy (keepLast=3, keepHourly=6, keepDaily=7, keepWeekly=3, keepMonthly=2)"]),
    );
    // Oldest first, so deletion proceeds from the oldest end.
    expect(plan.delete[0]?.name).toBe('s-20240115000000');
    expect(plan.delete.at(-1)?.name).toBe('s-20240214170000');
    const reasons = new Map(plan.keep.map((k) => [k.name, k.reason]));
    expect(reasons.get('s-20240214230000')).toBe(
      'kept by policy: keepLast #1, keepHourly 2024-02-14T23, keepDaily 2024-02-14, keepWeekly 2024-W07, keepMonthly 2024-02',
    );
    expect(reasons.get('s-20240204230000')).toBe('kept by policy: keepWeekly 2024-W05');
  });

  it('keeps policy-kept backups past their TTL and deletes unkept ones before it', () => {
    const backups = hourly('2024-01-01T00:00:00Z', '2024-01-01T04:00:00Z').map((b, i) =>
      i === 0 ? { ...b, expiration: '2024-01-01T06:00:00Z' } : b,
    );
    // 4 backups at 00:00..03:00; keep the last one plus one per month -> only 03:00 kept. Then move 00:00 into December.
    backups[0] = { ...backups[0]!, name: 's-old', startTimestamp: '2023-12-31T23:00:00Z' };
    const plan = planRetention(backups, { keepLast: 1, keepMonthly: 2 }, new Date('2024-01-01T07:00:00Z'), schedule);
    expect(plan.keep).toEqual([
      { name: 's-20240101030000', reason: 'kept by policy: keepLast #1, keepMonthly 2024-01' },
      { name: 's-old', reason: 'kept by policy: keepMonthly 2023-12; ttl ignored (expired at 2024-01-01T06:00:00.000Z (ttl))' },
    ]);
    expect(plan.delete).toEqual([
      { name: 's-20240101010000', reason: "not kept by the schedule's policy (keepLast=1, keepMonthly=2)" },
      { name: 's-20240101020000', reason: "not kept by the schedule's policy (keepLast=1, keepMonthly=2)" },
    ]);
  });

  it('failed backups do not count toward the keep rules; they expire by TTL', () => {
    const plan = planRetention(
      [
        backup('ok-1', '2024-01-01T00:00:00Z'),
        backup('ok-2', '2024-01-02T00:00:00Z'),
        backup('bad-3', '2024-01-03T00:00:00Z', { phase: 'Failed', expiration: '2024-02-02T00:00:00Z' }),
        backup('bad-4', '2024-01-04T00:00:00Z', { phase: 'Failed', expiration: '2024-01-05T00:00:00Z' }),
      ],
      { keepLast: 2 },
      new Date('2024-01-10T00:00:00Z'),
      schedule,
    );
    expect(plan.keep).toEqual([
      { name: 'bad-3', reason: 'expires at 2024-02-02T00:00:00.000Z' },
      { name: 'ok-2', reason: 'kept by policy: keepLast #1' },
      { name: 'ok-1', reason: 'kept by policy: keepLast #2' },
    ]);
    expect(plan.delete).toEqual([{ name: 'bad-4', reason: 'expired at 2024-01-05T00:00:00.000Z (ttl)' }]);
  });

  it('periods without a backup do not count (a paused week still leaves 3 daily backups)', () => {
    const plan = planRetention(
      [
        backup('d1', '2024-01-01T10:00:00Z'),
        backup('d2', '2024-01-02T10:00:00Z'),
        backup('d3', '2024-01-03T10:00:00Z'),
        backup('d10', '2024-01-10T10:00:00Z'),
        backup('d10b', '2024-01-10T11:00:00Z'),
      ],
      { keepDaily: 3 },
      new Date('2024-01-11T00:00:00Z'),
      schedule,
    );
    expect(names(plan.keep)).toEqual(['d10b', 'd2', 'd3']);
    expect(names(plan.delete)).toEqual(['d1', 'd10']);
  });

  it('equal times fall back to the name to pick the newest', () => {
    const plan = planRetention(
      [backup('s-a', '2024-01-01T00:00:00Z'), backup('s-b', '2024-01-01T00:00:00Z')],
      { keepLast: 1 },
      new Date('2024-01-02T00:00:00Z'),
      manual,
    );
    expect(names(plan.keep)).toEqual(['s-b']);
  });

  it('describeKeepPolicy lists only the rules that are set', () => {
    expect(describeKeepPolicy({ keepLast: 2, keepHourly: 0, keepMonthly: 6 })).toBe('keepLast=2, keepMonthly=6');
    expect(describeKeepPolicy({})).toBe('none');
  });
});

describe('periods and times', () => {
  it.each([
    ['2020-12-31T12:00:00Z', '2020-W53'],
    ['2021-01-03T23:59:59Z', '2020-W53'],
    ['2021-01-04T00:00:00Z', '2021-W01'],
    ['2024-12-30T00:00:00Z', '2025-W01'],
    ['2024-01-01T00:00:00Z', '2024-W01'],
    ['2023-01-01T00:00:00Z', '2022-W52'],
    ['2026-12-31T00:00:00Z', '2026-W53'],
  ])('ISO week of %s is %s', (when, key) => {
    expect(periodKey('keepWeekly', new Date(when))).toBe(key);
  });

  it('isoWeek returns numbers', () => {
    expect(isoWeek(new Date('2024-02-14T00:00:00Z'))).toEqual({ year: 2024, week: 7 });
  });

  it('hour, day and month keys are UTC', () => {
    const d = new Date('2024-03-05T01:30:00+05:00'); // 2024-03-04T20:30Z
    expect(periodKey('keepHourly', d)).toBe('2024-03-04T20');
    expect(periodKey('keepDaily', d)).toBe('2024-03-04');
    expect(periodKey('keepMonthly', d)).toBe('2024-03');
  });

  it('backupTime uses start, then completion, then creation', () => {
    expect(backupTime({ name: 'a', startTimestamp: '2024-01-01T00:00:00Z', completionTimestamp: '2024-01-02T00:00:00Z' })?.toISOString()).toBe(
      '2024-01-01T00:00:00.000Z',
    );
    expect(backupTime({ name: 'a', completionTimestamp: '2024-01-02T00:00:00Z', creationTimestamp: '2024-01-03T00:00:00Z' })?.toISOString()).toBe(
      '2024-01-02T00:00:00.000Z',
    );
    expect(backupTime({ name: 'a', startTimestamp: 'garbage', creationTimestamp: '2024-01-03T00:00:00Z' })?.toISOString()).toBe('2024-01-03T00:00:00.000Z');
    expect(backupTime({ name: 'a' })).toBeUndefined();
  });
});

describe('effectiveExpiration', () => {
  it('prefers status.expiration', () => {
    expect(effectiveExpiration({ expiration: '2024-05-01T00:00:00Z', creationTimestamp: '2024-01-01T00:00:00Z', ttl: '1h' }, 720 * HOUR)).toBe(
      '2024-05-01T00:00:00Z',
    );
  });
  it('falls back to creation + ttl, then the default ttl', () => {
    expect(effectiveExpiration({ creationTimestamp: '2024-01-01T00:00:00Z', ttl: '1h30m' }, 720 * HOUR)).toBe('2024-01-01T01:30:00.000Z');
    expect(effectiveExpiration({ creationTimestamp: '2024-01-01T00:00:00Z' }, 24 * HOUR)).toBe('2024-01-02T00:00:00.000Z');
    expect(effectiveExpiration({ creationTimestamp: '2024-01-01T00:00:00Z', ttl: 'bogus' }, 24 * HOUR)).toBe('2024-01-02T00:00:00.000Z');
  });
  it('is undefined without a creation time', () => {
    expect(effectiveExpiration({ ttl: '1h' }, 24 * HOUR)).toBeUndefined();
  });
});
