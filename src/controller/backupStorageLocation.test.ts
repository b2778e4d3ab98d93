import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation } from '../apis/v1/index.js';
import { encryptionSpecProblem, signingSpecProblem, unsignedNote } from './backupStorageLocation.js';

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

  it('needs a signing key or an explicit opt-out in spec.signing, not both', () => {
    const bsl = (signing?: Record<string, unknown>) => newBackupStorageLocation('l', 'ns', { ...base, ...(signing !== undefined ? { signing } : {}) });
    expect(signingSpecProblem(bsl({ keySecretRef: { name: 's', key: 'hmac' } }))).toBeUndefined();
    expect(signingSpecProblem(bsl({ disabled: true }))).toBeUndefined();
    expect(signingSpecProblem(bsl({}))).toBe('spec.signing needs keySecretRef (the Secret entry of the signing key), or disabled: true to opt out of signing');
    expect(signingSpecProblem(bsl({ disabled: false }))).toBe('spec.signing needs keySecretRef (the Secret entry of the signing key), or disabled: true to opt out of signing');
    expect(signingSpecProblem(bsl({ keySecretRef: { name: 's', key: 'hmac' }, disabled: true }))).toBe('spec.signing sets both keySecretRef and disabled: true: sign with the key, or opt out, not both');
  });

  it('names an unsigned location in the server log: opted out, or saying nothing', () => {
    const bsl = (signing?: Record<string, unknown>) => newBackupStorageLocation('l', 'ns', { ...base, ...(signing !== undefined ? { signing } : {}) });
    expect(unsignedNote(bsl({ keySecretRef: { name: 's', key: 'hmac' } }))).toBeUndefined();
    expect(unsignedNote(bsl({ disabled: true }))).toBe('it is unsigned by choice (spec.signing.disabled: true): its backups are not tamper-evident');
    expect(unsignedNote(bsl())).toBe('it is unsigned: it has no spec.signing, so its backups are not tamper-evident (set spec.signing.keySecretRef, or spec.signing.disabled: true to opt out explicitly)');
  });
});
