import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { Backup } from '../apis/v1/index.js';
import { isReplayable, type ObjectStore } from '../plugin/api/index.js';
import type { SignatureFile } from '../signing/index.js';
import { ArtifactWriteError, createBackupStore, LocationValidationError, MAX_METADATA_BYTES } from './backupStore.js';
import { backupKeys, downloadKey, MAX_KEY_BYTES, MAX_SEGMENT_BYTES, normalizePrefix, restoreKeys, unstorableKeys } from './layout.js';
import { addResult, countResults, emptyResults, resourceListOf } from './results.js';
import { createVeleroStore, detectLayout, VeleroWriteRefusedError } from './veleroStore.js';

/** A tiny in-memory ObjectStore (a fake is fine here: this is pure key/ordering logic). */
function memoryStore(opts: { relativePrefixes?: boolean; buckets?: string[] } = {}) {
  const objects = new Map<string, Buffer>();
  const log: string[] = [];
  const buckets = new Set(opts.buckets ?? ['b']);
  const need = (bucket: string): void => {
    if (!buckets.has(bucket)) throw Object.assign(new Error(`NoSuchBucket: the bucket ${bucket} does not exist`), { code: 'NoSuchBucket' });
  };
  const store: ObjectStore = {
    async init() {},
    async putObject(bucket, key, body) {
      need(bucket);
      const chunks: Uint8Array[] = [];
      for await (const c of body) chunks.push(c);
      objects.set(`${bucket}/${key}`, Buffer.concat(chunks));
      log.push(`put ${key}`);
    },
    async getObject(bucket, key) {
      need(bucket);
      const v = objects.get(`${bucket}/${key}`);
      if (!v) throw Object.assign(new Error(`${key} not found`), { code: 'NotFound' });
      return (async function* () {
        yield v;
      })();
    },
    async objectExists(bucket, key) {
      need(bucket);
      return objects.has(`${bucket}/${key}`);
    },
    async listCommonPrefixes(bucket, prefix, delimiter) {
      need(bucket);
      const out = new Set<string>();
      for (const k of objects.keys()) {
        const key = k.slice(bucket.length + 1);
        if (!k.startsWith(`${bucket}/`) || !key.startsWith(prefix)) continue;
        const rest = key.slice(prefix.length);
        const i = rest.indexOf(delimiter);
        if (i >= 0) out.add(opts.relativePrefixes ? rest.slice(0, i + 1) : prefix + rest.slice(0, i + 1));
      }
      return [...out].sort();
    },
    async listObjects(bucket, prefix) {
      need(bucket);
      return [...objects.keys()].filter((k) => k.startsWith(`${bucket}/${prefix}`)).map((k) => k.slice(bucket.length + 1));
    },
    async deleteObject(bucket, key) {
      objects.delete(`${bucket}/${key}`);
      log.push(`delete ${key}`);
    },
    async createSignedURL(bucket, key, ttl) {
      return `https://example/${bucket}/${key}?ttl=${ttl}`;
    },
  };
  const keys = (bucket = 'b'): string[] => [...objects.keys()].filter((k) => k.startsWith(`${bucket}/`)).map((k) => k.slice(bucket.length + 1)).sort();
  return { store, objects, log, keys };
}

const backupObj = (name: string): Backup => ({
  apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name, namespace: 'stowage' }, spec: {}, status: { phase: 'Completed' },
});
const bytes = (s: string) => (async function* () {
  yield Buffer.from(s);
})();

describe('object storage layout', () => {
  it('names every key from DESIGN.md under the prefix', () => {
    expect(backupKeys('', 'b1')).toEqual({
      dir: 'backups/b1/',
      tarball: 'backups/b1/b1.tar.gz',
      log: 'backups/b1/b1-logs.gz',
      resourceList: 'backups/b1/b1-resource-list.json.gz',
      results: 'backups/b1/b1-results.gz',
      manifest: 'backups/b1/b1-manifest.json.gz',
      signature: 'backups/b1/b1-signature.json',
      metadata: 'backups/b1/stowage-backup.json',
    });
    expect(restoreKeys('team/a', 'r1')).toEqual({
      dir: 'team/a/restores/r1/',
      log: 'team/a/restores/r1/restore-r1-logs.gz',
      results: 'team/a/restores/r1/restore-r1-results.gz',
      resourceList: 'team/a/restores/r1/restore-r1-resource-list.json.gz',
    });
    expect(downloadKey('/p/', 'BackupContents', 'x')).toBe('p/backups/x/x.tar.gz');
    expect(downloadKey('p', 'RestoreLog', 'r')).toBe('p/restores/r/restore-r-logs.gz');
    expect(downloadKey('', 'BackupManifest', 'x')).toBe('backups/x/x-manifest.json.gz');
  });

  it('names the files of a run whose name is too long for them by the short form, inside the folder named by it', () => {
    const longest = 'b'.repeat(253);
    const k = backupKeys('p', longest);
    expect(k).toEqual({
      dir: `p/backups/${longest}/`,
      tarball: `p/backups/${longest}/backup.tar.gz`,
      log: `p/backups/${longest}/backup-logs.gz`,
      resourceList: `p/backups/${longest}/backup-resource-list.json.gz`,
      results: `p/backups/${longest}/backup-results.gz`,
      manifest: `p/backups/${longest}/backup-manifest.json.gz`,
      signature: `p/backups/${longest}/backup-signature.json`,
      metadata: `p/backups/${longest}/stowage-backup.json`,
    });
    expect(restoreKeys('', longest).log).toBe(`restores/${longest}/restore-logs.gz`);
    expect(downloadKey('', 'RestoreResourceList', longest)).toBe(`restores/${longest}/restore-resource-list.json.gz`);
    // The switch is where the longest full file name stops fitting in a segment; every segment then fits.
    const fits = 'f'.repeat(MAX_SEGMENT_BYTES - '-resource-list.json.gz'.length);
    expect(backupKeys('', fits).resourceList).toBe(`backups/${fits}/${fits}-resource-list.json.gz`);
    expect(backupKeys('', `${fits}f`).resourceList).toBe(`backups/${fits}f/backup-resource-list.json.gz`);
    const rFits = 'r'.repeat(MAX_SEGMENT_BYTES - 'restore--resource-list.json.gz'.length);
    expect(restoreKeys('', rFits).log).toBe(`restores/${rFits}/restore-${rFits}-logs.gz`);
    expect(restoreKeys('', `${rFits}r`).log).toBe(`restores/${rFits}r/restore-logs.gz`);
    // Bytes, not characters: a multi-byte name switches sooner.
    expect(backupKeys('', 'é'.repeat(120)).tarball).toBe(`backups/${'é'.repeat(120)}/backup.tar.gz`);
    for (const key of [...Object.values(k), ...Object.values(restoreKeys('', longest))]) {
      for (const seg of key.split('/')) expect(Buffer.byteLength(seg)).toBeLessThanOrEqual(MAX_SEGMENT_BYTES);
    }
    // Velero's layout (and the old one) name every file in full, however long.
    expect(backupKeys('', longest, 'full').tarball).toBe(`backups/${longest}/${longest}.tar.gz`);
  });

  it('says when a run\'s keys cannot be stored: a key over 1024 bytes, or a prefix part over 255', () => {
    const longest = 'n'.repeat(253);
    expect(unstorableKeys('backup', Object.values(backupKeys('a/b', longest)))).toBeUndefined();
    const prefix = ['p'.repeat(250), 'q'.repeat(250), 'r'.repeat(250)].join('/');
    expect(unstorableKeys('backup', Object.values(backupKeys(prefix, 'b1')))).toBeUndefined();
    const tooLong = Object.values(restoreKeys(prefix, longest));
    const bytes = Math.max(...tooLong.map((k) => Buffer.byteLength(k)));
    expect(bytes).toBeGreaterThan(MAX_KEY_BYTES);
    expect(unstorableKeys('restore', tooLong)).toBe(
      `its files cannot be stored: a key would be ${bytes} bytes long (the location's prefix, the restore's name and a file name), more than the 1024 bytes an object key may have; use a shorter restore name or a location with a shorter prefix`,
    );
    expect(unstorableKeys('backup', Object.values(backupKeys('x'.repeat(256), 'b1')))).toBe(
      `its files cannot be stored: a part of the key between slashes ("${'x'.repeat(24)}…") would be 256 bytes long, more than the 255 bytes a store may take; use a location whose prefix has shorter parts`,
    );
  });

  it('normalises prefixes and refuses names that would escape their directory', () => {
    expect(normalizePrefix(undefined)).toBe('');
    expect(normalizePrefix('/')).toBe('');
    expect(normalizePrefix('//a/b//')).toBe('a/b/');
    for (const bad of ['', '..', 'a/b', 'a\\b']) expect(() => backupKeys('', bad)).toThrow(/invalid backup name/);
    expect(() => restoreKeys('', '.')).toThrow('invalid restore name for an object-store key: "."');
  });
});

describe('results and resource lists', () => {
  it('splits messages by cluster and namespace and counts them', () => {
    const r = emptyResults();
    addResult(r, 'warnings', 'shop', 'w1');
    addResult(r, 'warnings', undefined, 'w2');
    addResult(r, 'errors', 'shop', 'e1');
    addResult(r, 'errors', '', 'e2');
    expect(r).toEqual({ warnings: { cluster: ['w2'], namespaces: { shop: ['w1'] } }, errors: { cluster: ['e2'], namespaces: { shop: ['e1'] } } });
    expect(countResults(r)).toEqual({ warnings: 2, errors: 2 });
  });

  it('builds a sorted resource list', () => {
    expect(resourceListOf([
      { groupResource: 'pods', namespace: 'b', name: 'z' }, { groupResource: 'namespaces', name: 'b' },
      { groupResource: 'pods', namespace: 'a', name: 'y' },
    ])).toEqual({ namespaces: ['b'], pods: ['a/y', 'b/z'] });
  });
});

describe('BackupStore', () => {
  it('writes stowage-backup.json last and reads every artifact back', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b', prefix: 'pre' });
    await s.putTarball('b1', bytes('tarball'));
    const results = emptyResults();
    addResult(results, 'warnings', 'ns', 'careful');
    const manifest = { formatVersion: '1.1.0', tarball: { sha256: 'a'.repeat(64), bytes: 7 }, entries: { 'metadata/version': 'b'.repeat(64) } };
    await s.completeBackup('b1', { resourceList: { pods: ['ns/p'] }, results, manifest, backup: backupObj('b1') });
    // The three artifacts are uploaded at once (their order varies); the marker strictly after them.
    expect(m.log[0]).toBe('put pre/backups/b1/b1.tar.gz');
    expect([...m.log.slice(1, 4)].sort()).toEqual([
      'put pre/backups/b1/b1-manifest.json.gz',
      'put pre/backups/b1/b1-resource-list.json.gz',
      'put pre/backups/b1/b1-results.gz',
    ]);
    expect(m.log.slice(4)).toEqual(['put pre/backups/b1/stowage-backup.json']);
    expect(JSON.parse(gunzipSync(m.objects.get('b/pre/backups/b1/b1-resource-list.json.gz') as Buffer).toString())).toEqual({ pods: ['ns/p'] });
    expect(await s.getBackupMetadata('b1')).toEqual(backupObj('b1'));
    expect(await s.getManifest('b1')).toEqual(manifest);
    const inflated: Uint8Array[] = [];
    for await (const c of (await s.getManifestStream('b1')) ?? []) inflated.push(c);
    expect(JSON.parse(Buffer.concat(inflated).toString())).toEqual(manifest);
    expect(await s.getManifestStream('nope')).toBeUndefined();
    expect(await s.getResults('b1')).toEqual(results);
    expect(await s.getResourceList('b1')).toEqual({ pods: ['ns/p'] });
    const chunks: Uint8Array[] = [];
    for await (const c of await s.getTarball('b1')) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).toBe('tarball');
    expect(await s.getBackupMetadata('nope')).toBeUndefined();
    expect(await s.getManifest('nope')).toBeUndefined();
    await expect(s.getTarball('nope')).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('writes a long-named run in the short form, and reads one written in the full form before it', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b' });
    const now = 'n'.repeat(253);
    await s.putTarball(now, bytes('new tar'));
    await s.completeBackup(now, { resourceList: { pods: ['ns/p'] }, results: emptyResults(), backup: backupObj(now) });
    await s.completeRestore(`r${now.slice(1)}`, { resourceList: {}, results: emptyResults() });
    expect(m.keys().map((k) => k.replace(now.slice(1), '…'))).toEqual([
      'backups/…n/backup-resource-list.json.gz', 'backups/…n/backup-results.gz', 'backups/…n/backup.tar.gz', 'backups/…n/stowage-backup.json',
      'restores/r…/restore-resource-list.json.gz', 'restores/r…/restore-results.gz',
    ]);
    expect(await s.listBackupNames()).toEqual([now]);

    const old = 'o'.repeat(253);
    const full = backupKeys('', old, 'full');
    const results = emptyResults();
    addResult(results, 'warnings', undefined, 'from before');
    await m.store.putObject('b', full.tarball, bytes('old tar'));
    m.objects.set(`b/${full.resourceList}`, gzipSync(JSON.stringify({ pods: ['ns/old'] })));
    m.objects.set(`b/${full.results}`, gzipSync(JSON.stringify(results)));
    m.objects.set(`b/${restoreKeys('', old, 'full').results}`, gzipSync(JSON.stringify(results)));
    const chunks: Uint8Array[] = [];
    for await (const c of await s.getTarball(old)) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).toBe('old tar');
    expect(await s.getResourceList(old)).toEqual({ pods: ['ns/old'] });
    expect(await s.getResults(old)).toEqual(results);
    expect(await s.getRestoreResults(old)).toEqual(results);
    expect(await s.signedURL('BackupContents', old, 60)).toBe(`https://example/b/${full.tarball}?ttl=60`);
    expect(await s.signedURL('BackupContents', now, 60)).toBe(`https://example/b/backups/${now}/backup.tar.gz?ttl=60`);
    await expect(s.getTarball('x'.repeat(253))).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('completeBackup: the artifacts at once, then the caller\'s step (the log), then stowage-backup.json; a failure before the marker leaves none', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b' });
    const artifacts = { resourceList: {}, results: emptyResults(), backup: backupObj('b1') };
    await s.completeBackup('b1', artifacts, async () => {
      // Every artifact is written (not just started) before the caller's step runs.
      expect(m.keys()).toEqual(['backups/b1/b1-resource-list.json.gz', 'backups/b1/b1-results.gz']);
      m.log.push('log');
    });
    expect(m.log.slice(-2)).toEqual(['log', 'put backups/b1/stowage-backup.json']);

    const logFails = s.completeBackup('b2', artifacts, () => Promise.reject(new Error('the run log could not be written: ENOSPC')));
    await expect(logFails).rejects.toMatchObject({ step: 'beforeMarker', message: 'the run log could not be written: ENOSPC' });
    expect(await s.getBackupMetadata('b2')).toBeUndefined();

    const missing = createBackupStore({ objectStore: m.store, bucket: 'gone' });
    let hooked = false;
    const err = await missing.completeBackup('b3', artifacts, () => Promise.resolve(void (hooked = true))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactWriteError);
    expect(err).toMatchObject({ step: 'artifacts', message: expect.stringMatching(/^uploading the backup's artifacts failed: NoSuchBucket/) as unknown });
    expect(hooked).toBe(false);
  });

  it('completeBackup: a signing location\'s signature uploads beside the artifacts, before the caller\'s step; its failure says signing failed', async () => {
    const m = memoryStore();
    const ends: string[] = [];
    // The resource list takes a while to store: the signature must not wait for it.
    const slow: ObjectStore = {
      ...m.store,
      async putObject(bucket, key, body) {
        if (key.endsWith('resource-list.json.gz')) for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        await m.store.putObject(bucket, key, body);
        ends.push(key);
      },
    };
    const s = createBackupStore({ objectStore: slow, bucket: 'b' });
    const manifest = { formatVersion: '1.1.0', tarball: { sha256: 'a'.repeat(64), bytes: 7 }, entries: {} };
    const digests: unknown[] = [];
    const sign = (d: unknown): SignatureFile => {
      digests.push(d);
      return { signed: true } as unknown as SignatureFile;
    };
    const artifacts = { resourceList: {}, results: emptyResults(), manifest, backup: backupObj('b1'), sign };
    await s.completeBackup('b1', artifacts, async () => {
      expect(ends).toContain('backups/b1/b1-signature.json');
      m.log.push('log');
    });
    expect(ends.indexOf('backups/b1/b1-signature.json')).toBeLessThan(ends.indexOf('backups/b1/b1-resource-list.json.gz'));
    expect(digests).toEqual([{ manifestSha256: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown, resourceListSha256: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown }]);
    expect(m.log.slice(-2)).toEqual(['log', 'put backups/b1/stowage-backup.json']);

    const refused = (): SignatureFile => {
      throw new Error('key "k1" is an Ed25519 public key');
    };
    const err = await s.completeBackup('b2', { ...artifacts, backup: backupObj('b2'), sign: refused }).catch((e: unknown) => e);
    expect(err).toMatchObject({ step: 'signature', message: 'signing the backup failed: key "k1" is an Ed25519 public key' });
    expect(await s.getBackupMetadata('b2')).toBeUndefined();
    // The artifacts' failure is the one reported when both fail.
    const gone = createBackupStore({ objectStore: m.store, bucket: 'gone' });
    await expect(gone.completeBackup('b3', { ...artifacts, backup: backupObj('b3'), sign: refused })).rejects.toMatchObject({ step: 'artifacts' });
  });

  it('completeRestore writes the results and the resource list', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b' });
    const results = emptyResults();
    addResult(results, 'errors', 'ns', 'broke');
    await s.completeRestore('r1', { results, resourceList: { configmaps: ['ns/a'] } });
    expect(m.keys()).toEqual(['restores/r1/restore-r1-resource-list.json.gz', 'restores/r1/restore-r1-results.gz']);
    expect(await s.getRestoreResults('r1')).toEqual(results);
    await expect(createBackupStore({ objectStore: m.store, bucket: 'gone' }).completeRestore('r1', { results, resourceList: {} }))
      .rejects.toThrow(/^uploading the restore's artifacts failed: NoSuchBucket/);
  });

  it('uploads log files as they are (already gzipped)', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b' });
    const dir = mkdtempSync(join(tmpdir(), 'stowage-store-'));
    const file = join(dir, 'run.log.gz');
    writeFileSync(file, gzipSync('line 1\nline 2\n'));
    await s.putLog('b1', file);
    await s.putRestoreLog('r1', file);
    expect(gunzipSync(m.objects.get('b/backups/b1/b1-logs.gz') as Buffer).toString()).toBe('line 1\nline 2\n');
    expect(m.keys()).toEqual(['backups/b1/b1-logs.gz', 'restores/r1/restore-r1-logs.gz']);
  });

  it('lists only whole backups (with stowage-backup.json), whatever prefix style the store returns', async () => {
    for (const relativePrefixes of [false, true]) {
      const m = memoryStore({ relativePrefixes });
      const s = createBackupStore({ objectStore: m.store, bucket: 'b', prefix: 'p/' });
      await s.putTarball('partial', bytes('x'));
      await s.putTarball('whole', bytes('x'));
      await s.putBackupMetadata('whole', backupObj('whole'));
      await s.putBackupMetadata('also', backupObj('also'));
      await m.store.putObject('b', 'other/backups/x/stowage-backup.json', bytes('{}'));
      expect(await s.listBackupNames()).toEqual(['also', 'whole']);
    }
  });

  it('deletes stowage-backup.json first, then the rest, then the named restores only', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b' });
    await s.putTarball('b1', bytes('x'));
    await s.putResults('b1', emptyResults());
    await s.putBackupMetadata('b1', backupObj('b1'));
    await s.putBackupMetadata('b10', backupObj('b10'));
    await s.putRestoreResults('r1', emptyResults());
    await s.putRestoreResourceList('r1', {});
    await s.putRestoreResults('r2', emptyResults());
    m.log.length = 0;
    await s.deleteBackup('b1', ['r1']);
    expect(m.log[0]).toBe('delete backups/b1/stowage-backup.json');
    expect(m.keys()).toEqual(['backups/b10/stowage-backup.json', 'restores/r2/restore-r2-results.gz']);
    expect(await s.getRestoreResults('r2')).toEqual(emptyResults());
    await s.deleteRestore('r2');
    expect(m.keys()).toEqual(['backups/b10/stowage-backup.json']);
  });

  it('hands the object store replayable bodies for artifacts and logs (re-readable after a plugin restart)', async () => {
    const m = memoryStore();
    const seen: Record<string, { replayable: boolean; reads: string[] }> = {};
    const recording: ObjectStore = {
      ...m.store,
      async putObject(bucket, key, body) {
        const reads: string[] = [];
        for (let i = 0; i < 2; i++) {
          const chunks: Uint8Array[] = [];
          for await (const c of body) chunks.push(c);
          reads.push(Buffer.concat(chunks).toString('base64'));
        }
        seen[key] = { replayable: isReplayable(body), reads };
      },
    };
    const s = createBackupStore({ objectStore: recording, bucket: 'b' });
    const dir = mkdtempSync(join(tmpdir(), 'stowage-store-'));
    writeFileSync(join(dir, 'log.gz'), gzipSync('a log line\n'));
    await s.putLog('b1', join(dir, 'log.gz'));
    await s.completeBackup('b1', { resourceList: {}, results: emptyResults(), backup: backupObj('b1') });
    await s.putRestoreLog('r1', join(dir, 'log.gz'));
    expect(Object.keys(seen).sort()).toEqual([
      'backups/b1/b1-logs.gz', 'backups/b1/b1-resource-list.json.gz', 'backups/b1/b1-results.gz', 'backups/b1/stowage-backup.json', 'restores/r1/restore-r1-logs.gz',
    ]);
    for (const [key, v] of Object.entries(seen)) {
      expect(v.replayable, key).toBe(true);
      expect(v.reads[0], key).not.toBe('');
      expect(v.reads[1], key).toBe(v.reads[0]);
    }
  });

  it('signs download URLs for the right keys', async () => {
    const s = createBackupStore({ objectStore: memoryStore().store, bucket: 'b', prefix: 'x' });
    expect(await s.signedURL('BackupResults', 'b1', 600)).toBe('https://example/b/x/backups/b1/b1-results.gz?ttl=600');
  });

  it('validates: reachable bucket, and only backups/ and restores/ at the top of the prefix', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b', prefix: 'team' });
    await expect(s.validate()).resolves.toBeUndefined();
    await s.putBackupMetadata('b1', backupObj('b1'));
    await s.putRestoreResults('r1', emptyResults());
    await m.store.putObject('b', 'elsewhere/file', bytes('x'));
    await expect(s.validate()).resolves.toBeUndefined();
    await m.store.putObject('b', 'team/kopia/x', bytes('x'));
    await m.store.putObject('b', 'team/data/x', bytes('x'));
    await expect(s.validate()).rejects.toThrow(new LocationValidationError(
      'bucket "b" under prefix "team/" holds unexpected directories "data/", "kopia/" at its top level; only backups/ and restores/ may be there (give the location its own bucket or prefix)'));
    const root = createBackupStore({ objectStore: m.store, bucket: 'b' });
    await expect(root.validate()).rejects.toThrow('bucket "b" holds unexpected directories "elsewhere/", "team/" at its top level');
    const missing = createBackupStore({ objectStore: m.store, bucket: 'gone' });
    await expect(missing.validate()).rejects.toThrow('bucket "gone" is not reachable: NoSuchBucket: the bucket gone does not exist');
  });

  it('refuses oversized or corrupt artifacts with the key in the message', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b', maxArtifactBytes: 1000 });
    await m.store.putObject('b', 'backups/b1/b1-results.gz', bytes('not gzip'));
    await expect(s.getResults('b1')).rejects.toThrow(/^backups\/b1\/b1-results\.gz could not be read: incorrect header check/);
    await s.putResourceList('b1', { pods: Array.from({ length: 500 }, (_, i) => `ns/p${i}`) });
    await expect(s.getResourceList('b1')).rejects.toThrow('backups/b1/b1-resource-list.json.gz could not be read: its inflated content is larger than 1000 bytes');
    await m.store.putObject('b', 'backups/b1/b1-manifest.json.gz', bytes('not gzip'));
    const drain = async (): Promise<void> => {
      for await (const c of (await s.getManifestStream('b1')) ?? []) void c;
    };
    await expect(drain()).rejects.toThrow(/^backups\/b1\/b1-manifest\.json\.gz could not be read: incorrect header check/);
    await s.putManifest('b1', { formatVersion: '1.1.0', tarball: { sha256: 's', bytes: 1 }, entries: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, 'x'.repeat(64)])) });
    await expect(drain()).rejects.toThrow('backups/b1/b1-manifest.json.gz could not be read: its inflated content is larger than 1000 bytes');
    await m.store.putObject('b', 'backups/b1/b1-manifest.json.gz', (async function* () {
      yield gzipSync('{"formatVersion":"1.1.0"}');
    })());
    await expect(s.getManifest('b1')).rejects.toThrow('the backup manifest is malformed: tarball is missing');
    await m.store.putObject('b', 'backups/b1/stowage-backup.json', bytes('{"kind":"Restore"}'));
    await expect(s.getBackupMetadata('b1')).rejects.toThrow('stowage-backup.json of backup "b1" is not a Backup object');
  });

  it('reads at most MAX_METADATA_BYTES of a stowage-backup.json (a planted giant is refused, not loaded)', async () => {
    const m = memoryStore();
    const s = createBackupStore({ objectStore: m.store, bucket: 'b' });
    await m.store.putObject('b', 'backups/huge/stowage-backup.json', bytes(`{"kind":"Backup","pad":"${'x'.repeat(MAX_METADATA_BYTES)}"}`));
    await expect(s.getBackupEnvelope('huge')).rejects.toThrow(`backups/huge/stowage-backup.json is larger than ${MAX_METADATA_BYTES} bytes`);
  });
});

describe('a Velero location (veleroStore.ts)', () => {
  const veleroJson = (name: string): string => JSON.stringify({ apiVersion: 'velero.io/v1', kind: 'Backup', metadata: { name }, status: { phase: 'Completed' } });
  async function veleroBucket(prefix = 'v/') {
    const m = memoryStore();
    for (const [k, v] of [
      ['backups/b1/velero-backup.json', veleroJson('b1')], ['backups/b1/b1.tar.gz', 'tar'], ['backups/b1/b1-logs.gz', 'log'],
      ['backups/half/half.tar.gz', 'tar'], ['kopia/ns/kopia.repository', 'k'], ['restic/ns/config', 'r'], ['metadata/revision', 'x'],
    ] as const) await m.store.putObject('b', `${prefix}${k}`, bytes(v));
    m.log.length = 0;
    return m;
  }

  it('lists the backups that have velero-backup.json, reads it, and accepts kopia/ restic/ metadata/ at the top', async () => {
    const m = await veleroBucket();
    const s = createVeleroStore({ objectStore: m.store, bucket: 'b', prefix: 'v' });
    expect(await s.listBackupNames()).toEqual(['b1']);
    expect(await s.getVeleroBackup('b1')).toMatchObject({ kind: 'Backup', metadata: { name: 'b1' } });
    expect(await s.getVeleroBackup('half')).toBeUndefined();
    expect(await s.getManifestStream('b1')).toBeUndefined();
    await s.validate();
    // The same bucket is refused as a Stowage location, naming Velero's directories.
    await expect(createBackupStore({ objectStore: m.store, bucket: 'b', prefix: 'v' }).validate()).rejects.toThrow(/"kopia\/", "metadata\/", "restic\/"/);
  });

  it("reads a long-named Velero backup's files by the full name, as Velero writes them", async () => {
    const m = memoryStore();
    const long = 'v'.repeat(253);
    m.objects.set(`b/backups/${long}/${long}-resource-list.json.gz`, gzipSync(JSON.stringify({ pods: ['ns/v'] })));
    const s = createVeleroStore({ objectStore: m.store, bucket: 'b' });
    expect(s.keys(long).tarball).toBe(`backups/${long}/${long}.tar.gz`);
    expect(await s.getResourceList(long)).toEqual({ pods: ['ns/v'] });
  });

  it('refuses every write and delete, and writes nothing', async () => {
    const m = await veleroBucket();
    const s = createVeleroStore({ objectStore: m.store, bucket: 'b', prefix: 'v' }).withKey('unencrypted');
    const attempts: Promise<unknown>[] = [
      s.putTarball('x', bytes('t')), s.putResourceList('x', {}), s.putResults('x', emptyResults()), s.putBackupMetadata('x', backupObj('x')),
      s.completeBackup('x', { resourceList: {}, results: emptyResults(), backup: backupObj('x') }), s.deleteBackup('b1'),
      s.putRestoreResults('r', emptyResults()), s.completeRestore('r', { results: emptyResults(), resourceList: {} }), s.deleteRestore('r'),
    ];
    for (const a of attempts) await expect(a).rejects.toBeInstanceOf(VeleroWriteRefusedError);
    expect(m.log).toEqual([]);
  });

  it('still refuses what Velero never has at its top level', async () => {
    const m = await veleroBucket('');
    await m.store.putObject('b', 'stuff/x', bytes('x'));
    await expect(createVeleroStore({ objectStore: m.store, bucket: 'b' }).validate()).rejects.toThrow(/holds "stuff\/" at its top level, which Velero's layout does not have/);
  });

  it('detects the layout from the markers in backups/, then from Velero\'s own directories', async () => {
    const m = await veleroBucket();
    expect(await detectLayout({ objectStore: m.store, bucket: 'b', prefix: 'v' })).toEqual({
      layout: 'Velero', reason: 'detected: backups/b1/velero-backup.json is Velero\'s, and no backup here is Stowage\'s',
    });
    await m.store.putObject('b', 'v/backups/a0/stowage-backup.json', bytes('{}'));
    expect(await detectLayout({ objectStore: m.store, bucket: 'b', prefix: 'v' })).toEqual({ layout: 'Stowage', reason: 'detected: backups/a0/stowage-backup.json is Stowage\'s' });
    const onlyKopia = memoryStore();
    await onlyKopia.store.putObject('b', 'kopia/ns/kopia.repository', bytes('k'));
    expect((await detectLayout({ objectStore: onlyKopia.store, bucket: 'b' })).reason).toBe('detected: Velero\'s top-level directory "kopia/" is there, and no backup here is Stowage\'s');
    expect(await detectLayout({ objectStore: memoryStore().store, bucket: 'b' })).toEqual({ layout: 'Stowage', reason: 'detected: no Velero backup found' });
  });

  it('reads Velero\'s backup results into Stowage\'s form', async () => {
    const m = await veleroBucket();
    await m.store.putObject('b', 'v/backups/b1/b1-results.gz', bytes(''));
    m.objects.set('b/v/backups/b1/b1-results.gz', gzipSync(JSON.stringify({ warnings: { velero: ['v1'], cluster: ['c1'], namespaces: { shop: ['n1'] } }, errors: {} })));
    expect(await createVeleroStore({ objectStore: m.store, bucket: 'b', prefix: 'v' }).getResults('b1')).toEqual({
      warnings: { cluster: ['v1', 'c1'], namespaces: { shop: ['n1'] } }, errors: { cluster: [], namespaces: {} },
    });
  });
});
