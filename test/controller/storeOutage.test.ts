// An S3 outage in the middle of a large upload is ridden out: a real backup of ~70 MiB of
// incompressible ConfigMaps, written by the real server through the built-in S3 store, loses its
// S3 server after the first parts are stored, until the plugin says it is retrying an upload that
// failed on the outage, and still completes; the tarball read back matches the manifest written
// at backup time. The server runs in process (nothing here kills it); the plugin is its process.
import crypto from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { RESOURCES, newBackup, type Backup, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import { parseManifest } from '../../src/archive/manifest.js';
import { compareWithManifest, hashTarball } from '../../src/cli/commands/backup.js';
import { startS3Server, storedParts } from '../../scripts/cluster/s3.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer } from '../support/inProcessServer.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, testClient, waitFinished } from '../support/server.js';

/** Each item is in the tarball twice (its group's and the preferred version's copy): ~70 MiB. */
const CONFIGMAPS = 52;
/** Random bytes per ConfigMap; base64 makes ~933 KiB of text that gzip cannot shrink below ~700 KiB. */
const RAW_BYTES = 700 * 1024;
const PART = 8 * 1024 * 1024;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('object-store outage during an upload', () => {
  it('rides out an S3 outage in the middle of a ~70 MiB backup upload, and the backup verifies', async () => {
    const c = testClient(inject('cluster').kubeconfigPath);
    cleanups.push(async () => c.close());
    const ns = uniqueName('s3outage');
    const s3 = await startS3Server({ buckets: ['vault'] });
    cleanups.push(() => s3.close());
    await ensureNamespace(c, ns);
    cleanups.push(() => c.delete({ group: '', version: 'v1', resource: 'namespaces', namespaced: false }, undefined, ns));
    await createS3CredentialsSecret(c, ns, 'cloud-credentials', s3);

    // Incompressible data, so the tarball is as large as the ConfigMaps.
    const names = Array.from({ length: CONFIGMAPS }, (_, i) => `blob-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 4) {
      await Promise.all(names.slice(i, i + 4).map((name) =>
        c.create({ group: '', version: 'v1', resource: 'configmaps', namespaced: true }, ns, { metadata: { name }, data: { blob: crypto.randomBytes(RAW_BYTES).toString('base64') } }),
      ));
    }

    // Small pages at a low rate spread the ConfigMaps (and so the upload's parts) over several seconds.
    const server = await startInProcessServer({
      kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns,
      args: ['--client-page-size', '4', '--client-qps', '3', '--client-burst', '1'],
      location: { name: 'default', spec: s3LocationSpec(s3, { bucket: 'vault', prefix: 'cluster-a', secret: 'cloud-credentials', validationFrequency: '30s' }) },
    });
    cleanups.push(() => server.stop());
    await waitUntil('location Available', async () => {
      const l = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? l : undefined;
    }, 60_000, 100);

    const t0 = Date.now();
    await c.create(RESOURCES.Backup, ns, newBackup('big', ns, { includedNamespaces: [ns], includedResources: ['configmaps'] }));
    // Stop S3 once the first parts are stored: the upload is under way, with most of it still to send.
    await waitUntil('three parts of the tarball stored', async () => (storedParts(s3.directory, 'vault') >= 3 ? true : undefined), 120_000, 20);
    const partsBefore = storedParts(s3.directory, 'vault');
    await s3.stop();
    const down = Date.now();
    // The outage is over once an upload has failed on it and is being retried (the plugin's backoff
    // is on its own wall clock; it has nothing more to show until S3 answers again).
    // (A backup that ended first fails here, not at the test's timeout.)
    const first = await server.waitForOutput(/object store unreachable; retrying [^\n]*call="UploadPart \d+ of vault\/cluster-a\/backups\/big\/big\.tar\.gz"|backup \S+\/big (Completed|Failed|PartiallyFailed)[^\n]*/);
    expect(first).toContain('object store unreachable; retrying');
    await s3.start();
    // From the moment connections were refused to the moment the server listened again.
    const outageMs = Date.now() - down;

    const b = await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'big', 240_000);
    const tookMs = Date.now() - t0;
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
    expect(b.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(CONFIGMAPS);
    // The plugin said it was retrying, and that the store came back.
    expect(server.output()).toContain('object store unreachable; retrying');
    expect(server.output()).toMatch(/object store reachable again [^\n]*call="UploadPart \d+ of vault\/cluster-a\/backups\/big\/big\.tar\.gz" outage=\S+ attempts=([2-9]|\d\d+)/);

    const s3c = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    cleanups.push(async () => s3c.destroy());
    const key = 'cluster-a/backups/big/big.tar.gz';
    const size = (await s3c.send(new HeadObjectCommand({ Bucket: 'vault', Key: key }))).ContentLength ?? 0;
    expect(size).toBeGreaterThan(65 * 1024 * 1024);
    // The outage hit the middle of the upload: parts were stored before it, and more after it.
    expect(partsBefore * PART).toBeLessThan(size * 0.6);
    const manifestObj = await s3c.send(new GetObjectCommand({ Bucket: 'vault', Key: 'cluster-a/backups/big/big-manifest.json.gz' }));
    const manifest = parseManifest(JSON.parse(gunzipSync(Buffer.from(await manifestObj.Body!.transformToByteArray())).toString('utf8')));
    const tarball = await s3c.send(new GetObjectCommand({ Bucket: 'vault', Key: key }));
    const report = compareWithManifest('big', await hashTarball(tarball.Body as AsyncIterable<Uint8Array>), manifest);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.matched).toBeGreaterThanOrEqual(2 * CONFIGMAPS);
    // No multipart upload is left behind.
    expect(storedParts(s3.directory, 'vault')).toBe(0);
    process.stderr.write(
      `[storeOutage] tarball ${(size / 1024 / 1024).toFixed(1)} MiB, S3 down for ${(outageMs / 1000).toFixed(1)} s after ${partsBefore} parts, ` +
        `backup completed in ${(tookMs / 1000).toFixed(1)} s, ${report.matched} files match the manifest\n`,
    );
  }, 300_000);
});
