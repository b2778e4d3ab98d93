// A Backup and a Restore named with 253 characters, the longest name Kubernetes accepts, complete
// end to end on both built-in stores: nothing local (run log, spool, spill, credentials), no label
// and no Event name may derive from the full name. Full file names built from such a name
// (`<name>-resource-list.json.gz`, `restore-<name>-logs.gz`) pass 255 bytes, the most a key segment
// may have on MinIO and on a file system, so the layout names them by the short form (layout.ts).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME, RESOURCES, labelValue, newBackup, newRestore, type Backup, type BackupStorageLocationSpec, type Restore } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient } from '../../src/kube/index.js';
import type { ObjectStore } from '../../src/plugin/api/index.js';
import fs from 'node:fs';
import { AwsObjectStore } from '../../src/plugin/builtin/aws.js';
import { FilesystemObjectStore } from '../../src/plugin/builtin/filesystem.js';
import { runCli, show } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { testS3 } from '../support/s3ObjectStore.js';
import { createS3CredentialsSecret, ensureAppNamespace, ensureNamespace, filesystemLocation, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true };

/** A location on one built-in store, and that store opened from the test to read what the server wrote. */
interface StoreUnderTest {
  spec: BackupStorageLocationSpec;
  bucket: string;
  /** Where the store keeps things on this machine, named in no warning or error ('' for S3). */
  root: string;
  reader: () => Promise<ObjectStore>;
  cleanup: () => void;
}

const filesystem = (): StoreUnderTest => {
  const loc = filesystemLocation();
  return {
    spec: loc.spec, bucket: loc.spec.objectStorage.bucket, root: loc.root,
    reader: async () => {
      const store = new FilesystemObjectStore();
      await store.init({ root: loc.root });
      return store;
    },
    cleanup: () => fs.rmSync(loc.root, { recursive: true, force: true }),
  };
};

const minio = (bucket: string): StoreUnderTest => ({
  spec: s3LocationSpec(inject('s3'), { bucket, prefix: '', secret: 'cloud-credentials' }), bucket, root: '',
  reader: async () => testS3().store,
  cleanup: () => undefined,
});

describe.each([
  ['the filesystem store', 'fs'],
  ['the S3 store (MinIO)', 's3'],
] as const)('runs named with 253 characters on %s', (_title, kind) => {
  const ns = uniqueName('stowage-long');
  const app = uniqueName('long-app');
  const target = uniqueName('long-to');
  const backupName = `${'backup-of-'.repeat(25)}xyz`;
  const restoreName = `${'restore-r-'.repeat(25)}xyz`;
  const bucket = uniqueName('long');
  const store = kind === 'fs' ? filesystem() : minio(bucket);
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureAppNamespace(client, app, 5);
    if (kind === 's3') {
      const s3 = testS3();
      await s3.createBucket(bucket);
      s3.close();
      await ensureNamespace(client, ns);
      await createS3CredentialsSecret(client, ns, 'cloud-credentials', inject('s3'));
    }
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: { name: 'default', spec: store.spec } });
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    store.cleanup();
  });

  it('backs up and restores, with labels and events that fit, and stores every artifact', async () => {
    expect(backupName).toHaveLength(253);
    expect(restoreName).toHaveLength(253);
    await client.create(RESOURCES.Backup, ns, newBackup(backupName, ns, { includedNamespaces: [app] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, backupName, 90_000);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');

    await client.create(RESOURCES.Restore, ns, newRestore(restoreName, ns, { backupName, includedNamespaces: [app], namespaceMapping: { [app]: target } }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, restoreName, 90_000);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(r.status?.summary?.created).toBeGreaterThanOrEqual(5);

    const cm = await client.get<{ metadata: { labels?: Record<string, string> } }>(CONFIGMAPS, target, 'cm-3');
    expect(cm.metadata.labels?.[LABEL_BACKUP_NAME]).toBe(labelValue(backupName));
    expect(cm.metadata.labels?.[LABEL_RESTORE_NAME]).toBe(labelValue(restoreName));
    for (const name of [backupName, restoreName]) {
      await waitUntil(`the Completed event of ${name.slice(0, 20)}…`, async () => {
        const events = await client.list<{ involvedObject: { name?: string }; reason?: string }>(EVENTS, { namespace: ns });
        return events.items.find((e) => e.involvedObject.name === name && e.reason === 'Completed');
      }, 20_000);
    }
    expect(server.output()).not.toMatch(/ENAMETOOLONG|KeyTooLong|XMinioInvalidObjectName|refuses .* for good|event .* failed/i);
    if (store.root !== '') {
      // The store's directory is named only where the operator configured it (its ready line), in no warning or error.
      expect(server.output().split('\n').filter((l) => l.includes(store.root) && !l.includes('filesystem object store ready'))).toEqual([]);
    }
    // Every artifact is stored, the logs included: in the run's own folder, under the short form.
    const reader = await store.reader();
    const keys = await waitUntil('the restore log in storage', async () => {
      const all = await reader.listObjects(store.bucket, '');
      return all.includes(`restores/${restoreName}/restore-logs.gz`) ? all : undefined;
    }, 20_000);
    expect(keys.filter((k) => k.startsWith(`backups/${backupName}/`)).sort()).toEqual(
      ['backup-logs.gz', 'backup-manifest.json.gz', 'backup-resource-list.json.gz', 'backup-results.gz', 'backup.tar.gz', 'stowage-backup.json'].map((f) => `backups/${backupName}/${f}`),
    );
    expect(keys.filter((k) => k.startsWith(`restores/${restoreName}/`)).sort()).toEqual(
      ['restore-logs.gz', 'restore-resource-list.json.gz', 'restore-results.gz'].map((f) => `restores/${restoreName}/${f}`),
    );
    // As a user reads them: the stored logs, by the runs' names.
    const kubeconfig = inject('cluster').kubeconfigPath;
    const backupLog = await runCli(['backup', 'logs', backupName], { kubeconfig, namespace: ns, timeoutMs: 60_000 });
    expect(backupLog.code, show(backupLog)).toBe(0);
    expect(backupLog.stdout).toContain(`starting backup ${ns}/${backupName}`);
    const restoreLog = await runCli(['restore', 'logs', restoreName], { kubeconfig, namespace: ns, timeoutMs: 60_000 });
    expect(restoreLog.code, show(restoreLog)).toBe(0);
    expect(restoreLog.stdout).toContain(`restoring backup ${backupName}`);
  });
});

describe('a key the S3 store (MinIO) can never take', () => {
  it('is refused for good (code Refused), not treated as an outage to ride out', async () => {
    const s3 = testS3();
    const bucket = await s3.createBucket(uniqueName('refuse'));
    s3.close();
    const cfg = inject('s3');
    process.env.AWS_ACCESS_KEY_ID = cfg.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = cfg.secretAccessKey;
    const store = new AwsObjectStore();
    await store.init({ region: cfg.region, s3Url: cfg.endpoint, s3ForcePathStyle: 'true' });
    const body = (): AsyncIterable<Uint8Array> => (async function* () { yield Buffer.from('never stored'); })();
    // A part between slashes over 255 bytes, and a whole key over 1024: the two limits the layout keeps to.
    const longPart = `backups/${'x'.repeat(253)}/${'x'.repeat(253)}-resource-list.json.gz`;
    const longKey = `${['p', 'q', 'r', 's', 't'].map((c) => c.repeat(210)).join('/')}/backups/b1/b1.tar.gz`;
    for (const key of [longPart, longKey]) {
      await expect(store.putObject(bucket, key, body())).rejects.toMatchObject({ code: 'Refused', message: expect.stringContaining('the object store refuses PutObject') });
    }
  });
});

describe('a run whose files its location cannot take (MinIO, a 752-byte prefix)', () => {
  const ns = uniqueName('stowage-long');
  const app = uniqueName('long-app');
  const target = uniqueName('long-to');
  const bucket = uniqueName('longpre');
  const prefix = ['p', 'q', 'r'].map((c) => c.repeat(250)).join('/');
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureNamespace(client, app);
    await client.create(CONFIGMAPS, app, { metadata: { name: 'cm' }, data: { a: 'b' } });
    const s3 = testS3();
    await s3.createBucket(bucket);
    s3.close();
    await ensureNamespace(client, ns);
    await createS3CredentialsSecret(client, ns, 'cloud-credentials', inject('s3'));
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: { name: 'default', spec: s3LocationSpec(inject('s3'), { bucket, prefix, secret: 'cloud-credentials' }) } });
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
  });

  it('is refused at validation, saying why, before it lists or creates anything', async () => {
    const longName = `${'restore-r-'.repeat(25)}xyz`;
    // A short-named backup fits under that prefix; a 253-character one does not.
    await client.create(RESOURCES.Backup, ns, newBackup('b1', ns, { includedNamespaces: [app] }));
    const ok = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'b1', 90_000);
    expect(ok.status?.phase, JSON.stringify(ok.status)).toBe('Completed');
    const longBackup = `${'backup-of-'.repeat(25)}xyz`;
    await client.create(RESOURCES.Backup, ns, newBackup(longBackup, ns, { includedNamespaces: [app] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, longBackup, 90_000);
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.validationErrors).toEqual([expect.stringMatching(
      /^backup storage location "default" cannot hold this backup: its files cannot be stored: a key would be 1043 bytes long .*more than the 1024 bytes an object key may have; use a shorter backup name or a location with a shorter prefix$/,
    )]);
    expect(b.status?.progress).toBeUndefined();

    await client.create(RESOURCES.Restore, ns, newRestore(longName, ns, { backupName: 'b1', includedNamespaces: [app], namespaceMapping: { [app]: target } }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, longName, 90_000);
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([expect.stringMatching(
      /^backup storage location "default" cannot hold this restore's log and results: its files cannot be stored: a key would be 10\d\d bytes long .*use a shorter restore name or a location with a shorter prefix$/,
    )]);
    // Nothing was written to the cluster: the target namespace was never made.
    await expect(client.get({ group: '', version: 'v1', resource: 'namespaces', namespaced: false }, undefined, target)).rejects.toSatisfy(isNotFound);
    // The server log says the same.
    await waitUntil('the refusals in the server log', async () => (server.output().includes(`restore ${ns}/${longName} failed validation: backup storage location "default" cannot hold`) ? true : undefined), 20_000);
    expect(server.output()).toContain(`backup ${ns}/${longBackup} failed validation: backup storage location "default" cannot hold`);
  });
});
