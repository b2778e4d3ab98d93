// The data keys of a location's backups, over a fake API client that serves the key Secret: a
// fresh key per backup, wrapped and recorded; unwrapped again from what was recorded; and each
// refusal worded as the operator needs it (a location without the key manager, another manager, an
// unknown or replaced key), never with a key's value.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation, type BackupStorageLocationSpec } from '../apis/v1/index.js';
import { KubeError } from '../kube/index.js';
import type { PluginHandle } from '../plugin/host/index.js';
import type { ArtifactKey } from '../persistence/sealing.js';
import { checkLocationKeys, encrypts, encryptionStatus, newBackupKey, openBackupKey, unencryptedRefusal, wrappedKeyOfStatus } from './keys.js';
import type { StoreContext } from './context.js';

const k1 = crypto.randomBytes(32);
const k2 = crypto.randomBytes(32);

function context(secrets: Record<string, Record<string, Buffer>>): StoreContext {
  const client = {
    get: (_res: unknown, _ns: string, name: string) => {
      const data = secrets[name];
      if (data === undefined) return Promise.reject(new KubeError({ verb: 'get', resource: 'secrets', namespace: 'stowage', name }, 404, 'NotFound', `secrets "${name}" not found`));
      return Promise.resolve({ metadata: { name }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString('base64')])) });
    },
  };
  // Reading the key Secret is all these functions do with the context.
  return { client, namespace: 'stowage', scratchDir: '/nonexistent' } as unknown as StoreContext;
}
// The Secret-backed key manager needs no plugin.
const handle = {} as PluginHandle;
const bsl = (encryption?: BackupStorageLocationSpec['encryption']) =>
  newBackupStorageLocation('vault', 'stowage', { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' }, ...(encryption !== undefined ? { encryption } : {}) });

describe('backup data keys from a Secret', () => {
  const ctx = context({ kek: { k1, k2 } });
  const location = bsl({ keySecretRef: { name: 'kek', key: 'k1' } });

  it('wraps a fresh key per backup, records it, and unwraps it from what was recorded', async () => {
    expect(encrypts(location)).toBe(true);
    expect(encrypts(bsl())).toBe(false);
    await checkLocationKeys(ctx, handle, location);
    const a = await newBackupKey(ctx, handle, location, 'b1');
    const b = await newBackupKey(ctx, handle, location, 'b2');
    if (a === 'unencrypted' || b === 'unencrypted') throw new Error('expected keys');
    expect(a.dataKey.equals(b.dataKey)).toBe(false);
    const status = encryptionStatus(a);
    expect(status).toMatchObject({ algorithm: 'AES-256-GCM-CHUNKED-v1', keyManager: 'stowage.dev/secret', keyId: 'k1' });
    const wrapped = wrappedKeyOfStatus({ status: { encryption: status ?? {} } });
    const opened = await openBackupKey(ctx, handle, location, 'b1', wrapped) as Exclude<ArtifactKey, 'unencrypted'>;
    expect(opened.dataKey.equals(a.dataKey)).toBe(true);
    // The wrapping is bound to the backup's name: moved to another backup, it does not open.
    await expect(openBackupKey(ctx, handle, location, 'b2', wrapped)).rejects.toThrow('backup "b2" cannot be read: the data key does not unwrap with key "k1" of Secret stowage/kek');
    expect(await newBackupKey(ctx, handle, bsl(), 'b3')).toBe('unencrypted');
    expect(encryptionStatus('unencrypted')).toBeNull();
  });

  it('refuses, naming why, and never shows a key', async () => {
    const a = await newBackupKey(ctx, handle, location, 'b1');
    if (a === 'unencrypted') throw new Error('expected a key');
    const messages: string[] = [];
    const refused = async (p: Promise<unknown>): Promise<string> => {
      const err = await p.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      messages.push((err as Error).message);
      return (err as Error).message;
    };
    expect(await refused(openBackupKey(ctx, handle, bsl(), 'b1', a.wrapped)))
      .toBe('backup "b1" is encrypted (its data key is wrapped with key "k1" of stowage.dev/secret), and location "vault" has no spec.encryption to unwrap it');
    expect(await refused(openBackupKey(ctx, handle, location, 'b1', { ...a.wrapped, keyManager: 'example.com/kms' })))
      .toBe('backup "b1" is encrypted (its data key is wrapped with key "k1" of example.com/kms), but location "vault" uses key manager stowage.dev/secret');
    expect(await refused(openBackupKey(context({ kek: { k2 } }), handle, bsl({ keySecretRef: { name: 'kek', key: 'k2' } }), 'b1', a.wrapped)))
      .toBe('backup "b1" cannot be read: the data key is wrapped with key "k1", which Secret stowage/kek no longer lists (it lists "k2"); put that key back to read this backup');
    expect(await refused(newBackupKey(context({}), handle, location, 'b1'))).toBe('the encryption key Secret stowage/kek of location "vault" does not exist');
    expect(await refused(checkLocationKeys(context({ kek: { k2 } }), handle, location))).toBe('location "vault": Secret stowage/kek has no key "k1" (it has "k2")');
    for (const m of messages) {
      for (const k of [k1, k2]) {
        expect(m).not.toContain(k.toString('base64'));
        expect(m).not.toContain(k.toString('hex'));
      }
    }
  });

  it('says when a location that requires encryption holds an unencrypted backup', () => {
    expect(unencryptedRefusal(bsl({ keySecretRef: { name: 'kek', key: 'k1' }, required: true }), 'b1', 'unencrypted'))
      .toBe('backup "b1" is not encrypted, and location "vault" requires encryption (spec.encryption.required)');
    expect(unencryptedRefusal(location, 'b1', 'unencrypted')).toBeUndefined();
  });
});
