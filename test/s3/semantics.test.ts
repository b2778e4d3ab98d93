// S3 behaviour that s3rver does not implement, on MinIO, through the real built-in S3 store
// (stowage.dev/aws's AwsObjectStore) and the real BackupStore: multipart listing, the checksums the
// SDK sends on single and multipart uploads (and the server verifies and keeps), a versioned bucket
// and a bucket with Object Lock default retention.
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ChecksumMode, CreateBucketCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListObjectVersionsCommand,
  PutBucketVersioningCommand, PutObjectLockConfigurationCommand, S3Client,
} from '@aws-sdk/client-s3';
import { newBackup } from '../../src/apis/v1/index.js';
import { createBackupStore } from '../../src/persistence/backupStore.js';
import { AwsObjectStore } from '../../src/plugin/builtin/aws.js';
import { setLogSink } from '../../src/plugin/sdk/logger.js';
import { UPLOAD_MARKER_INFIX } from '../../src/plugin/builtin/s3Upload.js';
import { uniqueName, waitUntil } from '../support/kube.js';

const s3 = inject('s3');
const MiB = 1024 * 1024;
const PART = 8 * MiB;

function bytes(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4096) b[i] = (i / 4096 + seed) % 251;
  return b;
}

async function* body(...chunks: Buffer[]): AsyncGenerator<Uint8Array> {
  for (const c of chunks) yield c;
}

async function read(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of stream) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

const crc32 = (b: Buffer): string => {
  const v = Buffer.alloc(4);
  v.writeUInt32BE(zlib.crc32(b));
  return v.toString('base64');
};

describe('S3 semantics on MinIO through the built-in S3 store', () => {
  let direct: S3Client;
  const stores: AwsObjectStore[] = [];

  const bucketWith = async (name: string, o: { versioned?: boolean; lockDays?: number } = {}): Promise<string> => {
    const bucket = uniqueName(name);
    await direct.send(new CreateBucketCommand({ Bucket: bucket, ...(o.lockDays !== undefined ? { ObjectLockEnabledForBucket: true } : {}) }));
    if (o.versioned === true) await direct.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    if (o.lockDays !== undefined) {
      await direct.send(new PutObjectLockConfigurationCommand({
        Bucket: bucket, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled', Rule: { DefaultRetention: { Mode: 'GOVERNANCE', Days: o.lockDays } } },
      }));
    }
    return bucket;
  };
  const storeFor = async (bucket: string, prefix: string): Promise<AwsObjectStore> => {
    const store = new AwsObjectStore();
    // Credentials from the SDK's default chain, as a plugin started by hand would take them.
    process.env.AWS_ACCESS_KEY_ID = s3.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = s3.secretAccessKey;
    await store.init({ bucket, prefix, region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true' });
    stores.push(store);
    return store;
  };
  /** Every version of the backup's keys (upload markers aside: markerVersions). */
  const versions = async (bucket: string, prefix: string): Promise<{ objects: string[]; deleteMarkers: string[]; latestMarkers: string[] }> => {
    const res = await direct.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: prefix }));
    expect(res.IsTruncated).not.toBe(true);
    const own = (key: string | undefined): boolean => !(key ?? '').includes(UPLOAD_MARKER_INFIX);
    res.Versions = res.Versions?.filter((v) => own(v.Key));
    res.DeleteMarkers = res.DeleteMarkers?.filter((m) => own(m.Key));
    return {
      objects: (res.Versions ?? []).map((v) => v.Key ?? '').sort(),
      deleteMarkers: (res.DeleteMarkers ?? []).map((m) => m.Key ?? '').sort(),
      latestMarkers: (res.DeleteMarkers ?? []).filter((m) => m.IsLatest === true).map((m) => m.Key ?? '').sort(),
    };
  };

  /** Versions and delete markers of upload markers (s3Upload.ts): what each finished multipart upload leaves. */
  const markerVersions = async (bucket: string, prefix: string): Promise<{ versions: number; current: number }> => {
    const res = await direct.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: prefix }));
    const marked = (k: string | undefined): boolean => (k ?? '').includes(UPLOAD_MARKER_INFIX);
    const versions = (res.Versions ?? []).filter((v) => marked(v.Key));
    return { versions: versions.length, current: versions.filter((v) => v.IsLatest === true).length };
  };

  /** The store's log lines (the plugin's own sink: in a server they land in the deleting run's log). */
  const lines: { level: string; msg: string; key?: string }[] = [];
  const warnedDeletes = (): string[] => lines.filter((l) => l.level === 'warn' && l.msg.includes('wrote a delete marker')).map((l) => l.key ?? '').sort();

  beforeAll(() => {
    setLogSink((line) => lines.push(JSON.parse(line) as { level: string; msg: string; key?: string }));
    direct = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
  });
  afterAll(() => {
    setLogSink((line) => process.stderr.write(line));
    direct.destroy();
  });

  it('lists an upload in flight, and stores CRC32 checksums the server verified for single and multipart uploads', async () => {
    const bucket = await bucketWith('sums');
    const store = await storeFor(bucket, 'p');
    const small = bytes(100_000, 1);
    await store.putObject(bucket, 'p/backups/s/s-results.gz', body(small));
    const head = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'p/backups/s/s-results.gz', ChecksumMode: ChecksumMode.ENABLED }));
    expect(head.ChecksumCRC32).toBe(crc32(small));

    // Three parts; the upload waits before its last part so the test sees it in flight.
    const parts = [bytes(PART, 2), bytes(PART, 3), bytes(3 * MiB, 4)];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    async function* gated(): AsyncGenerator<Uint8Array> {
      yield parts[0] as Buffer;
      yield parts[1] as Buffer;
      await gate;
      yield parts[2] as Buffer;
    }
    const done = store.putObject(bucket, 'p/backups/s/s.tar.gz', gated());
    // MinIO lists uploads by exact key or for the whole bucket: a folder prefix answers none.
    expect((await direct.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'p/' }))).Uploads ?? []).toEqual([]);
    const listed = await waitUntil('the upload listed in flight', async () => {
      const res = await direct.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
      const l = (res.Uploads ?? []).map((u) => u.Key ?? '');
      return l.length > 0 ? l : undefined;
    }, 60_000, 50);
    expect(listed).toEqual(['p/backups/s/s.tar.gz']);
    release();
    await done;
    expect((await direct.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).toEqual([]);
    const big = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: 'p/backups/s/s.tar.gz', ChecksumMode: ChecksumMode.ENABLED }));
    // A multipart object's checksum is the CRC32 of its parts' CRC32s, with the part count.
    const composite = zlib.crc32(Buffer.concat(parts.map((p) => Buffer.from(crc32(p), 'base64'))));
    const want = Buffer.alloc(4);
    want.writeUInt32BE(composite);
    expect(big.ChecksumCRC32).toBe(`${want.toString('base64')}-3`);
    expect(Buffer.compare(await read(await store.getObject(bucket, 'p/backups/s/s.tar.gz')), Buffer.concat(parts))).toBe(0);
    // An unversioned bucket removes what is deleted: no warning.
    lines.length = 0;
    await store.deleteObject(bucket, 'p/backups/s/s.tar.gz');
    expect(warnedDeletes()).toEqual([]);
  });

  it('in a versioned bucket, deleting a backup leaves delete markers over its versions and warns that the data stays; a new backup of that name reads as the current version', async () => {
    const bucket = await bucketWith('versioned', { versioned: true });
    const backups = createBackupStore({ objectStore: await storeFor(bucket, 'v'), bucket, prefix: 'v' });
    const old = bytes(2 * PART + MiB, 5);
    await backups.putTarball('nightly', body(old));
    await backups.putBackupMetadata('nightly', newBackup('nightly', 'stowage', { ttl: '1h' }));
    expect(await backups.listBackupNames()).toEqual(['nightly']);

    lines.length = 0;
    await backups.deleteBackup('nightly', []);
    expect(await backups.listBackupNames()).toEqual([]);
    const after = await versions(bucket, 'v/');
    const keys = [backups.keys('nightly').metadata, backups.keys('nightly').tarball].sort();
    // Nothing current is left: each key's latest version is a delete marker, and its data a noncurrent version.
    expect(after.latestMarkers).toEqual(keys);
    expect(after.deleteMarkers).toEqual(keys);
    expect(after.objects).toEqual(keys);
    // The deletion says, key by key, that the data stays.
    expect(warnedDeletes()).toEqual(keys);
    // The upload's marker was removed with its own version: nothing of it stays in the bucket.
    expect(await markerVersions(bucket, 'v/')).toEqual({ versions: 0, current: 0 });

    const fresh = bytes(PART + 5, 6);
    await backups.putTarball('nightly', body(fresh));
    await backups.putBackupMetadata('nightly', newBackup('nightly', 'stowage', { ttl: '2h' }));
    expect((await backups.getBackupMetadata('nightly'))?.spec.ttl).toBe('2h');
    expect(Buffer.compare(await read(await backups.getTarball('nightly')), fresh)).toBe(0);
  });

  it('with Object Lock default retention, backups complete; deleting one hides it behind delete markers, warns, and the retained versions stay', async () => {
    const bucket = await bucketWith('locked', { lockDays: 1 });
    const backups = createBackupStore({ objectStore: await storeFor(bucket, 'l'), bucket, prefix: 'l' });
    // Object Lock needs a checksum (or Content-MD5) on every write: the SDK's CRC32 satisfies it, for parts too.
    const data = bytes(2 * PART + 7, 7);
    await backups.putTarball('locked', body(data));
    await backups.putBackupMetadata('locked', newBackup('locked', 'stowage'));
    expect(await backups.listBackupNames()).toEqual(['locked']);
    const head = await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: backups.keys('locked').tarball }));
    expect(head.ObjectLockMode).toBe('GOVERNANCE');
    expect(head.ObjectLockRetainUntilDate?.getTime()).toBeGreaterThan(Date.now());

    lines.length = 0;
    await backups.deleteBackup('locked', []);
    expect(await backups.listBackupNames()).toEqual([]);
    const after = await versions(bucket, 'l/');
    const keys = [backups.keys('locked').metadata, backups.keys('locked').tarball].sort();
    expect(after.latestMarkers).toEqual(keys);
    expect(after.objects).toEqual(keys);
    expect(warnedDeletes()).toEqual(keys);
    // Retention keeps the upload marker's zero-byte version too, hidden behind a delete marker.
    expect(await markerVersions(bucket, 'l/')).toEqual({ versions: 1, current: 0 });
  });
});
