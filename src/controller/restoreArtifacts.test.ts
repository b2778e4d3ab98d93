import { describe, expect, it } from 'vitest';
import { newBackup, newBackupStorageLocation, newRestore, type Restore, type RestorePhase } from '../apis/v1/index.js';
import { mayHaveArtifacts, planArtifacts } from './restoreArtifacts.js';

function restore(phase: RestorePhase | undefined, backupName = 'b'): Restore {
  const r = newRestore('r', 'stowage', { backupName });
  if (phase !== undefined) r.status = { phase };
  return r;
}

const backup = newBackup('b', 'stowage', { storageLocation: 'loc' });
const location = newBackupStorageLocation('loc', 'stowage', { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'backups' } });

describe('restore artifacts', () => {
  it('holds only restores that may have written something', () => {
    expect(mayHaveArtifacts(undefined)).toBe(false);
    expect(mayHaveArtifacts('New')).toBe(false);
    expect(mayHaveArtifacts('FailedValidation')).toBe(false);
    for (const p of ['InProgress', 'Completed', 'PartiallyFailed', 'Failed']) expect(mayHaveArtifacts(p)).toBe(true);
  });

  it('waits for a running restore, deletes from the backup\'s location, and releases with the reason when it cannot', () => {
    expect(planArtifacts(restore('InProgress'), backup, location, 'loc')).toEqual({ action: 'wait' });
    expect(planArtifacts(restore('Completed'), backup, location, 'loc')).toEqual({ action: 'delete', location });
    expect(planArtifacts(restore('Failed'), backup, location, 'loc')).toEqual({ action: 'delete', location });
    expect(planArtifacts(restore('FailedValidation'), undefined, undefined, 'loc')).toEqual({ action: 'release' });
    expect(planArtifacts(restore('Completed'), undefined, undefined, '(default)')).toEqual({
      action: 'release',
      reason: 'backup "b" no longer exists, so which location holds restores/r/ is unknown; if it was not removed with the backup, it stays there',
    });
    expect(planArtifacts(restore('Completed'), backup, undefined, 'loc')).toEqual({
      action: 'release', reason: 'backup storage location "loc" no longer exists; restores/r/ stays in its bucket',
    });
    const readOnly = { ...location, spec: { ...location.spec, accessMode: 'ReadOnly' as const } };
    expect(planArtifacts(restore('PartiallyFailed'), backup, readOnly, 'loc')).toEqual({
      action: 'release', reason: 'backup storage location "loc" is ReadOnly, where Stowage writes and deletes nothing: a restore from it uploads no log or results, and restores/r/ stays in the bucket if it was written while the location was ReadWrite',
    });
    const velero = { ...location, spec: { ...location.spec, velero: true } };
    expect(planArtifacts(restore('Completed'), backup, velero, 'loc')).toEqual({
      action: 'release', reason: 'backup storage location "loc" holds Velero\'s backups, where Stowage writes nothing: this restore\'s log and results were never uploaded there',
    });
  });
});
