import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation } from '../apis/v1/index.js';
import { encryptionSpecProblem } from './backupStorageLocation.js';

describe('location fields', () => {
  const base = { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' } };
  it('needs exactly one source of keys in spec.encryption', () => {
    const problem = (encryption: Record<string, unknown>): string | undefined => encryptionSpecProblem(newBackupStorageLocation('l', 'ns', { ...base, encryption }));
    expect(problem({ keySecretRef: { name: 'k', key: 'k1' } })).toBeUndefined();
    expect(problem({ keyManager: { provider: 'example.com/kms' }, required: true })).toBeUndefined();
    expect(problem({ required: true })).toBe('spec.encryption needs keySecretRef (a Secret of key-encryption keys) or keyManager (a KeyManager plugin)');
    expect(problem({ keySecretRef: { name: 'k', key: 'k1' }, keyManager: { provider: 'example.com/kms' } })).toBe('spec.encryption sets both keySecretRef and keyManager: give one');
    expect(encryptionSpecProblem(newBackupStorageLocation('l', 'ns', base))).toBeUndefined();
  });
});
