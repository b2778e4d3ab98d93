// Disaster recovery: back up on one control plane into a bucket on disk, stop that control plane,
// start a NEW one with a fresh etcd, point a location (another name, to see the rewrite) at the
// same bucket: backup sync imports the backups and a restore brings the application back. Also:
// sync removes a Backup whose data left the bucket, and a ReadOnly location still syncs and restores.
// Sync imports a backup under another location's name only when its signature verifies, so the old
// cluster signs with an Ed25519 private key and the readers hold only its public half (the way
// docs/security.md describes disaster recovery).
// Both control planes are this file's own (scripts/cluster/controlPlane), not the shared one.
import crypto, { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  ANNOTATION_SYNCED_FROM,
  LABEL_STORAGE_LOCATION,
  RESOURCES,
  newBackup,
  newRestore,
  type Backup,
  type Restore,
} from '../../src/apis/v1/index.js';
import { backupController } from '../../src/controller/backup.js';
import { backupStorageLocationController } from '../../src/controller/backupStorageLocation.js';
import { backupSyncController } from '../../src/controller/backupSync.js';
import { restoreController } from '../../src/controller/restore.js';
import { CORE, isNotFound, type KubeObject } from '../../src/kube/index.js';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, testClient } from '../support/server.js';
import { startLifecycle, type Lifecycle } from './harness.js';

const BACKUPS = RESOURCES.Backup;
type ConfigMap = KubeObject & { data?: Record<string, string> };
type Secret = KubeObject & { data?: Record<string, string> };

const sha256 = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

const ed = crypto.generateKeyPairSync('ed25519');
const SIGNING_SECRET = 'backup-signing';

/** The namespace and the signing Secret (the private key, or only the public one) a location reads before it is validated. */
async function signingSecret(kubeconfigPath: string, namespace: string, which: 'private' | 'public'): Promise<void> {
  const client = testClient(kubeconfigPath);
  try {
    await ensureNamespace(client, namespace);
    const pem = which === 'private' ? ed.privateKey.export({ type: 'pkcs8', format: 'pem' }) : ed.publicKey.export({ type: 'spki', format: 'pem' });
    await client.create(CORE.secrets, namespace, { metadata: { name: SIGNING_SECRET }, data: { key: Buffer.from(pem).toString('base64') } });
  } finally {
    client.close();
  }
}

describe('disaster recovery from the bucket into a fresh cluster', () => {
  const app = uniqueName('dr-app');
  const loc = filesystemLocation('primary');
  loc.spec.signing = { keySecretRef: { name: SIGNING_SECRET, key: 'key' } };
  const bucketDir = path.join(loc.root, 'backups', 'backups');
  const planes: ControlPlane[] = [];
  const running: Lifecycle[] = [];

  afterAll(async () => {
    for (const lc of running.splice(0)) await lc.stop().catch(() => undefined);
    for (const cp of planes.splice(0)) await cp.stop();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  async function restoreAndWait(lc: Lifecycle, name: string, backupName: string): Promise<Restore> {
    await lc.client.create(RESOURCES.Restore, lc.namespace, newRestore(name, lc.namespace, { backupName }));
    return waitUntil(`restore ${name}`, async () => {
      const r = await lc.client.get<Restore>(RESOURCES.Restore, lc.namespace, name);
      return ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'].includes(r.status?.phase ?? '') ? r : undefined;
    }, 90_000, 200);
  }

  it('backs up, loses the cluster, syncs the backups into a new one, and restores', { timeout: 420_000 }, async () => {
    // ---- the old cluster ---------------------------------------------------------------------------
    const oldCp = await startControlPlane({ controllerManager: false });
    planes.push(oldCp);
    const serverNs = 'stowage';
    await signingSecret(oldCp.kubeconfigPath, serverNs, 'private');
    const old = await startLifecycle({
      kubeconfigPath: oldCp.kubeconfigPath,
      namespace: serverNs,
      start: new Date(),
      location: loc,
      controllers: [backupStorageLocationController, backupController],
    });
    running.push(old);
    await ensureNamespace(old.client, app);
    await old.client.create(CORE.configMaps, app, { metadata: { name: 'settings', labels: { app: 'shop' } }, data: { color: 'blue', size: '3' } });
    await old.client.create(CORE.secrets, app, { metadata: { name: 'db' }, stringData: { password: 'pa55' } });
    await old.waitForLocation('primary');
    for (const name of ['dr-1', 'dr-2']) {
      await old.client.create(BACKUPS, serverNs, newBackup(name, serverNs, { includedNamespaces: [app] }, { team: 'shop' }));
      const b = await old.waitForBackup(name);
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    }
    const tarballSha = sha256(path.join(bucketDir, 'dr-1', 'dr-1.tar.gz'));
    const oldStatus = (await old.client.get<Backup>(BACKUPS, serverNs, 'dr-1')).status;
    expect(oldStatus?.signature).toEqual({ algorithm: 'Ed25519', keyId: expect.stringMatching(/^ed25519:[0-9a-f]{32}$/) });

    // ---- disaster: the control plane and its etcd are gone -----------------------------------------
    running.splice(running.indexOf(old), 1);
    await old.stop();
    planes.splice(planes.indexOf(oldCp), 1);
    await oldCp.stop();
    // One backup's data is lost from the bucket too (its resource must not come back).
    fs.rmSync(path.join(bucketDir, 'dr-2', 'stowage-backup.json'));

    // ---- a new cluster, a location with another name over the same bucket --------------------------
    const newCp = await startControlPlane({ controllerManager: false });
    planes.push(newCp);
    await signingSecret(newCp.kubeconfigPath, serverNs, 'public');
    const fresh = await startLifecycle({
      kubeconfigPath: newCp.kubeconfigPath,
      namespace: serverNs,
      start: new Date(),
      location: { name: 'recovered', spec: { ...loc.spec, backupSyncPeriod: '1s' } },
      controllers: [backupStorageLocationController, backupController, backupSyncController, restoreController],
    });
    running.push(fresh);
    await expect(fresh.client.get(CORE.namespaces, undefined, app)).rejects.toSatisfy(isNotFound);

    const imported = await fresh.waitForBackup('dr-1', (b) => b.status?.phase === 'Completed', 60_000);
    expect(imported.spec.storageLocation).toBe('recovered');
    expect(imported.spec.includedNamespaces).toEqual([app]);
    expect(imported.metadata.labels).toEqual({ team: 'shop', [LABEL_STORAGE_LOCATION]: 'recovered' });
    expect(imported.metadata.annotations?.[ANNOTATION_SYNCED_FROM]).toBe('recovered');
    expect(imported.status).toEqual(oldStatus);
    // dr-2 is not whole in the bucket: not imported.
    await expect(fresh.client.get(BACKUPS, serverNs, 'dr-2')).rejects.toSatisfy(isNotFound);
    const synced = await waitUntil('lastSyncedTime', async () => {
      const l = await fresh.client.get<{ status?: { lastSyncedTime?: string } } & KubeObject>(RESOURCES.BackupStorageLocation, serverNs, 'recovered');
      return l.status?.lastSyncedTime;
    });
    expect(Number.isNaN(Date.parse(synced))).toBe(false);

    const r = await restoreAndWait(fresh, 'after-disaster', 'dr-1');
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    const cm = await fresh.client.get<ConfigMap>(CORE.configMaps, app, 'settings');
    expect(cm.data).toEqual({ color: 'blue', size: '3' });
    expect(cm.metadata?.labels?.app).toBe('shop');
    const secret = await fresh.client.get<Secret>(CORE.secrets, app, 'db');
    expect(Buffer.from(secret.data?.password ?? '', 'base64').toString()).toBe('pa55');
    // The imported backup was never run again: its data is the old cluster's.
    expect(sha256(path.join(bucketDir, 'dr-1', 'dr-1.tar.gz'))).toBe(tarballSha);
    expect((await fresh.client.get<Backup>(BACKUPS, serverNs, 'dr-1')).status).toEqual(oldStatus);

    // ---- sync removes a Backup whose data is gone --------------------------------------------------
    fs.rmSync(path.join(bucketDir, 'dr-1'), { recursive: true });
    await waitUntil('dr-1 to be removed by sync', async () => {
      try {
        await fresh.client.get(BACKUPS, serverNs, 'dr-1');
        return undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    }, 30_000, 250);
  });

  it('a ReadOnly location is synced and restored from, and takes no backups', { timeout: 300_000 }, async () => {
    // Writer and reader in two namespaces of the shared control plane, over the same bucket.
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const roApp = uniqueName('dr-ro-app');
    const writerNs = uniqueName('dr-writer');
    const readerNs = uniqueName('dr-reader');
    await signingSecret(kubeconfigPath, writerNs, 'private');
    await signingSecret(kubeconfigPath, readerNs, 'public');
    const writer = await startLifecycle({
      kubeconfigPath, namespace: writerNs, start: new Date(), location: loc,
      controllers: [backupStorageLocationController, backupController],
    });
    running.push(writer);
    await ensureNamespace(writer.client, roApp);
    await writer.client.create(CORE.configMaps, roApp, { metadata: { name: 'ro-settings' }, data: { k: 'v' } });
    await writer.waitForLocation('primary');
    await writer.client.create(BACKUPS, writer.namespace, newBackup('dr-3', writer.namespace, { includedNamespaces: [roApp] }));
    expect((await writer.waitForBackup('dr-3')).status?.phase).toBe('Completed');
    // The application is lost.
    await writer.client.delete(CORE.configMaps, roApp, 'ro-settings');
    running.splice(running.indexOf(writer), 1);
    await writer.stop();

    const reader = await startLifecycle({
      kubeconfigPath, namespace: readerNs, start: new Date(),
      location: { name: 'archive', spec: { ...loc.spec, accessMode: 'ReadOnly', backupSyncPeriod: '1s' } },
      controllers: [backupStorageLocationController, backupController, backupSyncController, restoreController],
    });
    running.push(reader);
    const imported = await reader.waitForBackup('dr-3', (b) => b.status?.phase === 'Completed', 60_000);
    expect(imported.spec.storageLocation).toBe('archive');
    const r = await restoreAndWait(reader, 'from-archive', 'dr-3');
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect((await reader.client.get<ConfigMap>(CORE.configMaps, roApp, 'ro-settings')).data).toEqual({ k: 'v' });
    // A ReadOnly location takes no new backups.
    await reader.client.create(BACKUPS, reader.namespace, newBackup('no-write', reader.namespace, { storageLocation: 'archive' }));
    const refused = await reader.waitForBackup('no-write');
    expect(refused.status?.phase).toBe('FailedValidation');
    expect(refused.status?.validationErrors).toContain('backup storage location "archive" is ReadOnly: backups cannot be written to it');
    expect(fs.existsSync(path.join(bucketDir, 'no-write'))).toBe(false);
  });
});
