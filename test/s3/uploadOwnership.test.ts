// Issue 31 item 4 on MinIO (s3rver cannot list multipart uploads): Stowage aborts only the
// incomplete uploads it started itself, and writes, deletes and aborts nothing in a ReadOnly or
// Velero location. Stowage's own orphans are made by the real S3 store in a child process that is
// SIGKILLed mid-upload (test/fixtures/s3/orphanUpload.ts); another party's uploads are made with a
// plain S3 client, at keys of Stowage's layout too, and one at the very key of Stowage's orphan.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  CreateBucketCommand, CreateMultipartUploadCommand, ListMultipartUploadsCommand, ListObjectsV2Command, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { RESOURCES, newBackup, newBackupStorageLocation, newRestore, type Backup, type BackupStorageLocation, type Restore } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { UPLOAD_MARKER_INFIX } from '../../src/plugin/builtin/s3Upload.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { createS3CredentialsSecret, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const s3 = inject('s3');
const kubeconfig = inject('cluster').kubeconfigPath;

interface Upload { key: string; uploadId: string }

describe('multipart uploads that are not Stowage\'s to abort (MinIO)', () => {
  const ns = uniqueName('s3own');
  const app = uniqueName('s3own-app');
  const bucket = uniqueName('own');
  let client: DynamicClient;
  let direct: S3Client;
  const servers: RunningServer[] = [];

  const uploads = async (prefix: string): Promise<Upload[]> => {
    // The whole bucket's, filtered: MinIO answers a folder Prefix with no uploads.
    const res = await direct.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(res.IsTruncated).not.toBe(true);
    return (res.Uploads ?? []).filter((u) => (u.Key ?? '').startsWith(prefix)).map((u) => ({ key: u.Key ?? '', uploadId: u.UploadId ?? '' }));
  };
  const objects = async (prefix: string): Promise<string[]> => {
    const res = await direct.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    return (res.Contents ?? []).map((o) => `${o.Key ?? ''} ${o.ETag ?? ''}`).sort();
  };
  /** Another party's in-flight upload: created, one part sent, never completed. */
  const foreignUpload = async (key: string): Promise<Upload> => {
    const created = await direct.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const uploadId = created.UploadId ?? '';
    await direct.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: 1, Body: Buffer.from('not stowage\'s') }));
    return { key, uploadId };
  };
  /** Stowage's own uploads left by a killed writer: the real S3 store starts them, then its process is SIGKILLed. */
  const stowageOrphans = async (prefix: string, keys: string[]): Promise<Upload[]> => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/s3/orphanUpload.ts'),
      JSON.stringify({ bucket, prefix, endpoint: s3.endpoint, region: s3.region, keys })], {
      cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey },
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      // Each upload is listed, and its marker written (before any part), once the store has started it.
      return await waitUntil(`the store to start uploads of ${keys.join(', ')}`, async () => {
        if (child.exitCode !== null) throw new Error(`the uploading child exited: ${stderr}`);
        const listed = (await uploads(prefix)).filter((u) => keys.includes(u.key));
        const markers = (await objects(prefix)).filter((o) => o.includes(UPLOAD_MARKER_INFIX));
        return listed.length === keys.length && markers.length >= keys.length ? listed : undefined;
      }, 120_000, 100);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  };
  const location = (name: string): Promise<BackupStorageLocation> => client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, name);
  const validated = (name: string): Promise<BackupStorageLocation> => waitUntil(`location ${name} validated for its current spec`, async () => {
    const l = await location(name);
    return l.status?.phase !== undefined && l.status.observedGeneration === l.metadata.generation ? l : undefined;
  }, 120_000);

  beforeAll(async () => {
    client = testClient(kubeconfig);
    direct = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    await direct.send(new CreateBucketCommand({ Bucket: bucket }));
    await client.create(CORE.namespaces, undefined, { metadata: { name: ns } });
    await client.create(CORE.namespaces, undefined, { metadata: { name: app } });
    await client.create(CORE.configMaps, app, { metadata: { name: 'settings' }, data: { a: '1' } });
    await createS3CredentialsSecret(client, ns, 'cloud-credentials', s3);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) await s.stop();
    await client.delete(CORE.namespaces, undefined, app).catch(() => undefined);
    direct.destroy();
  });

  it('aborts its own orphaned upload in its location and nothing else; touches nothing in a Velero location', async () => {
    const [mine] = await stowageOrphans('own/', ['own/backups/gone/gone.tar.gz']);
    const [veleroOrphan] = await stowageOrphans('velero/', ['velero/backups/v1/v1.tar.gz']);
    const theirs = [
      await foreignUpload('own/backups/gone/gone.tar.gz'),
      await foreignUpload('own/backups/theirs/theirs.tar.gz'),
      await foreignUpload('own/elsewhere/data.bin'),
    ];
    const theirsInVelero = await foreignUpload('velero/backups/v2/v2.tar.gz');
    const veleroBefore = await objects('velero/');

    const spec = (prefix: string) => ({ ...s3LocationSpec(s3, { bucket, prefix, secret: 'cloud-credentials', validationFrequency: '5s' }), backupSyncPeriod: '1s' });
    servers.push(await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: { name: 'own', spec: spec('own') } }));
    await client.create(RESOURCES.BackupStorageLocation, ns, newBackupStorageLocation('theirs', ns, { ...spec('velero'), default: false, velero: true, accessMode: 'ReadOnly' }));
    expect((await validated('own')).status?.phase).toBe('Available');
    expect((await validated('theirs')).status?.phase).toBe('Available');

    // The first write into its own location sweeps it.
    await client.create(RESOURCES.Backup, ns, newBackup('first', ns, { includedNamespaces: [app] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'first');
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    await servers[0]?.waitForOutput(/swept incomplete uploads left by killed writers/, 60_000);

    const left = await uploads('own/');
    expect(left.map((u) => u.uploadId)).not.toContain(mine?.uploadId);
    expect(left.map((u) => u.uploadId).sort()).toEqual(theirs.map((u) => u.uploadId).sort());
    // Its marker went with it; the backup's own keys and nothing else remain.
    expect((await objects('own/')).filter((o) => o.includes(UPLOAD_MARKER_INFIX))).toEqual([]);
    // The Velero location: its uploads (even one Stowage once started) and its objects are untouched.
    expect((await uploads('velero/')).map((u) => u.uploadId).sort()).toEqual([veleroOrphan?.uploadId, theirsInVelero.uploadId].sort());
    expect(await objects('velero/')).toEqual(veleroBefore);
  }, 400_000);

  it('in a ReadOnly location, writes, deletes and aborts nothing across a server start and a restore', async () => {
    // The location turns ReadOnly (a disaster-recovery cluster reading what another one wrote).
    const own = await location('own');
    await client.patch(RESOURCES.BackupStorageLocation, ns, 'own', { metadata: { resourceVersion: own.metadata.resourceVersion }, spec: { accessMode: 'ReadOnly' } }, 'merge');
    await servers.shift()?.stop();
    const [mine] = await stowageOrphans('own/', ['own/backups/late/late.tar.gz']);
    const theirs = await foreignUpload('own/backups/late-theirs/late-theirs.tar.gz');
    const uploadsBefore = (await uploads('own/')).map((u) => u.uploadId).sort();
    expect(uploadsBefore).toContain(mine?.uploadId);
    expect(uploadsBefore).toContain(theirs.uploadId);
    const before = await objects('own/');

    servers.push(await startServer({ kubeconfigPath: kubeconfig, namespace: ns }));
    expect((await validated('own')).status?.phase).toBe('Available');
    await client.create(RESOURCES.Restore, ns, newRestore('preview', ns, { backupName: 'first', dryRun: true }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'preview');
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(r.status?.artifactsNotUploaded).toContain('were not uploaded: backup storage location "own" is ReadOnly, so Stowage writes nothing into it');
    // A backup into it is refused before anything is written.
    await client.create(RESOURCES.Backup, ns, newBackup('second', ns, { includedNamespaces: [app] }));
    const refused = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'second');
    expect(refused.status?.phase).toBe('FailedValidation');
    expect(refused.status?.validationErrors).toContain('backup storage location "own" is ReadOnly: backups cannot be written to it');

    expect((await uploads('own/')).map((u) => u.uploadId).sort()).toEqual(uploadsBefore);
    expect(await objects('own/')).toEqual(before);
  }, 400_000);
});
