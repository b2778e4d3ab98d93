// Retention end to end: schedules make real backups into a filesystem location (a bucket on disk),
// the GC controller expires them (TTL and keep policy) through DeleteBackupRequests, and the
// DeleteBackupRequest controller removes their data and resources. A test clock stands in for a month.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import {
  LABEL_BACKUP_NAME,
  LABEL_SCHEDULE_NAME,
  RESOURCES,
  newBackup,
  newSchedule,
  type Backup,
  type DeleteBackupRequest,
  type ScheduleSpec,
} from '../../src/apis/v1/index.js';
import { isNotFound } from '../../src/kube/index.js';
import { backupController } from '../../src/controller/backup.js';
import { backupStorageLocationController } from '../../src/controller/backupStorageLocation.js';
import { deleteBackupRequestController } from '../../src/controller/deleteBackupRequest.js';
import { GC_KEY, gcController } from '../../src/controller/gc.js';
import { scheduleController } from '../../src/controller/schedule.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation } from '../support/server.js';
import { filesUnder, startLifecycle, type Lifecycle } from './harness.js';

const BACKUPS = RESOURCES.Backup;
const DAY = 86_400_000;

describe('retention: GC and DeleteBackupRequests against a bucket on disk', () => {
  const app = uniqueName('ret-app');
  const loc = filesystemLocation();
  const backupsDir = path.join(loc.root, 'backups', 'backups');
  let lc: Lifecycle;

  beforeAll(async () => {
    lc = await startLifecycle({
      kubeconfigPath: inject('cluster').kubeconfigPath,
      namespace: uniqueName('lc-ret'),
      start: new Date('2024-01-14T12:00:00Z'),
      location: loc,
      // GC sweeps every 300 ms of real time, so moving the test clock is all it takes.
      config: { garbageCollectionFrequency: 300 },
      controllers: [backupStorageLocationController, backupController, scheduleController, gcController, deleteBackupRequestController],
    });
    await ensureNamespace(lc.client, app);
    await lc.client.create({ group: '', version: 'v1', resource: 'configmaps', namespaced: true }, app, { metadata: { name: 'settings' }, data: { a: '1' } });
    await lc.waitForLocation(loc.name);
  });

  afterAll(async () => {
    await lc?.stop();
  });

  async function scheduleBackups(name: string): Promise<string[]> {
    const list = await lc.client.list<Backup>(BACKUPS, { namespace: lc.namespace, labelSelector: `${LABEL_SCHEDULE_NAME}=${name}` });
    return list.items.map((b) => b.metadata.name).sort();
  }

  async function createSchedule(name: string, spec: Partial<ScheduleSpec>): Promise<void> {
    await lc.client.create(RESOURCES.Schedule, lc.namespace, newSchedule(name, lc.namespace, { schedule: '0 0 * * *', template: { includedNamespaces: [app] }, ...spec }));
  }

  /** Moves the clock to `at` and has the schedule fire; waits for the backup to finish. */
  async function tick(schedule: string, at: Date, expectedName: string): Promise<void> {
    lc.clock.set(at);
    lc.poke('schedule', `${lc.namespace}/${schedule}`);
    const b = await lc.waitForBackup(expectedName);
    expect(b.status?.phase, `${expectedName}: ${JSON.stringify(b.status)}`).toBe('Completed');
  }

  const stamp = (d: Date): string => d.toISOString().replace(/[-:T]/g, '').slice(0, 14);

  it('the GFS policy keeps exactly the expected set over a simulated month of daily backups, and their keys are gone', { timeout: 300_000 }, async () => {
    await createSchedule('gfs', { skipImmediately: true, keepDaily: 7, keepWeekly: 4, keepMonthly: 2 });
    await waitUntil('gfs enabled', async () => ((await lc.client.get<{ status?: { lastSkipped?: string } }>(RESOURCES.Schedule, lc.namespace, 'gfs')).status?.lastSkipped ? true : undefined));
    // 2024-01-15 .. 2024-02-14, one backup a day at midnight; GC runs all along, as it would.
    const start = Date.parse('2024-01-15T00:00:00Z');
    for (let day = 0; day < 31; day++) {
      const at = new Date(start + day * DAY);
      await tick('gfs', new Date(at.getTime() + 500), `gfs-${stamp(at)}`);
    }
    // 2024-01-01 is a Monday: ISO weeks 4 = Jan 22-28, 5 = Jan 29-Feb 4, 6 = Feb 5-11, 7 = Feb 12-18.
    const expected = [
      // keepDaily 7: Feb 8 .. Feb 14.
      'gfs-20240208000000', 'gfs-20240209000000', 'gfs-20240210000000', 'gfs-20240211000000',
      'gfs-20240212000000', 'gfs-20240213000000', 'gfs-20240214000000',
      // keepWeekly 4: weeks 7 and 6 already kept (Feb 14, Feb 11), week 5 -> Feb 4, week 4 -> Jan 28.
      'gfs-20240204000000', 'gfs-20240128000000',
      // keepMonthly 2: February already kept (Feb 14), January -> Jan 31.
      'gfs-20240131000000',
    ].sort();
    lc.clock.set(new Date('2024-02-14T06:00:00Z'));
    await waitUntil('GC to leave exactly the kept set', async () => {
      const names = await scheduleBackups('gfs');
      return JSON.stringify(names) === JSON.stringify(expected) ? true : undefined;
    }, 120_000, 250);
    // Every key of every deleted backup is gone from the bucket; the kept ones are whole.
    const dirs = fs.readdirSync(backupsDir).filter((d) => d.startsWith('gfs-')).sort();
    expect(dirs).toEqual(expected);
    for (const name of expected) {
      expect(filesUnder(path.join(backupsDir, name))).toEqual(
        [`${name}-logs.gz`, `${name}-manifest.json.gz`, `${name}-resource-list.json.gz`, `${name}-results.gz`, `${name}.tar.gz`, 'stowage-backup.json'].sort(),
      );
    }
    // The deletions went through DeleteBackupRequests that say what they did.
    // A request removes the Backup before it records itself Processed: wait for every one to end.
    const dbrs = await waitUntil('every deletion request to end', async () => {
      const ds = (await lc.client.list<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, { namespace: lc.namespace })).items.filter((d) => d.spec.backupName.startsWith('gfs-'));
      return ds.every((d) => !['New', 'InProgress', undefined].includes(d.status?.phase)) ? ds : undefined;
    }, 60_000, 250);
    expect(dbrs).toHaveLength(31 - expected.length);
    for (const d of dbrs) {
      expect(d.status?.phase).toBe('Processed');
      expect(d.status?.errors).toBeUndefined();
      expect(d.metadata.labels?.[LABEL_BACKUP_NAME]).toBe(d.spec.backupName);
    }
  });

  it('the last successful backup of a schedule survives its TTL; the older one expires', async () => {
    await lc.client.patch(RESOURCES.Schedule, lc.namespace, 'gfs', { spec: { paused: true } }, 'merge');
    lc.clock.set(new Date('2024-03-01T00:00:10Z'));
    await createSchedule('keeper', { schedule: '@hourly', template: { includedNamespaces: [app], ttl: '1h' } });
    // Never fired, no skipImmediately: backs up at once.
    await lc.waitForBackup('keeper-20240301000010');
    await tick('keeper', new Date('2024-03-01T01:00:00.300Z'), 'keeper-20240301010000');
    await lc.client.patch(RESOURCES.Schedule, lc.namespace, 'keeper', { spec: { paused: true } }, 'merge');
    expect(filesUnder(path.join(backupsDir, 'keeper-20240301010000'))).toContain('keeper-20240301010000.tar.gz');

    // Both have expired (ttl 1h); only the older goes.
    lc.clock.set(new Date('2024-03-01T05:00:00Z'));
    await waitUntil('the older backup to be deleted', async () => ((await scheduleBackups('keeper')).length === 1 ? true : undefined), 60_000, 250);
    expect(await scheduleBackups('keeper')).toEqual(['keeper-20240301010000']);
    expect(fs.existsSync(path.join(backupsDir, 'keeper-20240301000010'))).toBe(false);
    expect(filesUnder(path.join(backupsDir, 'keeper-20240301010000'))).toContain('stowage-backup.json');
    // Still there on later sweeps (two that began after the clock moved), and GC says why in the server log.
    const swept = lc.reconciled('garbage-collection', GC_KEY, 2);
    lc.clock.set(new Date('2024-04-01T00:00:00Z'));
    await swept;
    expect(await scheduleBackups('keeper')).toEqual(['keeper-20240301010000']);
    expect(lc.lines.some((l) => l.includes('deleting backup') && l.includes('keeper-20240301000010') && l.includes('expired at 2024-03-01T01:00:10.000Z (ttl)'))).toBe(true);
  });

  it('TTL alone (a backup without a schedule) removes the Backup and every key of it from the bucket', async () => {
    lc.clock.set(new Date('2024-05-01T00:00:00Z'));
    await lc.client.create(BACKUPS, lc.namespace, newBackup('manual', lc.namespace, { includedNamespaces: [app], ttl: '24h' }));
    const b = await lc.waitForBackup('manual');
    expect(b.status?.phase).toBe('Completed');
    expect(b.status?.expiration).toBe('2024-05-02T00:00:00Z');
    expect(filesUnder(path.join(backupsDir, 'manual'))).toHaveLength(6);

    // A minute before expiry nothing happens...
    const swept = lc.reconciled('garbage-collection', GC_KEY, 2);
    lc.clock.set(new Date('2024-05-01T23:59:00Z'));
    await swept;
    expect((await lc.client.get<Backup>(BACKUPS, lc.namespace, 'manual')).status?.phase).toBe('Completed');
    // ...at expiry it goes, resource and keys.
    lc.clock.set(new Date('2024-05-02T00:00:00Z'));
    await waitUntil('the backup resource to be gone', async () => {
      try {
        await lc.client.get(BACKUPS, lc.namespace, 'manual');
        return undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    }, 60_000, 250);
    expect(fs.existsSync(path.join(backupsDir, 'manual'))).toBe(false);
    expect(filesUnder(backupsDir).filter((f) => f.startsWith('manual/'))).toEqual([]);
  });
});
