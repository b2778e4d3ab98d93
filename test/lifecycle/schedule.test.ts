// Schedules end to end: the schedule controller with the backup and location controllers,
// in-process against the real apiserver and a filesystem location that signs (the test key), with
// a test clock for the ticks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { LABEL_SCHEDULE_NAME, RESOURCES, newSchedule, type Backup, type Schedule, type ScheduleSpec } from '../../src/apis/v1/index.js';
import { backupController } from '../../src/controller/backup.js';
import { backupStorageLocationController } from '../../src/controller/backupStorageLocation.js';
import { scheduleController } from '../../src/controller/schedule.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { SIGNED, ensureNamespace, filesystemLocation } from '../support/server.js';
import { filesUnder, startLifecycle, type Lifecycle } from './harness.js';

const SCHEDULES = RESOURCES.Schedule;
const BACKUPS = RESOURCES.Backup;

async function createSchedule(lc: Lifecycle, name: string, spec: Partial<ScheduleSpec>): Promise<Schedule> {
  await lc.client.create(SCHEDULES, lc.namespace, newSchedule(name, lc.namespace, { schedule: '*/5 * * * *', template: {}, ...spec }));
  return waitUntil(`schedule ${name} to be reconciled`, async () => {
    const s = await lc.client.get<Schedule>(SCHEDULES, lc.namespace, name);
    return s.status?.phase !== undefined && s.status.phase !== 'New' ? s : undefined;
  }, 30_000, 100);
}

async function backupsOf(lc: Lifecycle, schedule: string): Promise<Backup[]> {
  const list = await lc.client.list<Backup>(BACKUPS, { namespace: lc.namespace, labelSelector: `${LABEL_SCHEDULE_NAME}=${schedule}` });
  return list.items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

const getSchedule = (lc: Lifecycle, name: string): Promise<Schedule> => lc.client.get<Schedule>(SCHEDULES, lc.namespace, name);

describe('schedule controller with the backup controller', () => {
  const app = uniqueName('sched-app');
  const loc = filesystemLocation('default', SIGNED);
  let lc: Lifecycle;

  beforeAll(async () => {
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    lc = await startLifecycle({
      kubeconfigPath,
      namespace: uniqueName('lc-sched'),
      start: new Date('2024-01-01T00:00:30Z'),
      location: loc,
      controllers: [backupStorageLocationController, backupController, scheduleController],
    });
    await ensureNamespace(lc.client, app);
    await lc.client.create({ group: '', version: 'v1', resource: 'configmaps', namespaced: true }, app, { metadata: { name: 'settings' }, data: { a: '1' } });
    await lc.waitForLocation(loc.name);
  });

  afterAll(async () => {
    await lc?.stop();
  });

  it('fires at the cron tick and names the backup <schedule>-<yyyyMMddHHmmss> (UTC)', async () => {
    const s = await createSchedule(lc, 'every5', { skipImmediately: true, template: { includedNamespaces: [app], ttl: '2h0m0s' } });
    expect(s.status?.phase).toBe('Enabled');
    expect(s.status?.validationErrors).toBeUndefined();
    expect(await backupsOf(lc, 'every5')).toEqual([]);

    lc.clock.set(new Date('2024-01-01T00:05:00.200Z'));
    lc.poke('schedule', `${lc.namespace}/every5`);
    const b = await lc.waitForBackup('every5-20240101000500');
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(b.metadata.labels?.[LABEL_SCHEDULE_NAME]).toBe('every5');
    // The template, plus the location the backup controller resolved (the default one).
    expect(b.spec).toEqual({ includedNamespaces: [app], ttl: '2h0m0s', storageLocation: loc.name });
    expect(filesUnder(`${loc.root}/backups/backups/every5-20240101000500`)).toEqual(expect.arrayContaining(['stowage-backup.json', 'every5-20240101000500-signature.json']));
    const after = await waitUntil('status.lastBackup', async () => {
      const cur = await getSchedule(lc, 'every5');
      return cur.status?.lastBackup !== undefined ? cur : undefined;
    });
    expect(after.status?.lastBackup).toBe('2024-01-01T00:05:00Z');
    expect(after.status?.lastBackupName).toBe('every5-20240101000500');

    // The next tick, 00:10, again named after the tick even though the clock is past it.
    lc.clock.set(new Date('2024-01-01T00:11:42Z'));
    lc.poke('schedule', `${lc.namespace}/every5`);
    await lc.waitForBackup('every5-20240101001000');
    expect((await backupsOf(lc, 'every5')).map((x) => x.metadata.name)).toEqual(['every5-20240101000500', 'every5-20240101001000']);
  });

  it('a new schedule without skipImmediately backs up at once', async () => {
    lc.clock.set(new Date('2024-01-01T00:12:07.900Z'));
    await createSchedule(lc, 'daily', { schedule: '@daily', template: { includedNamespaces: [app] } });
    const b = await lc.waitForBackup('daily-20240101001207');
    expect(b.status?.phase).toBe('Completed');
  });

  it('a paused schedule does not fire; unpausing after missed ticks backs up once', async () => {
    lc.clock.set(new Date('2024-01-01T00:20:00Z'));
    await createSchedule(lc, 'paused', { schedule: '* * * * *', paused: true, skipImmediately: true, template: { includedNamespaces: [app] } });
    for (const t of ['2024-01-01T00:21:00Z', '2024-01-01T00:25:00Z', '2024-01-01T00:40:00Z']) {
      lc.clock.set(new Date(t));
      lc.poke('schedule', `${lc.namespace}/paused`);
      // Each tick passing while paused (skipImmediately) is recorded as skipped, and creates nothing.
      await waitUntil(`tick ${t} recorded as skipped`, async () => ((await getSchedule(lc, 'paused')).status?.lastSkipped === t ? true : undefined));
      expect(await backupsOf(lc, 'paused')).toEqual([]);
    }
    // Unpaused with skipImmediately: nothing at once, the next tick fires.
    lc.clock.set(new Date('2024-01-01T00:40:30Z'));
    await lc.client.patch(SCHEDULES, lc.namespace, 'paused', { spec: { paused: false } }, 'merge');
    lc.clock.set(new Date('2024-01-01T00:41:00.100Z'));
    lc.poke('schedule', `${lc.namespace}/paused`);
    await lc.waitForBackup('paused-20240101004100');
    expect((await backupsOf(lc, 'paused')).map((b) => b.metadata.name)).toEqual(['paused-20240101004100']);
  });

  it('an invalid cron expression fails validation with the precise reason, and creates nothing', async () => {
    const s = await createSchedule(lc, 'bad', { schedule: '0 25 * * *', template: { ttl: 'forever' } });
    expect(s.status?.phase).toBe('FailedValidation');
    expect(s.status?.validationErrors).toEqual([
      'spec.schedule: field 2 (hour): 25 is out of range 0-23',
      'spec.template.ttl "forever" is not a duration like 720h0m0s: expected a number at position 1, found "f"',
    ]);
    // Fixing it enables the schedule (and, never having fired, it backs up at once).
    await lc.client.patch(SCHEDULES, lc.namespace, 'bad', { spec: { schedule: '0 3 * * *', template: { ttl: '1h' } } }, 'merge');
    await waitUntil('schedule enabled', async () => ((await getSchedule(lc, 'bad')).status?.phase === 'Enabled' ? true : undefined));
    expect((await getSchedule(lc, 'bad')).status?.validationErrors).toBeUndefined();
    await waitUntil('its first backup', async () => ((await backupsOf(lc, 'bad')).length === 1 ? true : undefined));
  });
});

describe('schedule controller: overlapping ticks', () => {
  // No backup controller here: backups stay New, as if still waiting or running.
  let lc: Lifecycle;

  beforeAll(async () => {
    lc = await startLifecycle({
      kubeconfigPath: inject('cluster').kubeconfigPath,
      namespace: uniqueName('lc-overlap'),
      start: new Date('2024-06-01T10:00:00Z'),
      controllers: [scheduleController],
    });
  });

  afterAll(async () => {
    await lc?.stop();
  });

  it('skips a tick while a backup of the schedule is still running, and records it in lastSkipped', async () => {
    await createSchedule(lc, 'hourly', { schedule: '@hourly', skipImmediately: true });
    // skipImmediately: creation time recorded as skipped, nothing created.
    await waitUntil('creation recorded as skipped', async () => ((await getSchedule(lc, 'hourly')).status?.lastSkipped === '2024-06-01T10:00:00Z' ? true : undefined));
    expect(await backupsOf(lc, 'hourly')).toEqual([]);
    lc.clock.set(new Date('2024-06-01T11:00:00Z'));
    lc.poke('schedule', `${lc.namespace}/hourly`);
    await waitUntil('first backup', async () => ((await backupsOf(lc, 'hourly')).length === 1 ? true : undefined));

    // 12:00: the 11:00 backup has no phase yet (New): skipped.
    lc.clock.set(new Date('2024-06-01T12:00:05Z'));
    lc.poke('schedule', `${lc.namespace}/hourly`);
    const skipped = await waitUntil('lastSkipped to record the 12:00 tick', async () => {
      const s = await getSchedule(lc, 'hourly');
      return s.status?.lastSkipped === '2024-06-01T12:00:00Z' ? s : undefined;
    });
    expect(skipped.status?.lastBackupName).toBe('hourly-20240601110000');
    expect((await backupsOf(lc, 'hourly')).map((b) => b.metadata.name)).toEqual(['hourly-20240601110000']);

    // Once it has finished, the 13:00 tick fires again.
    await lc.client.patchStatus(BACKUPS, lc.namespace, 'hourly-20240601110000', { status: { phase: 'Completed' } });
    await waitUntil('the cache to see Completed', async () =>
      lc.ctx.informer<Backup>('Backup').get(`${lc.namespace}/hourly-20240601110000`)?.status?.phase === 'Completed' ? true : undefined);
    lc.clock.set(new Date('2024-06-01T13:00:00Z'));
    lc.poke('schedule', `${lc.namespace}/hourly`);
    await waitUntil('the 13:00 backup', async () => ((await backupsOf(lc, 'hourly')).length === 2 ? true : undefined));
    expect((await backupsOf(lc, 'hourly')).map((b) => b.metadata.name)).toEqual(['hourly-20240601110000', 'hourly-20240601130000']);
    // The controller creates the Backup, then patches its own status: wait for the patch, not just the Backup.
    const s = await waitUntil('lastBackup to record the 13:00 tick', async () => {
      const cur = await getSchedule(lc, 'hourly');
      return cur.status?.lastBackup === '2024-06-01T13:00:00Z' ? cur : undefined;
    });
    expect(s.status?.lastSkipped).toBe('2024-06-01T12:00:00Z');
  });
});
