import { describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION } from '../auth/index.js';
import { LABEL_SCHEDULE_NAME, newSchedule, type Schedule, type ScheduleSpec, type ScheduleStatus } from '../apis/v1/index.js';
import { backupFromSchedule, planSchedule, validateSchedule, type ScheduleBackup } from './plan.js';

const CREATED = '2024-01-01T00:00:30Z';

function schedule(spec: Partial<ScheduleSpec> = {}, status?: ScheduleStatus, name = 'nightly'): Schedule {
  const s = newSchedule(name, 'stowage', { schedule: '*/5 * * * *', template: { ttl: '1h' }, ...spec });
  s.metadata.creationTimestamp = CREATED;
  s.metadata.uid = 'uid-1';
  if (status !== undefined) s.status = status;
  return s;
}
const at = (iso: string): Date => new Date(iso);

describe('validateSchedule', () => {
  it('accepts a valid schedule', () => {
    expect(validateSchedule(schedule())).toEqual([]);
  });

  it('lists every problem, each precise', () => {
    const s = schedule({ schedule: '0 25 * * *', template: { ttl: '3 days', includedNamespaces: ['a'], excludedNamespaces: ['a'] } }, undefined, 'x'.repeat(239));
    expect(validateSchedule(s)).toEqual([
      'spec.schedule: field 2 (hour): 25 is out of range 0-23',
      "the schedule's name is 239 characters long; at most 238 are allowed so that its backups' names (<schedule>-<yyyyMMddHHmmss>) fit in 253",
      'spec.template.ttl "3 days" is not a duration like 720h0m0s: unknown unit " days" (use h, m, s, ms, us or ns)',
      'spec.template: namespace "a" is in both includedNamespaces and excludedNamespaces',
    ]);
  });

  it('checks the template\'s hooks as a Backup\'s, under spec.template.hooks', () => {
    const hooks = { resources: [{ name: 'sync', pre: [{ exec: { command: ['sync'], onError: 'Retry' } }] }] };
    expect(validateSchedule(schedule({ template: { hooks } }))).toEqual([
      'spec.template.hooks.resources[0].pre[0].exec.onError: "Retry" is not an onError mode (use Fail or Continue)',
    ]);
    expect(validateSchedule(schedule({ template: { hooks: { resources: [{ name: 'sync', post: [{ exec: { command: ['sync'], timeout: '1m' } }] }] } } }))).toEqual([]);
  });

  it('an empty cron expression says what to write', () => {
    expect(validateSchedule(schedule({ schedule: '  ' }))).toEqual(['spec.schedule is empty: give a 5-field cron expression, e.g. "0 3 * * *"']);
  });

  it('planSchedule reports invalid schedules', () => {
    expect(planSchedule(schedule({ schedule: 'nope' }), [], at('2024-01-01T00:01:00Z'))).toEqual({
      action: 'invalid',
      errors: ['spec.schedule: cron expression "nope" has 1 field; expected 5 (minute hour day-of-month month day-of-week)'],
    });
  });
});

describe('planSchedule', () => {
  it('a new schedule backs up at once, named after the current second', () => {
    expect(planSchedule(schedule(), [], at('2024-01-01T00:00:31.500Z'))).toEqual({
      action: 'create',
      at: at('2024-01-01T00:00:31Z'),
      backupName: 'nightly-20240101000031',
      nextTick: at('2024-01-01T00:05:00Z'),
      requeueAfterMs: 268_500,
    });
  });

  it('skipImmediately records now as skipped and waits for the next tick, then fires named after the tick', () => {
    expect(planSchedule(schedule({ skipImmediately: true }), [], at('2024-01-01T00:01:00.700Z'))).toEqual({
      action: 'wait',
      nextTick: at('2024-01-01T00:05:00Z'),
      requeueAfterMs: 239_300,
      skipTick: at('2024-01-01T00:01:00Z'),
    });
    const s = schedule({ skipImmediately: true }, { lastSkipped: '2024-01-01T00:01:00Z' });
    expect(planSchedule(s, [], at('2024-01-01T00:04:59Z'))).toEqual({ action: 'wait', nextTick: at('2024-01-01T00:05:00Z'), requeueAfterMs: 1000 });
    expect(planSchedule(s, [], at('2024-01-01T00:05:00.250Z'))).toEqual({
      action: 'create',
      at: at('2024-01-01T00:05:00Z'),
      backupName: 'nightly-20240101000500',
      nextTick: at('2024-01-01T00:10:00Z'),
      requeueAfterMs: 299_750,
    });
  });

  it('the creation timestamp (the apiserver clock) does not matter', () => {
    const s = schedule({ skipImmediately: true }, { lastSkipped: '2024-01-01T00:01:00Z' });
    s.metadata.creationTimestamp = '2030-01-01T00:00:00Z';
    expect(planSchedule(s, [], at('2024-01-01T00:05:00Z'))).toMatchObject({ action: 'create', backupName: 'nightly-20240101000500' });
  });

  it('after a backup, waits for the next tick', () => {
    const s = schedule({}, { lastBackup: '2024-01-01T00:05:00Z' });
    expect(planSchedule(s, [{ name: 'nightly-20240101000500', phase: 'Completed' }], at('2024-01-01T00:09:59Z'))).toEqual({
      action: 'wait',
      nextTick: at('2024-01-01T00:10:00Z'),
      requeueAfterMs: 1000,
    });
  });

  it('several missed ticks fire once, for the latest', () => {
    const s = schedule({}, { lastBackup: '2024-01-01T00:05:00Z' });
    expect(planSchedule(s, [], at('2024-01-01T00:27:00Z'))).toMatchObject({
      action: 'create',
      at: at('2024-01-01T00:25:00Z'),
      backupName: 'nightly-20240101002500',
      nextTick: at('2024-01-01T00:30:00Z'),
      requeueAfterMs: 180_000,
    });
  });

  it('a tick while a backup is New, InProgress or has no phase yet is skipped', () => {
    const s = schedule({}, { lastBackup: '2024-01-01T00:05:00Z' });
    for (const phase of ['New', 'InProgress', undefined] as const) {
      const backups: ScheduleBackup[] = [{ name: 'nightly-20240101000500', phase }, { name: 'nightly-20240101000000', phase: 'Completed' }];
      expect(planSchedule(s, backups, at('2024-01-01T00:10:00Z'))).toEqual({
        action: 'skip',
        at: at('2024-01-01T00:10:00Z'),
        running: ['nightly-20240101000500'],
        nextTick: at('2024-01-01T00:15:00Z'),
        requeueAfterMs: 300_000,
      });
    }
  });

  it('after a skipped tick, waits for the next one', () => {
    const s = schedule({}, { lastBackup: '2024-01-01T00:05:00Z', lastSkipped: '2024-01-01T00:10:00Z' });
    expect(planSchedule(s, [{ name: 'nightly-20240101000500', phase: 'Completed' }], at('2024-01-01T00:12:00Z'))).toMatchObject({
      action: 'wait',
      nextTick: at('2024-01-01T00:15:00Z'),
    });
  });

  it('an existing backup of the schedule counts even when the status lost it (no double fire)', () => {
    const s = schedule();
    expect(planSchedule(s, [{ name: 'nightly-20240101000031', phase: 'Completed' }], at('2024-01-01T00:00:45Z'))).toMatchObject({
      action: 'wait',
      nextTick: at('2024-01-01T00:05:00Z'),
    });
    // Names that are not <schedule>-<timestamp> (a manual backup with the label) do not count.
    expect(planSchedule(s, [{ name: 'nightly-manual', phase: 'Completed' }], at('2024-01-01T00:00:45Z'))).toMatchObject({ action: 'create' });
  });

  it('paused never fires; without skipImmediately it records nothing, so unpausing catches up once', () => {
    const s = schedule({ paused: true }, { lastBackup: '2024-01-01T00:05:00Z' });
    expect(planSchedule(s, [], at('2024-01-01T01:00:00Z'))).toEqual({ action: 'paused' });
    const unpaused = schedule({ paused: false }, { lastBackup: '2024-01-01T00:05:00Z' });
    expect(planSchedule(unpaused, [], at('2024-01-01T01:02:00Z'))).toMatchObject({ action: 'create', backupName: 'nightly-20240101010000' });
  });

  it('a schedule created paused backs up at once when unpaused', () => {
    expect(planSchedule(schedule({ paused: true }), [], at('2024-01-01T00:20:00Z'))).toEqual({ action: 'paused' });
    expect(planSchedule(schedule(), [], at('2024-01-01T00:21:10Z'))).toMatchObject({ action: 'create', backupName: 'nightly-20240101002110' });
  });

  it('paused with skipImmediately records each passed tick as skipped, so unpausing waits', () => {
    // Created paused: "now" is skipped at once.
    expect(planSchedule(schedule({ paused: true, skipImmediately: true }), [], at('2024-01-01T00:02:10Z'))).toEqual({
      action: 'paused',
      skipTick: at('2024-01-01T00:02:10Z'),
      requeueAfterMs: 170_000,
    });
    const s = schedule({ paused: true, skipImmediately: true }, { lastBackup: '2024-01-01T00:05:00Z' });
    expect(planSchedule(s, [], at('2024-01-01T00:07:00Z'))).toEqual({ action: 'paused', requeueAfterMs: 180_000 });
    expect(planSchedule(s, [], at('2024-01-01T00:17:00Z'))).toEqual({ action: 'paused', skipTick: at('2024-01-01T00:15:00Z'), requeueAfterMs: 180_000 });
    const unpaused = schedule({ skipImmediately: true }, { lastBackup: '2024-01-01T00:05:00Z', lastSkipped: '2024-01-01T00:15:00Z' });
    expect(planSchedule(unpaused, [], at('2024-01-01T00:17:00Z'))).toMatchObject({ action: 'wait', nextTick: at('2024-01-01T00:20:00Z') });
  });

  it('works with @every and descriptors', () => {
    const s = schedule({ schedule: '@every 90s', skipImmediately: true }, { lastSkipped: '2024-01-01T00:00:01Z' });
    expect(planSchedule(s, [], at('2024-01-01T00:01:31Z'))).toMatchObject({ action: 'create', backupName: 'nightly-20240101000130' });
    const d = schedule({ schedule: '@daily' }, { lastBackup: '2024-01-01T00:00:00Z' });
    expect(planSchedule(d, [], at('2024-01-02T00:00:01Z'))).toMatchObject({ action: 'create', backupName: 'nightly-20240102000000' });
  });
});

describe('backupFromSchedule', () => {
  it('copies the template and the labels, adds the schedule label', () => {
    const s = schedule({ template: { ttl: '2h', includedNamespaces: ['shop'] } });
    s.metadata.labels = { team: 'a' };
    const b = backupFromSchedule(s, 'nightly-20240101000500');
    expect(b).toEqual({
      apiVersion: 'stowage.dev/v1',
      kind: 'Backup',
      metadata: { name: 'nightly-20240101000500', namespace: 'stowage', labels: { team: 'a', [LABEL_SCHEDULE_NAME]: 'nightly' } },
      spec: { ttl: '2h', includedNamespaces: ['shop'] },
    });
    // Not shared with the schedule.
    b.spec.includedNamespaces?.push('x');
    expect(s.spec.template.includedNamespaces).toEqual(['shop']);
  });

  it('long schedule names get a hashed label value of at most 63 characters', () => {
    const s = schedule({}, undefined, 'n'.repeat(100));
    const label = backupFromSchedule(s, 'x').metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '';
    expect(label.length).toBeLessThanOrEqual(63);
    expect(label.startsWith('nnnn')).toBe(true);
  });

  it('passes the Schedule\'s requester stamp on, and no other annotation', () => {
    const s = schedule();
    const stamp = JSON.stringify({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    s.metadata.annotations = { [REQUESTER_ANNOTATION]: stamp, note: 'x' };
    expect(backupFromSchedule(s, 'x').metadata.annotations).toEqual({ [REQUESTER_ANNOTATION]: stamp });
    expect(backupFromSchedule(schedule(), 'x').metadata.annotations).toBeUndefined();
  });

  it('sets an owner reference when asked', () => {
    const b = backupFromSchedule(schedule({ useOwnerReferencesInBackup: true }), 'x');
    expect(b.metadata.ownerReferences).toEqual([{ apiVersion: 'stowage.dev/v1', kind: 'Schedule', name: 'nightly', uid: 'uid-1', controller: true }]);
  });
});
