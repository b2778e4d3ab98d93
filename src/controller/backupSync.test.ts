import { describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION } from '../auth/index.js';
import {
  ANNOTATION_SYNCED_FROM,
  LABEL_SCHEDULE_NAME,
  LABEL_STORAGE_LOCATION,
  newBackup,
  newBackupStorageLocation,
  type Backup,
  type BackupPhase,
  type BackupStorageLocation,
} from '../apis/v1/index.js';
import { importedBackup, importRefusal, planSync } from './backupSync.js';

function loc(name: string, isDefault = false): BackupStorageLocation {
  return newBackupStorageLocation(name, 'stowage', { provider: 'stowage.dev/aws', objectStorage: { bucket: 'b' }, ...(isDefault ? { default: true } : {}) });
}

function backup(name: string, phase: BackupPhase | undefined, location?: string): Backup {
  const b = newBackup(name, 'stowage', location === undefined ? {} : { storageLocation: location });
  if (phase !== undefined) b.status = { phase };
  return b;
}

const names = (bs: Backup[]): string[] => bs.map((b) => b.metadata.name).sort();

describe('planSync', () => {
  it('imports every bucket backup without a resource of that name', () => {
    const plan = planSync(['b3', 'b1', 'b2'], [backup('b2', 'Completed', 'primary')], loc('primary'), '');
    expect(plan.toImport).toEqual(['b1', 'b3']);
    expect(plan.toRemove).toEqual([]);
  });

  it('a resource of the same name in another location blocks the import', () => {
    expect(planSync(['b1'], [backup('b1', 'Completed', 'other')], loc('primary'), '').toImport).toEqual([]);
  });

  it('removes only Completed/PartiallyFailed resources of this location whose data is gone', () => {
    const cluster = [
      backup('done', 'Completed', 'primary'),
      backup('partial', 'PartiallyFailed', 'primary'),
      backup('failed', 'Failed', 'primary'),
      backup('invalid', 'FailedValidation', 'primary'),
      backup('running', 'InProgress', 'primary'),
      backup('new', 'New', 'primary'),
      backup('unset', undefined, 'primary'),
      backup('deleting', 'Deleting', 'primary'),
      backup('elsewhere', 'Completed', 'other'),
      backup('present', 'Completed', 'primary'),
    ];
    const plan = planSync(['present'], cluster, loc('primary'), '');
    expect(names(plan.toRemove)).toEqual(['done', 'partial']);
  });

  it('a backup without storageLocation belongs to the default location', () => {
    const cluster = [backup('implicit', 'Completed')];
    expect(names(planSync([], cluster, loc('primary', true), '').toRemove)).toEqual(['implicit']);
    expect(names(planSync([], cluster, loc('primary'), 'primary').toRemove)).toEqual(['implicit']);
    expect(names(planSync([], cluster, loc('primary'), 'other').toRemove)).toEqual([]);
  });
});

describe('importedBackup', () => {
  it('keeps the stored spec and labels, points at the local location, and marks the import', () => {
    const stored = newBackup('nightly-20240101000000', 'old-ns', { includedNamespaces: ['shop'], storageLocation: 'old-name', ttl: '24h' }, { [LABEL_SCHEDULE_NAME]: 'nightly' });
    // The stamp of whoever asked in the cluster that made it is dropped, with its seal: the webhook stamps and seals the server.
    stored.metadata.annotations = { note: 'x', [REQUESTER_ANNOTATION]: JSON.stringify({ username: 'alice', uid: '', groups: [] }), [SEAL_ANNOTATION]: 'v1 2024-01-01T00:00:00.000Z mac' };
    stored.metadata.uid = 'old-uid';
    stored.metadata.resourceVersion = '42';
    stored.status = { phase: 'Completed' };
    expect(importedBackup(stored, loc('primary'), 'stowage')).toEqual({
      apiVersion: 'stowage.dev/v1',
      kind: 'Backup',
      metadata: {
        name: 'nightly-20240101000000',
        namespace: 'stowage',
        labels: { [LABEL_SCHEDULE_NAME]: 'nightly', [LABEL_STORAGE_LOCATION]: 'primary' },
        annotations: { note: 'x', [ANNOTATION_SYNCED_FROM]: 'primary' },
      },
      spec: { includedNamespaces: ['shop'], storageLocation: 'primary', ttl: '24h' },
    });
  });
});

describe('importRefusal', () => {
  const plain = loc('primary');
  const required = newBackupStorageLocation('vault', 'stowage', { provider: 'stowage.dev/aws', objectStorage: { bucket: 'b' }, encryption: { keySecretRef: { name: 'kek', key: 'k1' }, required: true } });
  const key = { dataKey: Buffer.alloc(32), wrapped: { algorithm: 'AES-256-GCM-CHUNKED-v1', keyManager: 'stowage.dev/secret', keyId: 'k1', wrappedKey: Buffer.alloc(61) } };

  it('imports a finished backup under its own name, naming this location', () => {
    expect(importRefusal(backup('b1', 'Completed', 'primary'), plain, 'b1', 'unencrypted')).toBeUndefined();
    expect(importRefusal(backup('b1', 'PartiallyFailed', 'primary'), plain, 'b1', 'unencrypted')).toBeUndefined();
    expect(importRefusal(backup('b1', 'Completed', 'vault'), required, 'b1', key)).toBeUndefined();
  });

  it('refuses a backup naming another location or none, unless its verified signature covers that name', () => {
    expect(importRefusal(backup('b1', 'Completed', 'elsewhere'), plain, 'b1', 'unencrypted'))
      .toBe('its stowage-backup.json names location "elsewhere", not "primary" (only a signed backup is imported under another location\'s name)');
    expect(importRefusal(backup('b1', 'Completed'), plain, 'b1', 'unencrypted'))
      .toBe('its stowage-backup.json names no location, not "primary" (only a signed backup is imported under another location\'s name)');
    // An older marker of a backup to the default location names none: the default location takes it.
    expect(importRefusal(backup('b1', 'Completed'), loc('primary', true), 'b1', 'unencrypted')).toBeUndefined();
    const stored = backup('b1', 'Completed', 'elsewhere');
    stored.status = { phase: 'Completed', startTimestamp: '2026-01-01T00:00:00Z' };
    stored.metadata.labels = { 'stowage.dev/schedule-name': 'nightly' };
    const signed = {
      backup: 'b1', location: 'elsewhere', phase: 'Completed', startTimestamp: '2026-01-01T00:00:00Z', labels: { 'stowage.dev/schedule-name': 'nightly' },
      manifestSha256: '0'.repeat(64), resourceListSha256: '0'.repeat(64), tarballSha256: '0'.repeat(64),
    };
    expect(importRefusal(stored, plain, 'b1', 'unencrypted', signed)).toBeUndefined();
    expect(importRefusal(stored, plain, 'b1', 'unencrypted', { ...signed, location: 'primary' }))
      .toBe('its stowage-backup.json says location "elsewhere", the signature "primary": it was altered after the backup was made');
    expect(importRefusal(stored, plain, 'b1', 'unencrypted', { ...signed, labels: {} }))
      .toBe('its stowage-backup.json\'s labels are not the ones signed: it was altered after the backup was made');
    expect(importRefusal(stored, plain, 'b1', 'unencrypted', { ...signed, startTimestamp: '2025-01-01T00:00:00Z' }))
      .toBe('its stowage-backup.json says startTimestamp "2026-01-01T00:00:00Z", the signature "2025-01-01T00:00:00Z": it was altered after the backup was made');
  });

  it('refuses another name, an unfinished phase, and an unencrypted backup where encryption is required', () => {
    expect(importRefusal(backup('other', 'Completed'), plain, 'b1', 'unencrypted')).toBe('its stowage-backup.json describes a backup named "other"');
    for (const phase of ['InProgress', 'New', 'Failed', 'Deleting'] as const) {
      expect(importRefusal(backup('b1', phase), plain, 'b1', 'unencrypted')).toBe(`its stowage-backup.json records phase ${phase}, not a finished backup`);
    }
    expect(importRefusal(backup('b1', undefined), plain, 'b1', 'unencrypted')).toBe('its stowage-backup.json records phase (none), not a finished backup');
    expect(importRefusal(backup('b1', 'Completed'), required, 'b1', 'unencrypted'))
      .toBe('backup "b1" is not encrypted, and location "vault" requires encryption (spec.encryption.required)');
  });
});
