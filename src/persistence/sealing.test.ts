import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { Backup } from '../apis/v1/index.js';
import type { BackupManifest } from '../archive/index.js';
import { CHUNKED_ALGORITHM, DecryptionError, looksEncrypted, newDataKey } from '../encryption/index.js';
import type { ObjectStore } from '../plugin/api/index.js';
import { createBackupStore } from './backupStore.js';
import { backupKeys, restoreKeys } from './layout.js';
import { emptyResults } from './results.js';
import type { BackupKey } from './sealing.js';

/** Objects in a Map: enough for what the store writes and reads back (the format is tested against a real bucket in test/). */
function mapStore(): { os: ObjectStore; objects: Map<string, Buffer> } {
  const objects = new Map<string, Buffer>();
  const os: ObjectStore = {
    async init() {},
    async putObject(_b, key, body) {
      const parts: Uint8Array[] = [];
      for await (const c of body) parts.push(c);
      objects.set(key, Buffer.concat(parts));
    },
    async getObject(_b, key) {
      const v = objects.get(key);
      if (v === undefined) throw Object.assign(new Error(`${key} not found`), { code: 'NotFound' });
      // In two pieces, cut inside the encryption header: readers must not assume whole chunks.
      return (async function* () {
        yield v.subarray(0, 7);
        yield v.subarray(7);
      })();
    },
    async objectExists(_b, key) {
      return objects.has(key);
    },
    async listCommonPrefixes() {
      return [];
    },
    async listObjects(_b, prefix) {
      return [...objects.keys()].filter((k) => k.startsWith(prefix));
    },
    async deleteObject(_b, key) {
      objects.delete(key);
    },
    async createSignedURL(_b, key) {
      return `https://example.test/${key}`;
    },
  };
  return { os, objects };
}

const SECRET = 'hunter2-very-secret-value';
const backupObj: Backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b1', namespace: 'stowage' }, spec: {}, status: { phase: 'Completed' } };

function keyOf(dataKey = newDataKey()): BackupKey {
  return { dataKey, wrapped: { algorithm: CHUNKED_ALGORITHM, keyManager: 'stowage.dev/secret', keyId: 'k1', wrappedKey: Buffer.from('wrapped-bytes') } };
}

async function text(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

describe('a BackupStore with a data key', () => {
  it('seals every artifact of a backup and its restores, and reads them back', async () => {
    const { os, objects } = mapStore();
    const key = keyOf();
    const store = createBackupStore({ objectStore: os, bucket: 'b' }).withKey(key);
    const dir = mkdtempSync(join(tmpdir(), 'sealing-'));
    const log = join(dir, 'log.gz');
    writeFileSync(log, gzipSync(`log line ${SECRET}\n`));
    const results = emptyResults();
    results.warnings.cluster.push(SECRET);
    const manifest: BackupManifest = { formatVersion: '1.1.0', entries: { [`resources/secrets/namespaces/a/${SECRET}.json`]: 'ab' }, tarball: { sha256: 'cd', bytes: 3 } };

    await store.putTarball('b1', (async function* () {
      yield Buffer.from(SECRET.repeat(5000));
    })());
    await store.putLog('b1', log);
    await store.completeBackup('b1', { resourceList: { secrets: [`a/${SECRET}`] }, results, manifest, backup: { ...backupObj, metadata: { ...backupObj.metadata, annotations: { a: SECRET } } } });
    await store.putRestoreLog('r1', log);
    await store.completeRestore('r1', { results, resourceList: { secrets: [`a/${SECRET}`] } });

    const k = backupKeys('', 'b1');
    for (const [name, bytes] of objects) {
      expect(bytes.includes(SECRET), name).toBe(false);
      if (name !== k.metadata) expect(looksEncrypted(bytes), name).toBe(true);
    }
    expect((await text(await store.getTarball('b1'))).toString()).toBe(SECRET.repeat(5000));
    expect(await store.getResourceList('b1')).toEqual({ secrets: [`a/${SECRET}`] });
    expect((await store.getResults('b1'))?.warnings.cluster).toEqual([SECRET]);
    expect((await store.getManifest('b1'))?.tarball.bytes).toBe(3);
    expect(JSON.parse((await text((await store.getManifestStream('b1'))!)).toString()).tarball.sha256).toBe('cd');
    expect((await store.getBackupMetadata('b1'))?.metadata.annotations?.a).toBe(SECRET);
    expect((await store.getRestoreResults('r1'))?.warnings.cluster).toEqual([SECRET]);
    expect(objects.has(restoreKeys('', 'r1').log)).toBe(true);
  });

  it('writes stowage-backup.json as a plain envelope whose wrapped key reads without the data key', async () => {
    const { os, objects } = mapStore();
    const key = keyOf();
    const plain = createBackupStore({ objectStore: os, bucket: 'b' });
    await plain.withKey(key).putBackupMetadata('b1', backupObj);
    const raw = JSON.parse(objects.get(backupKeys('', 'b1').metadata)!.toString()) as Record<string, string>;
    expect(Object.keys(raw).sort()).toEqual(['algorithm', 'backup', 'keyId', 'keyManager', 'kind', 'name', 'wrappedKey']);
    expect(raw).toMatchObject({ kind: 'EncryptedBackup', name: 'b1', algorithm: CHUNKED_ALGORITHM, keyManager: 'stowage.dev/secret', keyId: 'k1', wrappedKey: Buffer.from('wrapped-bytes').toString('base64') });
    expect(looksEncrypted(Buffer.from(raw.backup!, 'base64'))).toBe(true);

    const envelope = await plain.getBackupEnvelope('b1');
    expect(envelope?.encrypted).toBe(true);
    if (envelope?.encrypted !== true) throw new Error('unreachable');
    expect(envelope.wrapped).toEqual(key.wrapped);
    await expect(plain.getBackupMetadata('b1')).rejects.toThrow('backup "b1" is encrypted (key "k1" of stowage.dev/secret): its data key is needed to read stowage-backup.json');
    expect((await plain.withKey(key).getBackupMetadata('b1'))?.metadata.name).toBe('b1');
    expect(await plain.getBackupEnvelope('nope')).toBeUndefined();

    // An envelope moved to another backup's directory does not pass for that backup's.
    objects.set(backupKeys('', 'b2').metadata, objects.get(backupKeys('', 'b1').metadata)!);
    await expect(plain.getBackupEnvelope('b2')).rejects.toThrow('stowage-backup.json of backup "b2" is the envelope of backup "b1", not of "b2"');
    // A plain Backup still reads with or without a key.
    await plain.putBackupMetadata('b3', { ...backupObj, metadata: { name: 'b3' } });
    expect((await plain.getBackupEnvelope('b3'))?.encrypted).toBe(false);
    expect((await plain.withKey(key).getBackupMetadata('b3'))?.metadata.name).toBe('b3');
  });

  it('names the artifact when it is opened with a wrong key, altered, or read as another artifact', async () => {
    const { os, objects } = mapStore();
    const store = createBackupStore({ objectStore: os, bucket: 'b' }).withKey(keyOf());
    await store.putResourceList('b1', { a: ['x'] });
    await store.putTarball('b1', (async function* () {
      yield Buffer.alloc(200_000, 1);
    })());
    const wrong = store.withKey(keyOf());
    const err = await wrong.getResourceList('b1').then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('the resource list of backup "b1" fails authentication at chunk 0');

    const k = backupKeys('', 'b1');
    const tar = Buffer.from(objects.get(k.tarball)!);
    tar[tar.length - 3] = (tar[tar.length - 3] as number) ^ 1;
    objects.set(k.tarball, tar);
    const read = text(await store.getTarball('b1')).then(() => undefined, (e: unknown) => e);
    const tarErr = await read;
    expect(tarErr).toBeInstanceOf(DecryptionError);
    expect((tarErr as Error).message).toBe('the tarball of backup "b1" fails authentication at chunk 3 (at byte 196684): it was altered or truncated, or the chunk comes from another backup');

    // The results object put where the resource list goes: its context is another artifact's.
    await store.putResults('b1', emptyResults());
    objects.set(k.resourceList, objects.get(k.results)!);
    await expect(store.getResourceList('b1')).rejects.toThrow('the resource list of backup "b1" fails authentication at chunk 0');
    // Without the key, a sealed artifact is not gunzipped into nonsense silently.
    await expect(createBackupStore({ objectStore: os, bucket: 'b' }).getResults('b1')).rejects.toThrow(k.results);
  });

  it('leaves an unencrypted store writing exactly what it wrote before', async () => {
    const { os, objects } = mapStore();
    const store = createBackupStore({ objectStore: os, bucket: 'b' });
    expect(store.key).toBe('unencrypted');
    await store.putResourceList('b1', { a: ['x'] });
    await store.putBackupMetadata('b1', backupObj);
    const k = backupKeys('', 'b1');
    expect(JSON.parse(gunzipSync(objects.get(k.resourceList)!).toString())).toEqual({ a: ['x'] });
    expect(objects.get(k.metadata)!.toString()).toBe(`${JSON.stringify(backupObj, null, 2)}\n`);
  });
});
