// Restore artifacts controller: deleting a Restore also deletes what it wrote to object storage
// (restores/<r>/: its log, results and resource list), as Velero does.
//
// A Restore that has started (any phase but New and FailedValidation, which write nothing) gets
// the finalizer RESTORE_ARTIFACTS_FINALIZER. When the Restore is deleted:
// - while it is InProgress, nothing happens yet: its run writes the artifacts as it ends, and the
//   phase change brings the Restore back here;
// - otherwise restores/<r>/ is deleted from the location of the restore's backup, then the
//   finalizer is removed and the Restore goes.
// The finalizer is removed without deleting anything, with a Warning event and a log line naming
// what stays, when nothing can be deleted: the backup or its location no longer exists (a backup
// deleted with a DeleteBackupRequest took its restores' artifacts with it), or the location is
// ReadOnly. When the deletion fails (the store is unreachable) the finalizer stays and the
// deletion is retried with backoff; each failure is an event on the Restore saying why.
import { RESOURCES, RESTORE_ARTIFACTS_FINALIZER, type Backup, type BackupStorageLocation, type Restore } from '../apis/v1/index.js';
import type { Result } from '../runtime/index.js';
import { safeErrorMessage } from '../util/errors.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import { resolveLocation } from './run/locations.js';
import { isReadOnly, isVeleroLocation, withBackupStore } from '../storage/open.js';
import { changedMeanwhile } from './run/patch.js';

const RESTORES = RESOURCES.Restore;

/** Whether a restore in this phase may have written artifacts (New and FailedValidation never do). */
export function mayHaveArtifacts(phase: string | undefined): boolean {
  return phase !== undefined && phase !== 'New' && phase !== 'FailedValidation';
}

/** What deleting a Restore means for its artifacts, decided from the caches. Pure. */
export type ArtifactsPlan =
  | { action: 'wait' }
  | { action: 'release'; reason?: string }
  | { action: 'delete'; location: BackupStorageLocation };

export function planArtifacts(r: Restore, backup: Backup | undefined, location: BackupStorageLocation | undefined, locationName: string): ArtifactsPlan {
  const phase = r.status?.phase;
  if (phase === 'InProgress') return { action: 'wait' };
  if (!mayHaveArtifacts(phase)) return { action: 'release' };
  const where = `restores/${r.metadata.name}/`;
  const backupName = r.spec.backupName ?? '';
  if (backupName === '' || backup === undefined) {
    return { action: 'release', reason: `backup "${backupName}" no longer exists, so which location holds ${where} is unknown; if it was not removed with the backup, it stays there` };
  }
  if (location === undefined) return { action: 'release', reason: `backup storage location "${locationName}" no longer exists; ${where} stays in its bucket` };
  // Stowage never writes into a Velero bucket, so a restore from one left nothing there to delete.
  if (isVeleroLocation(location)) return { action: 'release', reason: `backup storage location "${location.metadata.name}" holds Velero's backups, where Stowage writes nothing: this restore's log and results were never uploaded there` };
  // Nor into a ReadOnly one (a restore from it keeps its log and results out of the bucket).
  if (isReadOnly(location)) return { action: 'release', reason: `backup storage location "${location.metadata.name}" is ReadOnly, where Stowage writes and deletes nothing: a restore from it uploads no log or results, and ${where} stays in the bucket if it was written while the location was ReadWrite` };
  return { action: 'delete', location };
}

export function restoreArtifactsController(ctx: ControllerContext): ControllerDefinition {
  const restores = ctx.informer<Restore>('Restore');
  const backups = ctx.informer<Backup>('Backup');
  const locations = ctx.informer<BackupStorageLocation>('BackupStorageLocation');
  return {
    name: 'restore-artifacts',
    // Backups and locations are read from their caches; their events enqueue nothing.
    watches: [restores, readsFrom(backups), readsFrom(locations)],
    reconciler: {
      async reconcile(key: string): Promise<Result> {
        const r = restores.get(key);
        if (r === undefined) return;
        const ns = r.metadata.namespace ?? '';
        await reconcileArtifacts(ctx, key, r, r.spec.backupName === undefined ? undefined : backups.get(`${ns}/${r.spec.backupName}`));
      },
    },
  };
}

/** Sets the finalizer list, conditional on the version read: a Conflict means a newer event is on its way. */
async function setFinalizers(ctx: ControllerContext, r: Restore, finalizers: string[]): Promise<void> {
  try {
    await ctx.client.patch(RESTORES, r.metadata.namespace, r.metadata.name, {
      metadata: { resourceVersion: r.metadata.resourceVersion, finalizers: finalizers.length > 0 ? finalizers : null },
    }, 'merge');
  } catch (err) {
    if (changedMeanwhile(err)) return;
    throw err;
  }
}

/** The finalizer added to a restore that may have written artifacts, or, once it is deleted, its artifacts deleted (or kept, saying why) and the finalizer removed. */
async function reconcileArtifacts(ctx: ControllerContext, key: string, r: Restore, backup: Backup | undefined): Promise<void> {
  const held = (r.metadata.finalizers ?? []).includes(RESTORE_ARTIFACTS_FINALIZER);
  const where = `restore ${key}`;
  if (r.metadata.deletionTimestamp === undefined) {
    if (!held && mayHaveArtifacts(r.status?.phase)) await setFinalizers(ctx, r, [...(r.metadata.finalizers ?? []), RESTORE_ARTIFACTS_FINALIZER]);
    return;
  }
  if (!held) return;
  const locationName = backup?.spec.storageLocation ?? '(default)';
  const plan = planArtifacts(r, backup, backup === undefined ? undefined : resolveLocation(ctx, backup.spec.storageLocation), locationName);
  if (plan.action === 'wait') return;
  if (plan.action === 'delete') {
    const bucket = `bucket "${plan.location.spec.objectStorage.bucket}" of location "${plan.location.metadata.name}"`;
    const ns = r.metadata.namespace ?? ctx.namespace;
    try {
      await withBackupStore(ctx, plan.location, { kind: 'controller', namespace: ns, name: `restore-artifacts/${r.metadata.name}` }, ({ store }) => store.deleteRestore(r.metadata.name));
    } catch (err) {
      const message = `deleting restores/${r.metadata.name}/ from ${bucket} failed, retrying: ${safeErrorMessage(err)}`;
      void ctx.events.event(r, 'Warning', 'ArtifactsNotDeleted', message);
      throw new Error(`${where}: ${message}`);
    }
    ctx.logger.info(`${where}: deleted its log and results (restores/${r.metadata.name}/) from ${bucket}`, { restore: key });
  } else if (plan.reason !== undefined) {
    void ctx.events.event(r, 'Warning', 'ArtifactsKept', plan.reason);
    ctx.logger.warn(`${where} deleted: ${plan.reason}`, { restore: key });
  }
  await setFinalizers(ctx, r, (r.metadata.finalizers ?? []).filter((f) => f !== RESTORE_ARTIFACTS_FINALIZER));
}
