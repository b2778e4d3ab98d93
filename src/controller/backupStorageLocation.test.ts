import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation } from '../apis/v1/index.js';
import { unsupportedLocationFields } from './backupStorageLocation.js';

describe('location fields the runs do not honour yet', () => {
  const base = { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' } };
  it('refuses spec.encryption and spec.signing, each named, and accepts a location without them', () => {
    expect(unsupportedLocationFields(newBackupStorageLocation('l', 'ns', base))).toBeUndefined();
    expect(unsupportedLocationFields(newBackupStorageLocation('l', 'ns', { ...base, encryption: { keySecretRef: { name: 'k', key: 'k1' } } })))
      .toBe('spec.encryption (client-side encryption) is not supported by this server yet: its backups would be written unencrypted and unsigned, so the location is refused; remove the field to use it');
    expect(unsupportedLocationFields(newBackupStorageLocation('l', 'ns', { ...base, signing: { keySecretRef: { name: 's', key: 'hmac' } } })))
      .toMatch(/^spec\.signing \(signed manifests\) is not supported/);
  });
});
