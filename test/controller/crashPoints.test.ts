// A SIGKILL of the real server at each commit point of a backup (the test-only fault hook
// STOWAGE_FAULT_CRASH_AT, src/controller/run/faults.ts), then a restart on the same scratch directory:
// the cluster and the bucket agree every time. The Backup is Completed exactly when its
// stowage-backup.json is written, and then as that file records; a Completed backup restores; a
// Failed one has no marker; backup sync neither brings a Failed one back nor changes a Completed
// one's phase; and the run's log is in the bucket in every case. A stale backup whose location is
// down at the restart waits for it; a restore killed mid-run fails with its salvaged log. All run
// at once, each with its own server namespace (and so its own lease) and location.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, inject, it } from 'vitest';
import {
  ANNOTATION_SYNCED_FROM, RESOURCES, newBackup, newRestore, type Backup, type BackupStorageLocation, type Restore,
} from '../../src/apis/v1/index.js';
import { CRASH_AT_ENV, CRASH_POINTS, type CrashPoint } from '../../src/controller/run/faults.js';
import { isNotFound } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import {
  createS3CredentialsSecret, ensureAppNamespace, ensureNamespace, filesystemLocation, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer,
} from '../support/server.js';

const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const SETTINGS = { a: { color: 'blue' }, b: { size: 'large' }, c: { shape: 'round' } };
/** Whether a backup killed at the point is whole: only once stowage-backup.json is written. */
const WHOLE: Record<CrashPoint, boolean> = { 'before-tarball': false, 'after-tarball': false, 'after-marker': true, 'after-status': true };

const SLOW = ['--client-qps', '4', '--client-burst', '1'];

type Cm = { metadata: { name: string }; data?: Record<string, string> };

describe.concurrent('a server SIGKILLed at each commit point of a backup', () => {
  const kubeconfigPath = inject('cluster').kubeconfigPath;
  const c = testClient(kubeconfigPath);
  const source = uniqueName('crash-src');
  const seeded = (async () => {
    await ensureNamespace(c, source);
    for (const [name, data] of Object.entries(SETTINGS)) await c.create(CM, source, { metadata: { name, labels: { app: 'crash' } }, data });
  })();

  it.for([...CRASH_POINTS])('%s: cluster and bucket agree after the restart', { timeout: 180_000 }, async (point, { expect }) => {
    await seeded;
    const ns = uniqueName(`crash-${point.replace('-tarball', 'tar').replace('after-', 'a').replace('before-', 'b')}`);
    const loc = filesystemLocation();
    loc.spec.backupSyncPeriod = '2s';
    const servers: RunningServer[] = [];
    try {
      // Killed after the tarball, a slowed run (throttled API client) has lines its log has flushed to disk to salvage.
      const first = await startServer({ kubeconfigPath, namespace: ns, location: loc, env: { [CRASH_AT_ENV]: point }, args: point === 'after-tarball' ? SLOW : [] });
      servers.push(first);
      await waitUntil('location Available', async () => {
        const l = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
        return l.status?.phase === 'Available' ? true : undefined;
      }, 60_000);
      await c.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [source], includedResources: ['configmaps'], labelSelector: { matchLabels: { app: 'crash' } } }));
      await waitUntil('the server to kill itself', async () => (first.proc.signalCode !== null || first.proc.exitCode !== null ? true : undefined), 90_000);
      expect(first.proc.signalCode).toBe('SIGKILL');
      expect(first.output()).toContain(`fault hook ${CRASH_AT_ENV}=${point}: killing the server with SIGKILL`);

      // A new process (its own identity) on the same scratch directory: it leads once the dead one's lease expires.
      const restarted = Date.now();
      const second = await startServer({ kubeconfigPath, namespace: ns, scratchDir: first.scratchDir });
      servers.push(second);
      const b = await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'b', 60_000);
      process.stderr.write(`[crash] ${point}: Backup ${b.status?.phase} ${Date.now() - restarted} ms after the restart (the dead server's lease expires first)\n`);
      const dir = path.join(loc.root, 'backups', 'backups', 'b');
      const markerFile = path.join(dir, 'stowage-backup.json');

      // The bucket decides: Completed exactly when the marker is there, and as the marker says.
      expect(fs.existsSync(markerFile)).toBe(WHOLE[point]);
      expect(b.status?.phase, b.status?.failureReason).toBe(WHOLE[point] ? 'Completed' : 'Failed');
      if (WHOLE[point]) {
        const marker = JSON.parse(fs.readFileSync(markerFile, 'utf8')) as Backup;
        expect(b.status).toMatchObject({
          phase: marker.status?.phase, startTimestamp: marker.status?.startTimestamp, completionTimestamp: marker.status?.completionTimestamp,
          expiration: marker.status?.expiration, progress: marker.status?.progress, warnings: marker.status?.warnings, errors: marker.status?.errors,
        });
        expect(b.status?.progress?.itemsBackedUp).toBe(3);
        expect(b.status?.failureReason).toBeUndefined();
        if (point === 'after-marker') {
          await second.waitForOutput(/backup \S+\/b Completed: recovered from stowage-backup\.json in location default/, 10_000);
        }
      } else {
        expect(b.status?.failureReason).toContain('stopped before it finished');
        expect(b.status?.failureReason).toContain('holds no stowage-backup.json for it, so the backup is incomplete');
        // Killed before the tarball, the server may die before its log file is even created.
        expect(b.status?.failureReason).toMatch(point === 'before-tarball'
          ? /its partial log \(\d+ lines\) was recovered from this server's scratch directory and uploaded|its log was lost with the server that ran it \(.*stopped before its log file was written\); the log uploaded says so/
          : /its partial log \(\d+ lines\) was recovered from this server's scratch directory and uploaded/);
      }

      // The run's log is in the bucket in every case; a Failed run's ends with how it ended.
      const lines = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'b-logs.gz'))).toString('utf8').split('\n').filter((l) => l !== '');
      const last = JSON.parse(lines.at(-1) ?? '{}') as { msg?: string; level?: string };
      if (WHOLE[point]) expect(lines.some((l) => l.includes('backup completed: 3 items'))).toBe(true);
      else {
        expect(last).toMatchObject({ level: 'error', msg: expect.stringMatching(/^backup failed: the Stowage server running this backup stopped before it finished.*no stowage-backup\.json/) });
        const recovered = (JSON.parse(lines.at(-1) ?? '{}') as { recoveredLines?: number }).recoveredLines;
        expect(lines.length).toBeGreaterThanOrEqual(1 + (recovered ?? 0));
        if (point === 'after-tarball') {
          expect(recovered).toBeGreaterThan(0);
          expect(b.status?.failureReason).toContain(`its partial log (${recovered} lines) was recovered`);
          expect(lines.slice(0, recovered).every((l) => (JSON.parse(l) as { backup?: string }).backup === `${ns}/b`)).toBe(true);
        }
      }
      // Nothing stays behind in the scratch directory.
      expect(fs.readdirSync(path.join(first.scratchDir, 'run-logs'))).toEqual([]);

      if (WHOLE[point]) {
        // Completed means restorable.
        const target = uniqueName('crash-dst');
        await c.create(RESOURCES.Restore, ns, newRestore('r', ns, { backupName: 'b', namespaceMapping: { [source]: target } }));
        const r = await waitFinished<Restore>(c, RESOURCES.Restore, ns, 'r', 60_000);
        expect(r.status?.phase, r.status?.failureReason ?? r.status?.validationErrors?.join('; ')).toBe('Completed');
        for (const [name, data] of Object.entries(SETTINGS)) expect((await c.get<Cm>(CM, target, name)).data).toEqual(data);
      }

      // Backup sync: with the resource gone, a whole backup comes back as the bucket records it; a
      // Failed one (no marker) does not come back at all.
      await c.delete(RESOURCES.Backup, ns, 'b');
      const deletedAt = Date.now();
      // lastSyncedTime is stamped in whole seconds as a sync ends; a sync of one backup takes far less than a second.
      await waitUntil('a sync that began after the deletion', async () => {
        const l = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
        return Date.parse(l.status?.lastSyncedTime ?? '') > deletedAt + 1000 ? true : undefined;
      }, 30_000, 250);
      const back = await waitUntil<Backup | null>('the synced Backup (or its absence) to settle', async () => {
        try {
          const x = await c.get<Backup>(RESOURCES.Backup, ns, 'b');
          return x.status?.phase !== undefined ? x : undefined;
        } catch (err) {
          if (isNotFound(err)) return WHOLE[point] ? undefined : null;
          throw err;
        }
      }, 30_000, 250);
      if (WHOLE[point]) {
        expect(back?.status?.phase).toBe('Completed');
        expect(back?.metadata.annotations?.[ANNOTATION_SYNCED_FROM]).toBe('default');
      } else expect(back).toBeNull();
    } finally {
      for (const s of servers) await s.stop();
    }
  });
});

describe.concurrent('a stale backup whose location cannot be read at the restart', () => {
  const kubeconfigPath = inject('cluster').kubeconfigPath;
  const c = testClient(kubeconfigPath);

  /** Whether `key` is in the bucket "vault" of `s3`. */
  async function inBucket(s3: S3Server, key: string): Promise<boolean> {
    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    try {
      await client.send(new HeadObjectCommand({ Bucket: 'vault', Key: key }));
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === 'NotFound') return false;
      throw err;
    } finally {
      client.destroy();
    }
  }

  /** A server on its own S3 server, SIGKILLed at `point`, and the S3 server then stopped. */
  async function killedWithStorageDown(point: CrashPoint, servers: RunningServer[], closers: (() => Promise<void>)[]) {
    const ns = uniqueName('crash-s3');
    const s3 = await startS3Server({ buckets: ['vault'] });
    closers.push(() => s3.close());
    await ensureNamespace(c, ns);
    await createS3CredentialsSecret(c, ns, 'cloud-credentials', s3);
    const spec = s3LocationSpec(s3, { bucket: 'vault', prefix: 'p', secret: 'cloud-credentials', validationFrequency: '2s' });
    const first = await startServer({ kubeconfigPath, namespace: ns, location: { name: 'default', spec }, env: { [CRASH_AT_ENV]: point } });
    servers.push(first);
    await waitUntil('location Available', async () => {
      const l = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? true : undefined;
    }, 60_000);
    await c.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: ['default'], includedResources: ['configmaps'] }));
    await waitUntil('the server to kill itself', async () => (first.proc.signalCode !== null ? true : undefined), 90_000);
    await s3.stop();
    return { ns, s3, first };
  }

  it('waits while the location is down and then takes the marker it finds', { timeout: 180_000 }, async ({ expect }) => {
    const servers: RunningServer[] = [];
    const closers: (() => Promise<void>)[] = [];
    try {
      const { ns, s3, first } = await killedWithStorageDown('after-marker', servers, closers);
      const second = await startServer({ kubeconfigPath, namespace: ns, scratchDir: first.scratchDir });
      servers.push(second);
      // The read of stowage-backup.json rides out the outage (inside the store, for up to
      // --object-store-outage-timeout, 2m): meanwhile the backup is neither Failed nor guessed.
      await second.waitForOutput(/object store unreachable; retrying.*stowage-backup\.json/, 60_000);
      expect((await c.get<Backup>(RESOURCES.Backup, ns, 'b')).status?.phase).toBe('InProgress');

      await s3.start();
      const b = await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'b', 60_000);
      expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
      await second.waitForOutput(/backup \S+\/b Completed: recovered from stowage-backup\.json in location default/, 10_000);
    } finally {
      for (const s of servers) await s.stop();
      for (const close of closers) await close();
    }
  });

  it('fails with the read error once the location has been down for the outage window, and spools the log', { timeout: 180_000 }, async ({ expect }) => {
    const servers: RunningServer[] = [];
    const closers: (() => Promise<void>)[] = [];
    try {
      const { ns, s3, first } = await killedWithStorageDown('after-tarball', servers, closers);
      const second = await startServer({ kubeconfigPath, namespace: ns, scratchDir: first.scratchDir, args: ['--object-store-outage-timeout', '4s'] });
      servers.push(second);
      const b = await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'b', 60_000);
      expect(b.status?.phase).toBe('Failed');
      expect(b.status?.failureReason).toMatch(/stopped before it finished .*; location default cannot be read to look for its stowage-backup\.json \(.+\) for 4s, so whether it completed could not be checked; its partial log \(\d+ lines\) was recovered and is kept in the log spool until location default can be written/);

      // Storage back: the spooled log lands at the backup's log key; no marker was ever written.
      await s3.start();
      await waitUntil('the spooled log to be uploaded', async () => ((await inBucket(s3, 'p/backups/b/b-logs.gz')) ? true : undefined), 60_000, 500);
      expect(await inBucket(s3, 'p/backups/b/stowage-backup.json')).toBe(false);
    } finally {
      for (const s of servers) await s.stop();
      for (const close of closers) await close();
    }
  });
});

describe.concurrent('a server SIGKILLed mid-restore', () => {
  it('fails the restore after the restart and uploads its partial log with a closing line', { timeout: 180_000 }, async ({ expect }) => {
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const c = testClient(kubeconfigPath);
    const ns = uniqueName('crash-rst');
    const source = uniqueName('crash-rsrc');
    await ensureAppNamespace(c, source, 20);
    const loc = filesystemLocation();
    const servers: RunningServer[] = [];
    try {
      // A throttled client keeps the restore going long enough for its log to reach the disk.
      const first = await startServer({ kubeconfigPath, namespace: ns, location: loc, args: SLOW });
      servers.push(first);
      await c.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [source], includedResources: ['configmaps'] }));
      expect((await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'b', 120_000)).status?.phase).toBe('Completed');
      await c.create(RESOURCES.Restore, ns, newRestore('r', ns, { backupName: 'b', namespaceMapping: { [source]: uniqueName('crash-rdst') } }));
      await waitUntil('the restore to run', async () => ((await c.get<Restore>(RESOURCES.Restore, ns, 'r')).status?.phase === 'InProgress' ? true : undefined), 60_000, 100);
      // Killed once the run log has a line on disk (it is sync-flushed within 1 s of being written).
      const logDir = path.join(first.scratchDir, 'run-logs');
      await waitUntil('a line of the restore log on disk', async () => {
        for (const f of fs.readdirSync(logDir).filter((n) => n.startsWith('restore-') && n.endsWith('.log.gz'))) {
          try {
            const text = zlib.gunzipSync(fs.readFileSync(path.join(logDir, f)), { finishFlush: zlib.constants.Z_SYNC_FLUSH }).toString('utf8');
            if (text.includes('\n')) return true;
          } catch {
            // Not even a gzip header yet.
          }
        }
        return undefined;
      }, 30_000, 100);
      expect((await c.get<Restore>(RESOURCES.Restore, ns, 'r')).status?.phase).toBe('InProgress');
      await first.stop('SIGKILL');

      const second = await startServer({ kubeconfigPath, namespace: ns, scratchDir: first.scratchDir });
      servers.push(second);
      const r = await waitFinished<Restore>(c, RESOURCES.Restore, ns, 'r', 60_000);
      expect(r.status?.phase).toBe('Failed');
      expect(r.status?.failureReason).toMatch(/^the Stowage server running this restore stopped before it finished .*; its partial log \(\d+ lines\) was recovered from this server's scratch directory and uploaded$/);
      const lines = zlib.gunzipSync(fs.readFileSync(path.join(loc.root, 'backups', 'restores', 'r', 'restore-r-logs.gz'))).toString('utf8').split('\n').filter((l) => l !== '');
      const last = JSON.parse(lines.at(-1) ?? '{}') as { msg?: string; recoveredLines?: number };
      expect(last.msg).toMatch(/^restore failed: the Stowage server running this restore stopped before it finished/);
      expect(last.recoveredLines).toBeGreaterThan(0);
      expect(lines).toHaveLength((last.recoveredLines ?? 0) + 1);
      expect(fs.readdirSync(path.join(first.scratchDir, 'run-logs'))).toEqual([]);
    } finally {
      for (const s of servers) await s.stop();
    }
  });
});
