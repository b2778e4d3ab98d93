import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation, type BackupStorageLocation } from '../apis/v1/index.js';
import type { ObjectStore } from '../plugin/api/index.js';
import { LocationWriteRefusedError, objectStoreConfig, refuseWrites, writeRefusal } from './open.js';

const location = newBackupStorageLocation('default', 'stowage', { provider: 'aws', objectStorage: { bucket: 'b' } });

describe('objectStoreConfig', () => {
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const secretKey = Buffer.from('[default]\naws_access_key_id=A\n').toString('base64');
  const storeCtx = (): Parameters<typeof objectStoreConfig>[0] => ({
    namespace: 'stowage',
    scratchDir: fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-loc-')),
    client: { get: async () => ({ metadata: { name: 'creds' }, data: { cloud: secretKey } }) },
  }) as unknown as Parameters<typeof objectStoreConfig>[0];
  const location = (spec: Partial<BackupStorageLocation['spec']>): BackupStorageLocation => ({
    apiVersion: 'stowage.dev/v1', kind: 'BackupStorageLocation', metadata: { name: 'default', namespace: 'stowage' },
    spec: { provider: 'example.com/store', objectStorage: { bucket: 'b' }, ...spec },
  }) as BackupStorageLocation;

  it('gives any provider the same keys: config, bucket, prefix, PEM caCert and a private credentials file', async () => {
    const ctx = storeCtx();
    const c = await objectStoreConfig(ctx, location({
      objectStorage: { bucket: 'vault', prefix: '/a/b/', caCert: Buffer.from(PEM).toString('base64') },
      config: { region: 'r', bucket: 'ignored' },
      credential: { name: 'creds', key: 'cloud' },
    }));
    expect(Object.keys(c).sort()).toEqual(['bucket', 'caCert', 'credentialsFile', 'prefix', 'region']);
    expect(c).toMatchObject({ bucket: 'vault', prefix: 'a/b', caCert: PEM, region: 'r' });
    const file = c.credentialsFile as string;
    expect(file.startsWith(path.join(ctx.scratchDir, 'credentials') + path.sep)).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, 'utf8')).toBe('[default]\naws_access_key_id=A\n');
    // The same content maps to the same file, so the plugin instance (keyed by config) is reused.
    expect((await objectStoreConfig(ctx, location({ credential: { name: 'creds', key: 'cloud' } }))).credentialsFile).toBe(file);
  });

  it('passes no caCert or credentialsFile when the location has none, and refuses a caCert that is not PEM', async () => {
    expect(await objectStoreConfig(storeCtx(), location({}))).toEqual({ bucket: 'b', prefix: '' });
    expect((await objectStoreConfig(storeCtx(), location({ objectStorage: { bucket: 'b', caCert: PEM } }))).caCert).toBe(PEM);
    await expect(objectStoreConfig(storeCtx(), location({ objectStorage: { bucket: 'b', caCert: 'bm90IGEgY2VydA==' } }))).rejects.toThrow(
      'backup storage location "default": objectStorage.caCert is not a base64-encoded PEM bundle',
    );
  });
});

async function* nothing(): AsyncGenerator<Uint8Array> {}

describe('writeRefusal and refuseWrites', () => {
  const with_ = (spec: Partial<BackupStorageLocation['spec']>, status?: BackupStorageLocation['status']): BackupStorageLocation =>
    ({ ...location, spec: { ...location.spec, ...spec }, ...(status !== undefined ? { status } : {}) }) as BackupStorageLocation;

  it('names why Stowage writes nothing into a ReadOnly or Velero location, and nothing for its own', () => {
    expect(writeRefusal(with_({}))).toBeUndefined();
    expect(writeRefusal(with_({ accessMode: 'ReadWrite' }))).toBeUndefined();
    expect(writeRefusal(with_({ accessMode: 'ReadOnly' }))).toBe('backup storage location "default" is ReadOnly, so Stowage writes nothing into it');
    expect(writeRefusal(with_({ velero: true }))).toBe('backup storage location "default" holds Velero\'s backups, which Stowage never writes into');
    expect(writeRefusal(with_({}, { phase: 'Available', layout: 'Velero' }))).toContain('holds Velero\'s backups');
  });

  it('refuses puts and deletes without reaching the store, and passes reads through', async () => {
    const calls: string[] = [];
    const store = {
      secret: 'kept',
      init: async () => undefined,
      putObject: async () => { calls.push('put'); },
      getObject: async () => nothing(),
      objectExists: async function (this: { secret: string }) { calls.push(`exists ${this.secret}`); return true; },
      listCommonPrefixes: async () => [],
      listObjects: async () => ['k'],
      deleteObject: async () => { calls.push('delete'); },
      createSignedURL: async () => 'url',
    } satisfies ObjectStore & { secret: string };
    const guarded = refuseWrites(store, 'it is ReadOnly');
    await expect(guarded.putObject('b', 'p/backups/x/x.tar.gz', nothing())).rejects.toThrow(new LocationWriteRefusedError('not writing p/backups/x/x.tar.gz: it is ReadOnly'));
    await expect(guarded.deleteObject('b', 'p/backups/x/x.tar.gz')).rejects.toBeInstanceOf(LocationWriteRefusedError);
    expect(await guarded.objectExists('b', 'k')).toBe(true);
    expect(await guarded.listObjects('b', '')).toEqual(['k']);
    expect(calls).toEqual(['exists kept']);
  });
});
