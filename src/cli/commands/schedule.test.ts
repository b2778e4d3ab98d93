import { describe, expect, it } from 'vitest';
import { LABEL_SCHEDULE_NAME, newBackup, newSchedule, type Backup, type BackupPhase } from '../../apis/v1/index.js';
import { UsageError } from './errors.js';
import { nextRunText, retentionSection, scheduleFromFlags } from './schedule.js';
import { backupOfSchedule } from './scheduleTemplate.js';
import { checkSelection } from './selection.js';

function backup(name: string, phase: BackupPhase, start: string): Backup {
  const b = newBackup(name, 'stowage', {}, { [LABEL_SCHEDULE_NAME]: 'nightly' });
  b.status = { phase, startTimestamp: start, expiration: '2099-01-01T00:00:00Z' };
  return b;
}

describe('schedule flags', () => {
  it('builds the spec from the backup, retention and schedule flags', () => {
    const s = scheduleFromFlags('nightly', 'stowage', {
      schedule: ' 0 3 * * * ', includeNamespaces: ['app'], ttl: '48h', keepLast: 3, keepMonthly: 0, paused: true, skipImmediately: 'false', labels: { team: 'a' },
    });
    expect(s.metadata).toEqual({ name: 'nightly', namespace: 'stowage', labels: { team: 'a' } });
    expect(s.spec).toEqual({ schedule: '0 3 * * *', template: { includedNamespaces: ['app'], ttl: '48h0m0s' }, keepLast: 3, keepMonthly: 0, paused: true, skipImmediately: false });
  });

  it('names the flag in every refusal', () => {
    expect(() => scheduleFromFlags('x', 'n', {})).toThrow(/^--schedule is required/);
    expect(() => scheduleFromFlags('x', 'n', { schedule: '* * *' })).toThrow(/^--schedule: /);
    expect(() => scheduleFromFlags('x', 'n', { schedule: '@daily', ttl: '-1h' })).toThrow('--ttl must not be negative');
    expect(() => scheduleFromFlags('x', 'n', { schedule: '@daily', includeNamespaces: ['a b'] })).toThrow(UsageError);
    expect(() => scheduleFromFlags('x', 'n', { schedule: '@daily', paused: 'sometimes' })).toThrow('--paused takes true or false, not "sometimes"');
  });
});

describe('selection', () => {
  it('takes exactly one of names, --selector and --all', () => {
    expect(() => checkSelection([], {}, 'backup', 'backups')).toThrow('name the backups, or give --selector SELECTOR or --all');
    expect(() => checkSelection(['a'], { all: true }, 'backup', 'backups')).toThrow('give backup names, --selector or --all, not more than one of them');
    expect(() => checkSelection([], { selector: 'a=b', all: true }, 'backup', 'backups')).toThrow(UsageError);
    expect(() => checkSelection([], { selector: 'a in (' }, 'backup', 'backups')).toThrow(/^--selector: /);
    expect(() => checkSelection([], { selector: 'a=b' }, 'backup', 'backups')).not.toThrow();
  });
});

describe('schedule views', () => {
  const now = new Date('2025-01-10T12:00:00Z');

  it('says when the next backup comes, by the controller\'s plan', () => {
    const s = newSchedule('nightly', 'stowage', { schedule: '0 3 * * *', template: {} });
    // Never fired: the controller backs up at once.
    expect(nextRunText(s, [], now)).toBe('now (due at 2025-01-10 12:00:00 UTC; the server creates it when it next looks)');
    s.status = { phase: 'Enabled', lastBackup: '2025-01-10T03:00:00Z' };
    expect(nextRunText(s, [], now)).toBe('2025-01-11 03:00:00 UTC');
    s.spec.paused = true;
    expect(nextRunText(s, [], now)).toBe('<none: paused>');
    const bad = newSchedule('bad', 'stowage', { schedule: 'nope', template: {} });
    expect(nextRunText(bad, [], now)).toBe('<none: the schedule failed validation>');
  });

  it('lists each backup with the retention verdict and why', () => {
    const s = newSchedule('nightly', 'stowage', { schedule: '0 3 * * *', template: {}, keepLast: 1 });
    const backups = [backup('nightly-20250110030000', 'Completed', '2025-01-10T03:00:00Z'), backup('nightly-20250109030000', 'Completed', '2025-01-09T03:00:00Z')];
    const plan = { keep: [{ name: 'nightly-20250110030000', reason: 'kept by policy: keepLast #1' }], delete: [{ name: 'nightly-20250109030000', reason: 'not kept' }] };
    expect(retentionSection(s, backups, plan)).toBe(
      'Retention policy:  keepLast=1\n' +
      'Backups (1 kept, 1 to be deleted by garbage collection):\n' +
      '  NAME                     PHASE       VERDICT   WHY\n' +
      '  nightly-20250110030000   Completed   keep      kept by policy: keepLast #1\n' +
      '  nightly-20250109030000   Completed   delete    not kept\n',
    );
    expect(retentionSection(newSchedule('x', 'stowage', { schedule: '@daily', template: {} }), [], { keep: [], delete: [] })).toBe(
      'Retention policy:  none: backups expire by their TTL\nBackups:  <none>\n',
    );
  });

  it('makes a triggered backup as the controller makes its own: name, template and labels', () => {
    const s = newSchedule('nightly', 'stowage', { schedule: '@daily', template: { includedNamespaces: ['app'] } });
    s.metadata.labels = { team: 'a' };
    const b = backupOfSchedule(s, undefined, { ticket: '1', [LABEL_SCHEDULE_NAME]: 'other' }, new Date('2025-01-10T12:34:56Z'));
    expect(b.metadata).toEqual({ name: 'nightly-20250110123456', namespace: 'stowage', labels: { team: 'a', ticket: '1', [LABEL_SCHEDULE_NAME]: 'nightly' } });
    expect(b.spec).toEqual({ includedNamespaces: ['app'] });
    expect(b.spec).not.toBe(s.spec.template);
    s.status = { phase: 'FailedValidation', validationErrors: ['spec.schedule: bad'] };
    expect(() => backupOfSchedule(s)).toThrow('schedule "nightly" failed validation, so its template cannot be used: spec.schedule: bad');
  });
});
