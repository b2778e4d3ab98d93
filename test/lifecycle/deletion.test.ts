// DeleteBackupRequests end to end: the DeleteItemAction plugins run on the backup's items, every
// key of the backup and of its restores goes from the bucket, then the Restore and Backup
// resources; refusals (ReadOnly, running, missing) are precise, failures leave the backup intact
// and are retried with a new request; processed requests are cleaned up after 24h.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import {
  RESOURCES,
  newBackup,
  newDeleteBackupRequest,
  newRestore,
  type Backup,
  type BackupStorageLocation,
  type DeleteBackupRequest,
  type Restore,
} from '../../src/apis/v1/index.js';
import { backupController } from '../../src/controller/backup.js';
import { backupStorageLocationController } from '../../src/controller/backupStorageLocation.js';
import { deleteBackupRequestController } from '../../src/controller/deleteBackupRequest.js';
import { gcController } from '../../src/controller/gc.js';
import { restoreController } from '../../src/controller/restore.js';
import { CORE, isNotFound, type KubeObject } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation } from '../support/server.js';
import { filesUnder, pluginDir, startLifecycle, type Lifecycle } from './harness.js';

const BACKUPS = RESOURCES.Backup;
const DBRS = RESOURCES.DeleteBackupRequest;
const BSLS = RESOURCES.BackupStorageLocation;

describe('DeleteBackupRequest controller', () => {
  const app = uniqueName('del-app');
  const badApp = uniqueName('del-bad');
  const loc = filesystemLocation();
  const bucket = path.join(loc.root, 'backups');
  const plugins = pluginDir(['delete-recorder.mjs']);
  const record = path.join(plugins, 'record.log');
  let lc: Lifecycle;

  beforeAll(async () => {
    lc = await startLifecycle({
      kubeconfigPath: inject('cluster').kubeconfigPath,
      namespace: uniqueName('lc-del'),
      start: new Date('2024-01-01T00:00:00Z'),
      location: loc,
      pluginDirs: [plugins],
      // GC sweeps every 300 ms: the ReadOnly test watches it skip.
      config: { garbageCollectionFrequency: 300 },
      controllers: [backupStorageLocationController, backupController, restoreController, deleteBackupRequestController, gcController],
    });
    await ensureNamespace(lc.client, app);
    await ensureNamespace(lc.client, badApp);
    for (const n of ['cm-1', 'cm-2']) await lc.client.create(CORE.configMaps, app, { metadata: { name: n }, data: { n } });
    await lc.client.create(CORE.secrets, app, { metadata: { name: 's' }, stringData: { k: 'v' } });
    await lc.client.create(CORE.configMaps, badApp, { metadata: { name: 'bad' }, data: { x: '1' } });
    await lc.waitForLocation(loc.name);
  });

  afterAll(async () => {
    await lc?.stop();
    fs.rmSync(plugins, { recursive: true, force: true });
  });

  async function backup(name: string, spec: Backup['spec']): Promise<Backup> {
    await lc.client.create(BACKUPS, lc.namespace, newBackup(name, lc.namespace, spec));
    const b = await lc.waitForBackup(name);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    return b;
  }

  async function requestDeletion(backupName: string): Promise<DeleteBackupRequest> {
    const created = await lc.client.create<DeleteBackupRequest>(DBRS, lc.namespace, newDeleteBackupRequest(backupName, lc.namespace));
    return waitUntil(`DeleteBackupRequest for ${backupName} to be processed`, async () => {
      const d = await lc.client.get<DeleteBackupRequest>(DBRS, lc.namespace, created.metadata.name);
      return d.status?.phase === 'Processed' ? d : undefined;
    }, 60_000, 100);
  }

  async function gone(res: typeof BACKUPS | typeof RESOURCES.Restore, ns: string, name: string): Promise<boolean> {
    try {
      await lc.client.get(res, ns, name);
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  it('runs the DeleteItemActions, removes every key of the backup and its restores, then the Restore and Backup resources', async () => {
    await backup('doomed', { includedNamespaces: [app] });
    await backup('bystander', { includedNamespaces: [app] });
    // Two restores of "doomed" (real runs, with their artifacts under restores/), one of "bystander".
    const target = uniqueName('del-copy');
    for (const [name, from] of [['doomed-r1', 'doomed'], ['doomed-r2', 'doomed'], ['bystander-r1', 'bystander']] as const) {
      await lc.client.create(RESOURCES.Restore, lc.namespace, newRestore(name, lc.namespace, { backupName: from, namespaceMapping: { [app]: `${target}-${name}` } }));
      const r = await waitUntil(`restore ${name}`, async () => {
        const cur = await lc.client.get<Restore>(RESOURCES.Restore, lc.namespace, name);
        return ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'].includes(cur.status?.phase ?? '') ? cur : undefined;
      }, 90_000, 200);
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    }
    const before = filesUnder(bucket);
    expect(before.filter((f) => f.startsWith('backups/doomed/'))).toHaveLength(6);
    expect(before.filter((f) => f.startsWith('restores/doomed-r1/')).length).toBeGreaterThan(0);
    expect(before.filter((f) => f.startsWith('restores/doomed-r2/')).length).toBeGreaterThan(0);

    const d = await requestDeletion('doomed');
    expect(d.status?.errors).toBeUndefined();
    // The plugin ran on the backup's config maps, and only on them (its AppliesTo names configmaps).
    const configMaps = (await lc.client.list<KubeObject>(CORE.configMaps, { namespace: app })).items.map((c) => `doomed ${app}/${c.metadata?.name ?? ""}`);
    expect(configMaps).toContain(`doomed ${app}/cm-1`);
    expect(fs.readFileSync(record, 'utf8').split('\n').filter((l) => l.startsWith('doomed ')).sort()).toEqual(configMaps.sort());
    const after = filesUnder(bucket);
    expect(after.filter((f) => f.startsWith('backups/doomed/') || f.startsWith('restores/doomed-'))).toEqual([]);
    // Nothing else was touched.
    expect(after).toEqual(before.filter((f) => !f.startsWith('backups/doomed/') && !f.startsWith('restores/doomed-')));
    expect(after.filter((f) => f.startsWith('backups/bystander/'))).toHaveLength(6);
    expect(after.filter((f) => f.startsWith('restores/bystander-r1/')).length).toBeGreaterThan(0);
    expect(await gone(BACKUPS, lc.namespace, 'doomed')).toBe(true);
    expect(await gone(RESOURCES.Restore, lc.namespace, 'doomed-r1')).toBe(true);
    expect(await gone(RESOURCES.Restore, lc.namespace, 'doomed-r2')).toBe(true);
    expect(await gone(RESOURCES.Restore, lc.namespace, 'bystander-r1')).toBe(false);
    expect(await gone(BACKUPS, lc.namespace, 'bystander')).toBe(false);
  });

  it('a failing DeleteItemAction leaves the backup whole, with its phase, and says which item failed', async () => {
    await backup('tricky', { includedNamespaces: [badApp], includedResources: ['configmaps'] });
    const d = await requestDeletion('tricky');
    expect(d.status?.errors).toHaveLength(1);
    expect(d.status?.errors?.[0]).toMatch(new RegExp(`^configmaps ${badApp}/bad: DeleteItemAction lifecycle\\.stowage\\.dev/record \\(executable .*delete-recorder\\): Execute failed: cannot clean up bad$`));
    const b = await lc.client.get<Backup>(BACKUPS, lc.namespace, 'tricky');
    expect(b.status?.phase).toBe('Completed');
    expect(filesUnder(path.join(bucket, 'backups', 'tricky'))).toHaveLength(6);
  });

  it('refuses a backup that does not exist, precisely', async () => {
    const ghost = await requestDeletion('ghost');
    expect(ghost.status?.errors).toEqual([`backup "ghost" does not exist in namespace ${lc.namespace}`]);
  });

  it('a ReadOnly location refuses backups and deletions with a clear reason; GC skips and reports; retried after it is writable again', async () => {
    await backup('precious', { includedNamespaces: [app], ttl: '1h' });
    await lc.client.patch(BSLS, lc.namespace, loc.name, { spec: { accessMode: 'ReadOnly' } }, 'merge');
    await waitUntil('the cache to see ReadOnly', async () =>
      lc.ctx.informer<BackupStorageLocation>('BackupStorageLocation').get(`${lc.namespace}/${loc.name}`)?.spec.accessMode === 'ReadOnly' ? true : undefined);

    // No new backups.
    await lc.client.create(BACKUPS, lc.namespace, newBackup('refused', lc.namespace, { includedNamespaces: [app] }));
    const refused = await lc.waitForBackup('refused');
    expect(refused.status?.phase).toBe('FailedValidation');
    expect(refused.status?.validationErrors).toContain(`backup storage location "${loc.name}" is ReadOnly: backups cannot be written to it`);

    // No deletions.
    const d = await requestDeletion('precious');
    expect(d.status?.errors).toEqual([`backup storage location "${loc.name}" is ReadOnly, so its backups cannot be deleted`]);
    expect(filesUnder(path.join(bucket, 'backups', 'precious'))).toHaveLength(6);
    expect((await lc.client.get<Backup>(BACKUPS, lc.namespace, 'precious')).status?.phase).toBe('Completed');

    // GC: expired, but skipped, with a Warning event on the Backup saying why.
    lc.clock.set(new Date('2024-01-01T02:00:00Z'));
    const event = await waitUntil('a DeletionSkipped event on the backup', async () => {
      const events = await lc.client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(CORE.events, { namespace: lc.namespace });
      return events.items.find((e) => e.reason === 'DeletionSkipped' && e.involvedObject?.name === 'precious');
    }, 30_000, 250);
    expect(event.message).toMatch(/^expired at .* \(ttl\), but it is not deleted: backup storage location ".*" is ReadOnly, so its backups cannot be deleted$/);
    expect(await gone(BACKUPS, lc.namespace, 'precious')).toBe(false);

    // Writable again: GC's next request succeeds (a retry is simply a new request).
    await lc.client.patch(BSLS, lc.namespace, loc.name, { spec: { accessMode: 'ReadWrite' } }, 'merge');
    await waitUntil('GC to delete it', async () => ((await gone(BACKUPS, lc.namespace, 'precious')) ? true : undefined), 60_000, 250);
    expect(fs.existsSync(path.join(bucket, 'backups', 'precious'))).toBe(false);
  });

  it('processed requests are deleted 24h after their creation', async () => {
    // The clock goes to the apiserver's time + 24h; GC must not start expiring everything meanwhile.
    await lc.controller('garbage-collection').stop();
    const d = await requestDeletion('ghost-2');
    const created = Date.parse(d.metadata.creationTimestamp ?? '');
    lc.clock.set(new Date(created + 23 * 3_600_000));
    const looked = lc.reconciled('delete-backup-request', `${lc.namespace}/${d.metadata.name}`);
    lc.poke('delete-backup-request', `${lc.namespace}/${d.metadata.name}`);
    await looked;
    await lc.client.get(DBRS, lc.namespace, d.metadata.name);
    lc.clock.set(new Date(created + 24 * 3_600_000 + 1000));
    lc.poke('delete-backup-request', `${lc.namespace}/${d.metadata.name}`);
    await waitUntil('the processed request to be gone', async () => {
      try {
        await lc.client.get(DBRS, lc.namespace, d.metadata.name);
        return undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    }, 30_000, 200);
  });
});
