import { describe, expect, it } from 'vitest';
import { newBackupStorageLocation } from '../apis/v1/index.js';
import { encryptionSpecProblem, missingSigningProblem, signingSpecProblem, unsignedNote } from './backupStorageLocation.js';

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

  it('names an opted-out location in the server log, and nothing else', () => {
    const bsl = (signing?: Record<string, unknown>) => newBackupStorageLocation('l', 'ns', { ...base, ...(signing !== undefined ? { signing } : {}) });
    expect(unsignedNote(bsl({ keySecretRef: { name: 's', key: 'hmac' } }))).toBeUndefined();
    expect(unsignedNote(bsl({ disabled: true }))).toBe('it is unsigned by choice (spec.signing.disabled: true): its backups are not tamper-evident');
    expect(unsignedNote(bsl())).toBeUndefined();
  });

  it('refuses a Stowage location with no spec.signing, naming both fixes; a Velero layout is exempt', () => {
    const bsl = (extra: Record<string, unknown> = {}) => newBackupStorageLocation('vault', 'ns', { ...base, ...extra });
    expect(missingSigningProblem(bsl(), 'Stowage', 'stowage')).toBe(
      'spec.signing is missing, and a Stowage location signs its backups unless told otherwise: set spec.signing.keySecretRef to an entry of a Secret in namespace stowage ' +
      'holding the signing key (a new one: kubectl -n stowage create secret generic vault-signing --from-literal=hmac="$(openssl rand -base64 48)", key hmac), ' +
      'or spec.signing.disabled: true to opt out (its backups are then not tamper-evident; a location made before signing was the default keeps its unsigned backups restorable this way, docs/install.md "Upgrading")',
    );
    // A ReadOnly location reads what another cluster signed: a fresh key would verify none of it.
    expect(missingSigningProblem(bsl({ accessMode: 'ReadOnly' }), 'Stowage', 'stowage')).toContain(
      'set spec.signing.keySecretRef to an entry of a Secret in namespace stowage holding the key its backups were signed with (a copy of the Secret of the cluster that wrote them), or spec.signing.disabled: true',
    );
    // null is what a merge patch that removed the field can leave behind in a client's copy.
    expect(missingSigningProblem(bsl({ signing: null }), 'Stowage', 'stowage')).toMatch(/^spec\.signing is missing/);
    expect(missingSigningProblem(bsl(), 'Velero', 'stowage')).toBeUndefined();
    expect(missingSigningProblem(bsl({ velero: true }), 'Velero', 'stowage')).toBeUndefined();
    expect(missingSigningProblem(bsl({ signing: { disabled: true } }), 'Stowage', 'stowage')).toBeUndefined();
    expect(missingSigningProblem(bsl({ signing: { keySecretRef: { name: 's', key: 'hmac' } } }), 'Stowage', 'stowage')).toBeUndefined();
  });
});
