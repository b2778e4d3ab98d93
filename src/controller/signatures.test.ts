import { describe, expect, it } from 'vitest';
import { LABEL_SCHEDULE_NAME, newBackup, newBackupStorageLocation } from '../apis/v1/index.js';
import type { SignedStatement } from '../signing/index.js';
import { latestBackupOfSchedule } from './run/resolveBackup.js';
import { labelsTrusted, scheduleMismatch, signs } from '../storage/signatures.js';

const base = { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' } };
const signing = newBackupStorageLocation('s', 'ns', { ...base, signing: { keySecretRef: { name: 'k', key: 'hmac' } } });
const plain = newBackupStorageLocation('p', 'ns', base);

function scheduled(name: string, start: string, signature?: boolean) {
  const b = newBackup(name, 'ns', { storageLocation: 's' }, { [LABEL_SCHEDULE_NAME]: 'nightly' });
  b.status = { phase: 'Completed', startTimestamp: start, ...(signature === true ? { signature: { algorithm: 'HMAC-SHA256', keyId: 'hmac' } } : {}) };
  return b;
}

describe('trust in labels that steer selection', () => {
  it('trusts a synced backup of a signing location only when sync verified its signature', () => {
    expect(signs(signing)).toBe(true);
    expect(signs(plain)).toBe(false);
    expect(labelsTrusted(scheduled('a', '2026-01-01T00:00:00Z'), undefined, signing)).toBe(true);
    expect(labelsTrusted(scheduled('a', '2026-01-01T00:00:00Z'), 's', signing)).toBe(false);
    expect(labelsTrusted(scheduled('a', '2026-01-01T00:00:00Z', true), 's', signing)).toBe(true);
    expect(labelsTrusted(scheduled('a', '2026-01-01T00:00:00Z'), 'p', plain)).toBe(true);
  });

  it('a restore from a schedule passes over an untrusted newer backup', () => {
    const older = scheduled('older', '2026-01-01T00:00:00Z', true);
    const newer = scheduled('newer', '2026-01-02T00:00:00Z');
    expect(latestBackupOfSchedule([older, newer], 'nightly')?.metadata.name).toBe('newer');
    expect(latestBackupOfSchedule([older, newer], 'nightly', (b) => b.status?.signature !== undefined)?.metadata.name).toBe('older');
  });

  it('checks the signed schedule label of a restore from a schedule', () => {
    const s: SignedStatement = {
      backup: 'b', location: 's', phase: 'Completed', startTimestamp: '', labels: { [LABEL_SCHEDULE_NAME]: 'nightly' },
      manifestSha256: '0'.repeat(64), resourceListSha256: '0'.repeat(64), tarballSha256: '0'.repeat(64),
    };
    expect(scheduleMismatch(s, 'b', 'nightly')).toBeUndefined();
    expect(scheduleMismatch(s, 'b', undefined)).toBeUndefined();
    expect(scheduleMismatch(s, 'b', 'weekly')).toBe('backup "b" is not signed as a backup of schedule "weekly" (its signed stowage.dev/schedule-name label is "nightly")');
    expect(scheduleMismatch({ ...s, labels: {} }, 'b', 'weekly')).toBe('backup "b" is not signed as a backup of schedule "weekly" (its signed stowage.dev/schedule-name label is absent)');
  });
});
