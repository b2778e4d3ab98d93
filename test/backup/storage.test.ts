// BackupStore and the archive reader over the real S3 server: artifacts, listing, deletion, location
// validation, and hostile tarballs downloaded from the bucket and refused with their reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBackup } from '../../src/apis/v1/index.js';
import { ArchiveError, readArchive } from '../../src/archive/index.js';
import { createBackupStore, type BackupStore } from '../../src/persistence/backupStore.js';
import { addResult, emptyResults } from '../../src/persistence/results.js';
import { hostileArchives } from '../fixtures/archives/hostile.js';
import { uniqueName } from '../support/kube.js';
import { testS3, type TestS3 } from '../support/s3ObjectStore.js';

async function* bytes(data: Buffer): AsyncGenerator<Uint8Array> {
  yield data;
}

describe('BackupStore on the S3 server', () => {
  let s3: TestS3;
  let bucket = '';
  let store: BackupStore;

  beforeAll(async () => {
    s3 = testS3();
    bucket = await s3.createBucket(uniqueName('store'));
    store = createBackupStore({ objectStore: s3.store, bucket, prefix: 'cluster-a/' });
  });

  afterAll(() => s3?.close());

  it('stores and reads back every artifact, and lists only whole backups', async () => {
    const results = emptyResults();
    addResult(results, 'errors', 'shop', 'could not back up x');
    await store.putTarball('b1', bytes(Buffer.from('not really a tarball')));
    await store.completeBackup('b1', {
      resourceList: { configmaps: ['shop/a'] }, results,
      manifest: { formatVersion: '1.1.0', tarball: { sha256: '0'.repeat(64), bytes: 20 }, entries: {} },
      backup: newBackup('b1', 'stowage', { includedNamespaces: ['shop'] }),
    });
    await store.putTarball('half', bytes(Buffer.from('x')));
    expect(await store.listBackupNames()).toEqual(['b1']);
    expect(await store.getResults('b1')).toEqual(results);
    expect(await store.getResourceList('b1')).toEqual({ configmaps: ['shop/a'] });
    expect((await store.getBackupMetadata('b1'))?.spec).toEqual({ includedNamespaces: ['shop'] });
    expect(await store.getManifest('half')).toBeUndefined();
    expect((await s3.store.listObjects(bucket, 'cluster-a/backups/b1/')).sort()).toEqual([
      'cluster-a/backups/b1/b1-manifest.json.gz',
      'cluster-a/backups/b1/b1-resource-list.json.gz',
      'cluster-a/backups/b1/b1-results.gz',
      'cluster-a/backups/b1/b1.tar.gz',
      'cluster-a/backups/b1/stowage-backup.json',
    ]);
    await store.putRestoreResults('r1', emptyResults());
    await store.deleteBackup('b1', ['r1']);
    expect(await s3.store.listObjects(bucket, 'cluster-a/backups/b1/')).toEqual([]);
    expect(await s3.store.listObjects(bucket, 'cluster-a/restores/')).toEqual([]);
    expect(await store.listBackupNames()).toEqual([]);
  });

  it('validates the location with precise messages', async () => {
    await expect(store.validate()).resolves.toBeUndefined();
    await s3.store.putObject(bucket, 'cluster-a/velero/x', bytes(Buffer.from('x')));
    await expect(store.validate()).rejects.toThrow(
      `bucket "${bucket}" under prefix "cluster-a/" holds unexpected directory "velero/" at its top level; only backups/ and restores/ may be there`);
    await s3.store.deleteObject(bucket, 'cluster-a/velero/x');
    await expect(store.validate()).resolves.toBeUndefined();
    const gone = createBackupStore({ objectStore: s3.store, bucket: uniqueName('missing') });
    await expect(gone.validate()).rejects.toThrow(/^bucket "missing-[0-9a-f]+" is not reachable: .*(NoSuchBucket|does not exist)/);
  });

  it('refuses each hostile tarball downloaded from the bucket, with its reason', async () => {
    for (const h of hostileArchives('shop')) {
      const name = `hostile-${h.reason}-${uniqueName('x')}`;
      await store.putTarball(name, bytes(await h.build()));
      const err = await readArchive(await store.getTarball(name), { limits: h.limits }).then(() => undefined, (e: unknown) => e);
      expect(err, h.name).toBeInstanceOf(ArchiveError);
      expect({ case: h.name, reason: (err as ArchiveError).reason }).toEqual({ case: h.name, reason: h.reason });
      expect((err as ArchiveError).message, h.name).toMatch(h.message);
    }
  });
});
