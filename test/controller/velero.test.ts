// Reading Velero's buckets, end to end through `stowage server`: a real S3 bucket holding backups
// built to Velero's documented format (test/fixtures/velero/bucket.ts), beside Velero's kopia/,
// restic/ and metadata/ directories. One location finds the layout itself, another is marked
// spec.velero: true. Sync imports the finished backups as read-only Backups; a restore recreates
// the exact objects; a hostile Velero tarball is refused by the same checks; a backup to the
// location is refused; deleting an imported Backup removes only the resource; and nothing of any
// of this is written into the bucket (its listing, with ETags, is the same before and after).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ANNOTATION_SYNCED_FROM, LABEL_IMPORTED_FROM, LABEL_STORAGE_LOCATION, RESOURCES, newBackup, newBackupStorageLocation, newDeleteBackupRequest, newRestore,
  type Backup, type BackupStorageLocation, type DeleteBackupRequest, type Restore,
} from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { bucketListing, writeVeleroBucket, type Item, type VeleroBackupFixture } from '../fixtures/velero/bucket.js';
import { runCli, show } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { testS3 } from '../support/s3ObjectStore.js';
import { createS3CredentialsSecret, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const DEPLOY = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
type Obj = KubeObject & { data?: Record<string, string>; spec?: Record<string, unknown> };

describe('Velero buckets', () => {
  const ns = uniqueName('stowage-velero');
  const app = uniqueName('vshop');
  const other = uniqueName('vother');
  const evilNs = uniqueName('vevil');
  const bucket = uniqueName('velero');
  const kubeconfig = inject('cluster').kubeconfigPath;
  let client: DynamicClient;
  let server: RunningServer | undefined;
  let before: string[];

  // Items as Velero stored them: with the fields the API server had set.
  const server_ = { uid: 'b1d2c3e4-0000-4000-8000-00000000000a', resourceVersion: '48211', creationTimestamp: '2026-10-30T10:00:00Z' };
  const namespaceItem: Item = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: app, labels: { team: 'shop' }, ...server_ }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } };
  const settings: Item = {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: 'settings', namespace: app, labels: { app: 'shop', tier: 'web' }, annotations: { 'example.com/owner': 'ops' }, ...server_,
      managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', time: '2026-10-30T10:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': {} } }] },
    data: { color: 'blue', size: '3', 'app.properties': 'a=1\nb=2\n' },
  };
  const secret: Item = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: app, ...server_ }, type: 'Opaque', data: { password: Buffer.from('pa55-velero').toString('base64') } };
  const web: Item = {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'web', namespace: app, labels: { app: 'web' }, generation: 3, ...server_ },
    spec: {
      replicas: 2, selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'registry.example.com/shop/web:1.4.2', ports: [{ containerPort: 8080, protocol: 'TCP' }], env: [{ name: 'MODE', value: 'prod' }] }] } },
    },
    status: { replicas: 2, readyReplicas: 2, observedGeneration: 3 },
  };
  const otherCm: Item = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'flags', namespace: other, ...server_ }, data: { beta: 'on' } };
  const evilCm: Item = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'first', namespace: evilNs }, data: { a: '1' } };
  const fixtures: VeleroBackupFixture[] = [
    { name: 'shop-nightly', items: [namespaceItem, settings, secret, web] },
    { name: 'shop-partial', items: [otherCm], phase: 'PartiallyFailed', status: { errors: 2, warnings: 0 } },
    { name: 'shop-failed', items: [otherCm], phase: 'Failed', status: { failureReason: 'plugin panicked' } },
    {
      name: 'evil', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: evilNs } }, evilCm],
      extraEntries: [{ name: `resources/configmaps/namespaces/${evilNs}/../../../../../tmp/evil.json`, body: JSON.stringify(evilCm) }],
    },
  ];
  const legacy: VeleroBackupFixture[] = [{ name: 'legacy-weekly', items: [otherCm] }];

  const getBackup = (name: string): Promise<Backup> => client.get<Backup>(RESOURCES.Backup, ns, name);
  const gone = async (get: () => Promise<unknown>): Promise<true | undefined> => get().then(() => undefined, (e: unknown) => (isNotFound(e) ? true : Promise.reject(e)));
  const location = (name: string): Promise<BackupStorageLocation> => client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, name);
  const listing = async (): Promise<string[]> => {
    const s3 = testS3();
    try {
      return await bucketListing(s3.client, bucket, '');
    } finally {
      s3.close();
    }
  };

  beforeAll(async () => {
    client = testClient(kubeconfig);
    const s3 = testS3();
    try {
      await s3.createBucket(bucket);
      await writeVeleroBucket(s3.client, bucket, 'velero/', fixtures);
      await writeVeleroBucket(s3.client, bucket, 'legacy/', legacy);
    } finally {
      s3.close();
    }
    before = await listing();
    await client.create(CORE.namespaces, undefined, { metadata: { name: ns } });
    await createS3CredentialsSecret(client, ns, 'cloud-credentials', inject('s3'));
    const spec = (prefix: string) => ({ ...s3LocationSpec(inject('s3'), { bucket, prefix, secret: 'cloud-credentials', validationFrequency: '5s' }), backupSyncPeriod: '1s' });
    // Detected: nothing in its spec says Velero.
    const detected = { ...spec('velero'), accessMode: 'ReadOnly' as const };
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: { name: 'from-velero', spec: detected } });
    await client.create(RESOURCES.BackupStorageLocation, ns, newBackupStorageLocation('marked', ns, { ...spec('legacy'), default: false, velero: true }));
  }, 240_000);

  afterAll(async () => {
    await server?.stop();
    for (const n of [app, other, evilNs]) await client.delete(CORE.namespaces, undefined, n).catch(() => undefined);
  });

  it('detects the layout, ignores kopia/ restic/ metadata/, and imports finished Velero backups read-only', async () => {
    const loc = await waitUntil('location from-velero Available', async () => {
      const l = await location('from-velero');
      return l.status?.phase === 'Available' ? l : undefined;
    }, 60_000);
    expect(loc.status?.layout).toBe('Velero');
    expect(loc.status?.layoutReason).toMatch(/^detected: backups\/[a-z-]+\/velero-backup\.json is Velero's/);
    const marked = await waitUntil('location marked Available', async () => {
      const l = await location('marked');
      return l.status?.phase === 'Available' ? l : undefined;
    }, 60_000);
    expect(marked.status).toMatchObject({ layout: 'Velero', layoutReason: 'spec.velero is true' });

    const b = await waitUntil('shop-nightly imported', async () => getBackup('shop-nightly').then((x) => (x.status?.phase === 'Completed' ? x : undefined), () => undefined), 60_000);
    expect(b.metadata.labels).toEqual({ 'velero.io/storage-location': 'default', team: 'shop', [LABEL_STORAGE_LOCATION]: 'from-velero', [LABEL_IMPORTED_FROM]: 'velero' });
    expect(b.metadata.annotations).toMatchObject({ [ANNOTATION_SYNCED_FROM]: 'from-velero', 'velero.io/source-cluster-k8s-version': 'v1.29.2' });
    expect(b.spec).toEqual({ includedNamespaces: [app], ttl: '720h0m0s', storageLocation: 'from-velero' });
    expect(b.status).toEqual({
      phase: 'Completed', formatVersion: '1.1.0', startTimestamp: '2026-11-02T03:00:01Z', completionTimestamp: '2026-11-02T03:00:05Z',
      expiration: '2026-12-02T03:00:00Z', progress: { totalItems: 4, itemsBackedUp: 4 }, warnings: 1,
    });
    const partial = await waitUntil('shop-partial imported', async () => getBackup('shop-partial').then((x) => (x.status?.phase !== undefined ? x : undefined), () => undefined), 60_000);
    expect(partial.status).toMatchObject({ phase: 'PartiallyFailed', errors: 2, warnings: 0 });
    const fromMarked = await waitUntil('legacy-weekly imported', async () => getBackup('legacy-weekly').then((x) => (x.status?.phase !== undefined ? x : undefined), () => undefined), 60_000);
    expect(fromMarked.spec.storageLocation).toBe('marked');
    // A Failed Velero backup is not imported; the sync says why in the server log.
    await server?.waitForOutput(/backup shop-failed: Velero recorded it as Failed; only Completed and PartiallyFailed Velero backups are imported/, 60_000);
    await expect(getBackup('shop-failed')).rejects.toSatisfy(isNotFound);
    // Imported backups are never run: they stay as Velero recorded them.
    expect((await getBackup('shop-nightly')).status).toEqual(b.status);
  });

  it('dry-runs, then restores the exact objects, saying there is no manifest and uploading nothing', async () => {
    await client.create(RESOURCES.Restore, ns, newRestore('preview', ns, { backupName: 'shop-nightly', dryRun: true }));
    const dry = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'preview');
    expect(dry.status?.phase, JSON.stringify(dry.status)).toBe('Completed');
    expect(dry.status?.summary?.created).toBe(4);
    await expect(client.get(CORE.namespaces, undefined, app)).rejects.toSatisfy(isNotFound);

    await client.create(RESOURCES.Restore, ns, newRestore('bring-back', ns, { backupName: 'shop-nightly' }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'bring-back');
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(r.status?.summary).toEqual({ created: 4, updated: 0, skipped: 0, failed: 0 });
    expect(r.status?.warnings).toBeGreaterThanOrEqual(1);
    expect(r.status?.messages?.warnings).toContain(
      'backup shop-nightly was made by Velero and has no integrity manifest: its tarball is read with every archive check, but its items cannot be verified against checksums');
    expect(r.status?.artifactsNotUploaded).toContain('were not uploaded: backup storage location "from-velero" holds Velero\'s backups, which Stowage never writes into');

    const cm = await client.get<Obj>(CORE.configMaps, app, 'settings');
    expect(cm.data).toEqual(settings.data);
    expect(cm.metadata?.labels).toMatchObject(settings.metadata.labels as Record<string, string>);
    expect(cm.metadata?.annotations).toMatchObject({ 'example.com/owner': 'ops' });
    expect(cm.metadata?.uid).not.toBe(server_.uid);
    const s = await client.get<Obj>(CORE.secrets, app, 'db');
    expect(s.data).toEqual(secret.data);
    const d = await client.get<Obj>(DEPLOY, app, 'web');
    const want = web.spec as { replicas: number; selector: unknown; template: { metadata: unknown; spec: { containers: Record<string, unknown>[] } } };
    expect(d.spec?.replicas).toBe(want.replicas);
    expect(d.spec?.selector).toEqual(want.selector);
    const container = (d.spec?.template as { spec: { containers: Record<string, unknown>[] } }).spec.containers[0];
    expect(container).toMatchObject(want.template.spec.containers[0] ?? {});
    const restoredNs = await client.get<Obj>(CORE.namespaces, undefined, app);
    expect(restoredNs.metadata?.labels).toMatchObject({ team: 'shop' });
    expect(server?.output()).toContain(`restore=${ns}/bring-back`);
  });

  it('refuses a hostile Velero tarball with the same checks, creating nothing', async () => {
    await client.create(RESOURCES.Restore, ns, newRestore('evil', ns, { backupName: 'evil' }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'evil');
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toContain(`(path-traversal): entry resources/configmaps/namespaces/${evilNs}/../../../../../tmp/evil.json climbs out of the archive`);
    await expect(client.get(CORE.namespaces, undefined, evilNs)).rejects.toSatisfy(isNotFound);
  });

  it('refuses a backup to a Velero location', async () => {
    for (const loc of ['from-velero', 'marked']) {
      const name = `into-${loc}`;
      await client.create(RESOURCES.Backup, ns, newBackup(name, ns, { storageLocation: loc, includedNamespaces: [app] }));
      const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, name);
      expect(b.status?.phase).toBe('FailedValidation');
      expect(b.status?.validationErrors?.join('\n')).toContain(`backup storage location "${loc}" holds Velero's backups`);
      expect(b.status?.validationErrors?.join('\n')).toContain('never writes into it, so backups cannot be stored there');
    }
  });

  it('serves the Velero log to `backup logs` and `backup describe`, and says why a restore from it has no log to download', { timeout: 300_000 }, async () => {
    const opts = { kubeconfig, namespace: ns, timeoutMs: 90_000 };
    await waitUntil('shop-nightly imported', async () => getBackup('shop-nightly').then((x) => (x.status?.phase === 'Completed' ? x : undefined), () => undefined), 60_000);
    const logs = await runCli(['backup', 'logs', 'shop-nightly'], opts);
    expect(logs.code, show(logs)).toBe(0);
    expect(logs.stdout).toContain('Backup completed');
    const described = await runCli(['backup', 'describe', 'shop-nightly'], opts);
    expect(described.code, show(described)).toBe(0);
    expect(described.stdout).toContain('Completed');
    await waitUntil('bring-back finished', async () => client.get<Restore>(RESOURCES.Restore, ns, 'bring-back').then((r) => r.status?.completionTimestamp, () => undefined), 120_000);
    const restoreLogs = await runCli(['restore', 'logs', 'bring-back'], opts);
    expect(restoreLogs.code, show(restoreLogs)).not.toBe(0);
    expect(restoreLogs.stderr).toContain('its artifacts were not uploaded');
  });

  it('deletes an imported Backup as a resource only, and nothing was ever written to the bucket', async () => {
    // Imported first: a request made before the sync brings it in finds no Backup and ends Processed with that error.
    const imported = await waitUntil('shop-partial imported', async () => getBackup('shop-partial').then((x) => (x.status?.phase !== undefined ? x : undefined), () => undefined), 60_000);
    await client.create(RESOURCES.DeleteBackupRequest, ns, newDeleteBackupRequest('shop-partial', ns));
    // Deleted: gone, or already imported again by the next sync (as documented, while Velero's files
    // are in the bucket), which is a new object with a new uid.
    await waitUntil('shop-partial deleted', async () => (await gone(() => getBackup('shop-partial')))
      || (await getBackup('shop-partial').then((x) => x.metadata.uid !== imported.metadata.uid, () => true)) || undefined, 60_000);
    // The request is marked Processed just after the Backup is deleted, so the test waits for that too.
    const processed = async (): Promise<DeleteBackupRequest | undefined> => (await client.list<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, { namespace: ns })).items
      .find((d) => d.spec.backupName === 'shop-partial' && d.status?.phase === 'Processed');
    const dbr = await waitUntil('the DeleteBackupRequest of shop-partial Processed', processed, 30_000);
    expect(dbr.status?.errors).toBeUndefined();
    await server?.waitForOutput(/backup deleted: backup "shop-partial" was imported from a Velero location: only its Backup resource/, 30_000);
    expect(await listing()).toEqual(before);
  });
});
