// Bucket contents never change what a location is (issue 31, item 6), against `stowage server`, the
// real API server and the test S3 server. A Stowage location's layout is detected once, at its
// first validation, and recorded; then 21 folders holding a velero-backup.json that sort before
// every real backup are planted with nothing but PutObject. The location stays Stowage's through
// later validations and syncs, the real Backup stays, new backups still work, and a planted backup
// (no manifest) is not restorable. Sync keeps a Backup whose marker is gone while its files remain,
// and says why; it removes one only once nothing of it is left, and says that too.
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type BackupStorageLocation, type Restore } from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { veleroBackupJson, veleroTarball, type Item } from '../fixtures/velero/bucket.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { testS3 } from '../support/s3ObjectStore.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true } as const;

describe('a location keeps the layout it was first validated with', () => {
  const ns = uniqueName('stowage-layout');
  const app = uniqueName('layout-app');
  const bucket = uniqueName('layout');
  const kubeconfig = inject('cluster').kubeconfigPath;
  let client: DynamicClient;
  let server: RunningServer | undefined;

  const put = async (key: string, body: Buffer | string): Promise<void> => {
    const s3 = testS3();
    try {
      await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: `cluster/${key}`, Body: body }));
    } finally {
      s3.close();
    }
  };
  const remove = async (keys: string[]): Promise<void> => {
    const s3 = testS3();
    try {
      for (const k of keys) await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: `cluster/${k}` }));
    } finally {
      s3.close();
    }
  };
  const location = (): Promise<BackupStorageLocation> => client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
  const backup = async (name: string): Promise<Backup> => {
    await client.create(RESOURCES.Backup, ns, newBackup(name, ns, { includedNamespaces: [app], includedResources: ['configmaps'] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, name);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    return b;
  };
  /** Resolves once the location was validated and synced again after `since` (both stamps are the server's, to the second). */
  const validatedAndSyncedAfter = (since: number): Promise<BackupStorageLocation> =>
    waitUntil('the location validated and synced again', async () => {
      const l = await location();
      const v = Date.parse(l.status?.lastValidationTime ?? '');
      const s = Date.parse(l.status?.lastSyncedTime ?? '');
      return v > since + 1000 && s > since + 1000 ? l : undefined;
    }, 60_000);

  beforeAll(async () => {
    client = testClient(kubeconfig);
    const s3 = testS3();
    await s3.createBucket(bucket);
    s3.close();
    for (const n of [app, ns]) await ensureNamespace(client, n);
    await client.create(CORE.configMaps, app, { metadata: { name: 'settings' }, data: { color: 'blue' } });
    await createS3CredentialsSecret(client, ns, 'cloud-credentials', inject('s3'));
    const spec = { ...s3LocationSpec(inject('s3'), { bucket, prefix: 'cluster', secret: 'cloud-credentials', validationFrequency: '1s' }), backupSyncPeriod: '1s' };
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: { name: 'default', spec } });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    for (const n of [app, ns]) await client?.delete(CORE.namespaces, undefined, n).catch(() => undefined);
  });

  it('records the layout it detected at the first validation, with the bucket and prefix it looked at', async () => {
    const l = await waitUntil('location Available', async () => {
      const x = await location();
      return x.status?.phase === 'Available' ? x : undefined;
    }, 60_000);
    expect(l.status).toMatchObject({ layout: 'Stowage', layoutReason: 'detected: no Velero backup found', layoutDetectedIn: `${bucket}/cluster` });
  });

  it('stays Stowage\'s when 21 Velero backup folders that sort first are planted: the real Backup stays, new backups work, a planted one is not restorable', async () => {
    await backup('real');
    const items: Item[] = [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted', namespace: app }, data: { evil: 'yes' } }];
    const tar = await veleroTarball(items);
    const planted = Array.from({ length: 21 }, (_, i) => `aaa-${String(i).padStart(2, '0')}`);
    const at = Date.now();
    for (const name of planted) {
      await put(`backups/${name}/${name}.tar.gz`, tar);
      await put(`backups/${name}/velero-backup.json`, JSON.stringify(veleroBackupJson({ name, items }, new Date())));
    }
    const l = await validatedAndSyncedAfter(at);
    expect(l.status).toMatchObject({ phase: 'Available', layout: 'Stowage', layoutReason: 'detected: no Velero backup found', layoutDetectedIn: `${bucket}/cluster` });
    expect((await client.get<Backup>(RESOURCES.Backup, ns, 'real')).status?.phase).toBe('Completed');
    for (const name of planted) await expect(client.get(RESOURCES.Backup, ns, name)).rejects.toSatisfy(isNotFound);
    await backup('after');
    await client.create(RESOURCES.Restore, ns, newRestore('planted-restore', ns, { backupName: 'aaa-00' }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'planted-restore');
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([`backup "aaa-00" does not exist in namespace ${ns}`]);
    expect(await client.get(CORE.configMaps, app, 'planted').catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)))).toBeUndefined();
  });

  it('keeps a Backup whose stowage-backup.json is gone while its files remain, saying why; removes it once nothing is left, saying so', async () => {
    await remove(['backups/real/stowage-backup.json']);
    await server?.waitForOutput(/backup sync of location default: backup real: its stowage-backup\.json is not in the bucket, but \d+ of its files are \(cluster\/backups\/real\/[^)]*\), so its Backup is kept/, 60_000);
    const kept = await waitUntil('the kept event', async () => {
      const evs = (await client.list<{ reason?: string; message?: string; type?: string }>(EVENTS, { namespace: ns })).items;
      return evs.find((e) => e.reason === 'BackupSync' && (e.message ?? '').includes('1 kept (real: its stowage-backup.json is not in the bucket'));
    }, 30_000);
    expect(kept.type).toBe('Warning');
    expect((await client.get<Backup>(RESOURCES.Backup, ns, 'real')).status?.phase).toBe('Completed');

    const s3 = testS3();
    let keys: string[];
    try {
      keys = (await s3.store.listObjects(bucket, 'cluster/backups/real/')).map((k) => k.slice('cluster/'.length));
    } finally {
      s3.close();
    }
    await remove(keys);
    await waitUntil('Backup real removed', async () => client.get(RESOURCES.Backup, ns, 'real').then(() => undefined, (e: unknown) => (isNotFound(e) ? true : Promise.reject(e))), 60_000);
    await server?.waitForOutput(/backup sync of location default: removed Backup real: nothing of it is left in object storage \(no file under its backups\/ directory\)/, 30_000);
  });
});
