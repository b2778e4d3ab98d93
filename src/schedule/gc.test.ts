import { describe, expect, it } from 'vitest';
import {
  LABEL_SCHEDULE_NAME,
  labelValue,
  newBackup,
  newBackupStorageLocation,
  newDeleteBackupRequest,
  newSchedule,
  type Backup,
  type BackupPhase,
  type BackupStorageLocation,
  type BackupStorageLocationSpec,
  type DeleteBackupRequest,
  type Schedule,
} from '../apis/v1/index.js';
import { backupLocationName, locationBlocksDeletion, planGc, type GcInput } from './gc.js';

const NS = 'stowage';
const HOUR = 3_600_000;
const NOW = new Date('2024-03-01T00:00:00Z');

function backup(name: string, opts: { phase?: BackupPhase; created: string; expiration?: string; schedule?: string; location?: string; ttl?: string; ns?: string }): Backup {
  const labels = opts.schedule === undefined ? undefined : { [LABEL_SCHEDULE_NAME]: labelValue(opts.schedule) };
  const b = newBackup(name, opts.ns ?? NS, { storageLocation: opts.location ?? 'default', ...(opts.ttl ? { ttl: opts.ttl } : {}) }, labels);
  b.metadata.creationTimestamp = opts.created;
  b.status = { phase: opts.phase ?? 'Completed', startTimestamp: opts.created, completionTimestamp: opts.created };
  if (opts.expiration !== undefined) b.status.expiration = opts.expiration;
  return b;
}

function location(name: string, spec: Partial<BackupStorageLocationSpec> = {}, phase: 'Available' | 'Unavailable' = 'Available', message?: string): BackupStorageLocation {
  const l = newBackupStorageLocation(name, NS, { provider: 'stowage.dev/aws', objectStorage: { bucket: name }, ...spec });
  l.status = { phase, ...(message ? { message } : {}) };
  return l;
}

function input(partial: Partial<GcInput>): GcInput {
  return { backups: [], schedules: [], locations: [location('default')], deleteRequests: [], defaultLocation: '', defaultTtlMs: 720 * HOUR, now: NOW, ...partial };
}

const names = (list: { backup: Backup }[]): string[] => list.map((d) => d.backup.metadata.name).sort();

describe('planGc', () => {
  it('TTL: deletes expired backups; the expiration defaults to creation + ttl (or the default ttl)', () => {
    const plan = planGc(
      input({
        backups: [
          backup('expired', { created: '2024-01-01T00:00:00Z', expiration: '2024-01-31T00:00:00Z' }),
          backup('fresh', { created: '2024-02-28T00:00:00Z', expiration: '2024-03-30T00:00:00Z' }),
          backup('no-status-expiry-ttl', { created: '2024-02-29T00:00:00Z', ttl: '1h' }),
          backup('no-status-expiry-default', { created: '2024-02-01T00:00:00Z' }),
        ],
      }),
    );
    expect(plan.delete.map((d) => [d.backup.metadata.name, d.reason]).sort()).toEqual([
      ['expired', 'expired at 2024-01-31T00:00:00.000Z (ttl)'],
      ['no-status-expiry-ttl', 'expired at 2024-02-29T01:00:00.000Z (ttl)'],
    ]);
    // created 2024-02-01 + the default 720h = 2024-03-02: not yet.
    expect(plan.skip).toEqual([]);
  });

  it('groups by schedule: policy per schedule, and the last good backup of each schedule survives', () => {
    const schedules: Schedule[] = [newSchedule('a', NS, { schedule: '@daily', template: {}, keepLast: 1 }), newSchedule('b', NS, { schedule: '@daily', template: {} })];
    const old = '2024-01-01T00:00:00Z';
    const expired = '2024-01-31T00:00:00Z';
    const plan = planGc(
      input({
        schedules,
        backups: [
          backup('a-1', { created: '2024-02-27T00:00:00Z', schedule: 'a', expiration: '2024-03-20T00:00:00Z' }),
          backup('a-2', { created: '2024-02-28T00:00:00Z', schedule: 'a', expiration: '2024-03-20T00:00:00Z' }),
          backup('b-1', { created: old, schedule: 'b', expiration: expired }),
          backup('b-2', { created: '2024-01-02T00:00:00Z', schedule: 'b', expiration: expired }),
          // A schedule that no longer exists: TTL only, but its last good backup is still protected.
          backup('gone-1', { created: old, schedule: 'gone', expiration: expired }),
          // Manual backups: TTL only, nothing protected.
          backup('manual-1', { created: old, expiration: expired }),
        ],
      }),
    );
    expect(plan.delete.map((d) => [d.backup.metadata.name, d.reason]).sort()).toEqual([
      ['a-1', "not kept by the schedule's policy (keepLast=1)"],
      ['b-1', 'expired at 2024-01-31T00:00:00.000Z (ttl)'],
      ['manual-1', 'expired at 2024-01-31T00:00:00.000Z (ttl)'],
    ]);
  });

  it('a long schedule name is matched through its hashed label value', () => {
    const long = 's'.repeat(80);
    const plan = planGc(
      input({
        schedules: [newSchedule(long, NS, { schedule: '@daily', template: {}, keepLast: 1 })],
        backups: [
          backup('l-1', { created: '2024-02-27T00:00:00Z', schedule: long, expiration: '2024-04-01T00:00:00Z' }),
          backup('l-2', { created: '2024-02-28T00:00:00Z', schedule: long, expiration: '2024-04-01T00:00:00Z' }),
        ],
      }),
    );
    expect(names(plan.delete)).toEqual(['l-1']);
  });

  it('skips, with the reason, backups whose location is missing, ReadOnly or Unavailable', () => {
    const expiration = '2024-01-31T00:00:00Z';
    const created = '2024-01-01T00:00:00Z';
    const plan = planGc(
      input({
        locations: [location('default'), location('ro', { accessMode: 'ReadOnly' }), location('down', {}, 'Unavailable', 'bucket "down" is not reachable: connection refused')],
        backups: [
          backup('on-missing', { created, expiration, location: 'nowhere' }),
          backup('on-ro', { created, expiration, location: 'ro' }),
          backup('on-down', { created, expiration, location: 'down' }),
          backup('ok', { created, expiration }),
          // Failed validation: nothing in storage, so a missing location does not block it.
          backup('invalid', { created, expiration, location: 'nowhere', phase: 'FailedValidation' }),
        ],
      }),
    );
    expect(names(plan.delete)).toEqual(['invalid', 'ok']);
    expect(plan.skip.map((d) => [d.backup.metadata.name, d.reason]).sort()).toEqual([
      ['on-down', 'expired at 2024-01-31T00:00:00.000Z (ttl), but it is not deleted: backup storage location "down" is Unavailable: bucket "down" is not reachable: connection refused'],
      ['on-missing', 'expired at 2024-01-31T00:00:00.000Z (ttl), but it is not deleted: backup storage location "nowhere" does not exist'],
      ['on-ro', 'expired at 2024-01-31T00:00:00.000Z (ttl), but it is not deleted: backup storage location "ro" is ReadOnly, so its backups cannot be deleted'],
    ]);
  });

  it('does not ask twice while a request is pending; asks again after a processed (failed) one', () => {
    const b = backup('x', { created: '2024-01-01T00:00:00Z', expiration: '2024-01-31T00:00:00Z' });
    const dbr = (phase?: 'New' | 'InProgress' | 'Processed'): DeleteBackupRequest => {
      const d = newDeleteBackupRequest('x', NS);
      if (phase !== undefined) d.status = { phase };
      return d;
    };
    expect(planGc(input({ backups: [b], deleteRequests: [dbr()] })).delete).toEqual([]);
    expect(planGc(input({ backups: [b], deleteRequests: [dbr('InProgress')] })).delete).toEqual([]);
    expect(names(planGc(input({ backups: [b], deleteRequests: [dbr('Processed')] })).delete)).toEqual(['x']);
  });

  it('keeps namespaces apart', () => {
    const plan = planGc(
      input({
        backups: [
          backup('s-1', { created: '2024-01-01T00:00:00Z', expiration: '2024-01-31T00:00:00Z', schedule: 's', ns: 'one' }),
          backup('s-1', { created: '2024-01-01T00:00:00Z', expiration: '2024-01-31T00:00:00Z', schedule: 's', ns: 'two' }),
        ],
      }),
    );
    // Each namespace's only backup is its schedule's last good one.
    expect(plan.delete).toEqual([]);
  });
});

describe('locations', () => {
  it('a backup without storageLocation uses the location marked default, else the configured default', () => {
    const b = newBackup('b', NS, {});
    const locs = [location('l1'), location('l2', { default: true })];
    expect(backupLocationName(b, locs, 'l1')).toBe('l2');
    expect(backupLocationName(b, [location('l1')], 'l1')).toBe('l1');
    expect(backupLocationName({ ...b, spec: { storageLocation: 'l3' } }, locs, 'l1')).toBe('l3');
    expect(backupLocationName(b, [location('l1')], '')).toBeUndefined();
    expect(locationBlocksDeletion(b, [location('l1')], '')).toBe('the backup names no storage location and there is no default location');
  });
});
