// Backup sync: makes the cluster's Backup resources match what each location's bucket holds, every
// backupSyncPeriod per location (default 1m), so a fresh cluster pointed at an old bucket can see
// and restore its backups.
// - Skipped while the location is not Available.
// - Import: every whole backup in the bucket (its stowage-backup.json exists) that has no Backup
//   resource of that name gets one: spec and status from stowage-backup.json, spec.storageLocation
//   rewritten to this location's name, the storage-location label, and the synced-from annotation.
//   The resource is created first and its status patched right after (status is a subresource).
//   Refused (with the reason, logged and in an event): a file larger than MAX_METADATA_BYTES, one
//   not finished or naming another backup or location (importRefusal), and, where the location
//   signs, one without a valid signature over its manifest, resource list, phase and labels.
// - Removal: a Backup resource of this location that was Completed or PartiallyFailed before the
//   bucket was listed, and whose stowage-backup.json is no longer there, is deleted (resource
//   only) when nothing at all is left under its backups/<b>/ directory. A backup whose marker is
//   gone but whose files are still there is kept, and the log and an event say so: what the
//   bucket lists must never delete a Backup whose data is still stored. Failed backups are left alone: the backup controller writes
//   no stowage-backup.json for them, so "not in the bucket" says nothing; GC expires them by TTL.
//   New, InProgress and Deleting backups are never touched.
// ReadOnly locations are synced too: sync writes nothing to storage.
// A Velero location (storage/open.ts isVeleroLocation) is synced from Velero's velero-backup.json files
// instead: its finished backups become read-only Backups labelled imported-from=velero
// (persistence/veleroBackup.ts), and are removed the same way when Velero's file goes.
import {
  ANNOTATION_SYNCED_FROM, API_VERSION, LABEL_STORAGE_LOCATION, RESOURCES, labelValue, type Backup, type BackupStatus, type BackupStorageLocation,
} from '../apis/v1/index.js';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION } from '../auth/index.js';
import { isAlreadyExists, isNotFound } from '../kube/index.js';
import type { BackupStore } from '../persistence/backupStore.js';
import type { ArtifactKey } from '../persistence/sealing.js';
import { importVeleroBackup } from '../persistence/veleroBackup.js';
import { isVeleroStore, VELERO_METADATA_FILE, type VeleroStore } from '../persistence/veleroStore.js';
import { BACKUP_METADATA_FILE } from '../persistence/layout.js';
import type { PluginHandle } from '../plugin/host/index.js';
import type { Result } from '../runtime/index.js';
import { safeErrorMessage } from '../util/errors.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import { readStoredBackup, unencryptedRefusal } from '../storage/keys.js';
import { withBackupStore } from '../storage/open.js';
import { statementMismatch, verifyStoredSignature } from '../storage/signatures.js';
import type { SignedStatement } from '../signing/index.js';
import { periodOr } from './run/locations.js';
import { stamp } from './run/runs.js';

const BACKUPS = RESOURCES.Backup;
const BSLS = RESOURCES.BackupStorageLocation;

export interface SyncPlan {
  /** Names in the bucket with no Backup resource. */
  toImport: string[];
  /** Backup resources of this location whose data is gone. */
  toRemove: Backup[];
}

/**
 * Compares the bucket's backup names with the Backup resources (a snapshot taken BEFORE listing
 * the bucket, so a backup that completes during the listing is not mistaken for a deleted one). Pure.
 */
export function planSync(bucketNames: readonly string[], clusterBackups: readonly Backup[], location: BackupStorageLocation, defaultLocation: string): SyncPlan {
  const inBucket = new Set(bucketNames);
  const inCluster = new Set(clusterBackups.map((b) => b.metadata.name));
  const name = location.metadata.name;
  const isOurs = (b: Backup): boolean => {
    const l = b.spec.storageLocation;
    if (l !== undefined && l !== '') return l === name;
    return location.spec.default === true || (defaultLocation !== '' && defaultLocation === name);
  };
  return {
    toImport: bucketNames.filter((n) => !inCluster.has(n)).sort(),
    toRemove: clusterBackups.filter(
      (b) => isOurs(b) && (b.status?.phase === 'Completed' || b.status?.phase === 'PartiallyFailed') && !inBucket.has(b.metadata.name),
    ),
  };
}

/**
 * The stored annotations less the requester stamp: whoever asked for the backup in the cluster
 * that made it is nobody here; the Backup this server creates is stamped with the server's own
 * identity by the admission webhook (and a stale stamp would not pass it anyway).
 */
function withoutRequester(annotations: Record<string, string> | undefined): Record<string, string> {
  const { [REQUESTER_ANNOTATION]: _dropped, [SEAL_ANNOTATION]: _seal, ...rest } = annotations ?? {};
  return rest;
}

/** The Backup resource to create for a backup found in `location`'s bucket (status goes in separately). */
export function importedBackup(stored: Backup, location: BackupStorageLocation, namespace: string): Backup {
  const locationName = location.metadata.name;
  return {
    apiVersion: API_VERSION,
    kind: 'Backup',
    metadata: {
      name: stored.metadata.name,
      namespace,
      labels: { ...(stored.metadata.labels ?? {}), [LABEL_STORAGE_LOCATION]: labelValue(locationName) },
      annotations: { ...withoutRequester(stored.metadata.annotations), [ANNOTATION_SYNCED_FROM]: locationName },
    },
    spec: { ...structuredClone(stored.spec ?? {}), storageLocation: locationName },
  };
}

/**
 * Why a stowage-backup.json read from the bucket is not imported, or undefined. Only a finished
 * backup is (a run writes the file last, as Completed or PartiallyFailed: any other phase was not
 * written by a run), under its own name, naming this location, and, where the location requires
 * encryption, encrypted. `signed`: what its verified signature covers (a signing location's). A
 * backup naming another location is imported only with a verified signature for that name: a
 * disaster-recovery cluster's location reading the bucket under another name (docs/security.md).
 */
export function importRefusal(stored: Backup, bsl: BackupStorageLocation, name: string, key: ArtifactKey, signed?: SignedStatement): string | undefined {
  if (stored.metadata.name !== name) return `its stowage-backup.json describes a backup named "${stored.metadata.name}"`;
  const phase = stored.status?.phase;
  if (phase !== 'Completed' && phase !== 'PartiallyFailed') return `its stowage-backup.json records phase ${phase ?? '(none)'}, not a finished backup`;
  const unencrypted = unencryptedRefusal(bsl, name, key);
  if (unencrypted !== undefined) return unencrypted;
  const mismatch = signed !== undefined ? statementMismatch(signed, stored) : undefined;
  if (mismatch !== undefined) return mismatch;
  const marked = stored.spec?.storageLocation ?? '';
  // Markers written before they recorded their location left it empty for the default location's backups.
  const namesThis = marked === bsl.metadata.name || (marked === '' && bsl.spec.default === true);
  if (!namesThis && signed === undefined) {
    return `its stowage-backup.json names ${marked === '' ? 'no location' : `location "${marked}"`}, not "${bsl.metadata.name}" (only a signed backup is imported under another location's name)`;
  }
  return undefined;
}

function syncPeriodMs(ctx: ControllerContext, bsl: BackupStorageLocation): number {
  return periodOr(bsl.spec.backupSyncPeriod, 'backupSyncPeriod', ctx.config.backupSyncPeriod);
}

type Found = { backup: Backup; status: BackupStatus } | { refusal: string } | undefined;

/** A Stowage backup of the bucket as the Backup resource to create, from its stowage-backup.json. */
async function readStowageImport(
  ctx: ControllerContext, handle: PluginHandle, bsl: BackupStorageLocation, store: BackupStore, name: string, namespace: string,
): Promise<Found> {
  const read = await readStoredBackup(ctx, handle, bsl, store, name);
  if (read === undefined) return undefined;
  // A signing location's backup is verified before anything of its stowage-backup.json is believed.
  const verified = await verifyStoredSignature(ctx, bsl, read.store, name);
  const refusal = importRefusal(read.backup, bsl, name, read.key, verified?.statement);
  if (refusal !== undefined) return { refusal };
  // status.signature says sync verified the signature (labels are trusted for it): never copied unverified.
  const { signature: _unverified, ...status } = read.backup.status ?? {};
  return { backup: importedBackup(read.backup, bsl, namespace), status: verified !== undefined ? { ...status, signature: verified.status } : status };
}

/** A Velero backup of the bucket as the read-only Backup resource to create, from its velero-backup.json. */
async function readVeleroImport(store: VeleroStore, name: string, location: string, namespace: string): Promise<Found> {
  const raw = await store.getVeleroBackup(name);
  return raw === undefined ? undefined : importVeleroBackup(raw, name, location, namespace);
}

export interface SyncResult {
  imported: string[];
  removed: string[];
  /** Backups whose marker file is gone but whose data is still in the bucket, and why they stay. */
  kept: { name: string; reason: string }[];
  /** Backups that could not be imported, with the reason. */
  failed: { name: string; reason: string }[];
}

/** Why sync removes a Backup: said in the log and the location's event. */
export const REMOVED_REASON = 'nothing of it is left in object storage (no file under its backups/ directory)';

/** One sync of one location, now. Throws when the bucket cannot be listed. */
export async function syncLocation(ctx: ControllerContext, bsl: BackupStorageLocation): Promise<SyncResult> {
  const locationName = bsl.metadata.name;
  const namespace = bsl.metadata.namespace ?? ctx.namespace;
  // Snapshot the cluster before listing the bucket (see planSync).
  const clusterBackups = ctx.informer<Backup>('Backup').list().filter((b) => (b.metadata.namespace ?? '') === namespace);
  const result: SyncResult = { imported: [], removed: [], kept: [], failed: [] };
  await withBackupStore(ctx, bsl, { kind: 'controller', namespace, name: `backup-sync/${locationName}` }, async ({ handle, store }) => {
    const names = await store.listBackupNames();
    const plan = planSync(names, clusterBackups, bsl, ctx.config.defaultBackupStorageLocation);
    for (const name of plan.toImport) {
      try {
        const found = isVeleroStore(store)
          ? await readVeleroImport(store, name, locationName, namespace)
          : await readStowageImport(ctx, handle, bsl, store, name, namespace);
        if (found === undefined) continue; // deleted since the listing
        if ('refusal' in found) {
          result.failed.push({ name, reason: found.refusal });
          continue;
        }
        try {
          await ctx.client.create(BACKUPS, namespace, found.backup);
        } catch (err) {
          if (isAlreadyExists(err)) continue; // created meanwhile (by its own backup run or another sync)
          throw err;
        }
        await ctx.client.patchStatus(BACKUPS, namespace, name, { status: found.status });
        result.imported.push(name);
      } catch (err) {
        result.failed.push({ name, reason: safeErrorMessage(err) });
      }
    }
    const marker = isVeleroStore(store) ? VELERO_METADATA_FILE : BACKUP_METADATA_FILE;
    for (const b of plan.toRemove) {
      try {
        const left = await store.storedKeys(b.metadata.name);
        if (left.length > 0) {
          const n = left.length;
          result.kept.push({
            name: b.metadata.name,
            reason: `its ${marker} is not in the bucket, but ${n} of its file${n === 1 ? ' is' : 's are'} (${left.slice(0, 3).join(', ')}${n > 3 ? ', ...' : ''}), so its Backup is kept`,
          });
          continue;
        }
        await ctx.client.delete(BACKUPS, namespace, b.metadata.name, { preconditions: { uid: b.metadata.uid } });
        result.removed.push(b.metadata.name);
      } catch (err) {
        if (!isNotFound(err)) result.failed.push({ name: b.metadata.name, reason: `removing its Backup resource failed: ${safeErrorMessage(err)}` });
      }
    }
  });
  return result;
}

export function backupSyncController(ctx: ControllerContext): ControllerDefinition {
  const locations = ctx.informer<BackupStorageLocation>('BackupStorageLocation');
  const backups = ctx.informer<Backup>('Backup');
  // Elapsed time per location (not ctx.clock, which tests may freeze) paces the syncs.
  const lastSync = new Map<string, number>();
  return {
    name: 'backup-sync',
    // Backups are read from the cache (it must be synced); their events enqueue nothing.
    watches: [locations, readsFrom(backups)],
    reconciler: {
      async reconcile(key): Promise<Result> {
        const bsl = locations.get(key);
        if (bsl === undefined) {
          lastSync.delete(key);
          return;
        }
        const period = syncPeriodMs(ctx, bsl);
        if (period <= 0) return;
        const last = lastSync.get(key);
        const elapsed = last === undefined ? Infinity : performance.now() - last;
        if (elapsed < period) return { requeueAfter: period - elapsed };
        // Not validated yet, or Unavailable: the validation's status update brings the key back.
        if (bsl.status?.phase !== 'Available') return { requeueAfter: period };
        lastSync.set(key, performance.now());
        const where = `backup sync of location ${bsl.metadata.name}`;
        let result: SyncResult;
        try {
          result = await syncLocation(ctx, bsl);
        } catch (err) {
          ctx.logger.warn(`${where} failed: ${safeErrorMessage(err)}`, { location: bsl.metadata.name });
          return { requeueAfter: period };
        }
        for (const name of result.imported) {
          ctx.logger.info(`${where}: imported backup ${name} from object storage`, { location: bsl.metadata.name });
        }
        for (const name of result.removed) {
          ctx.logger.info(`${where}: removed Backup ${name}: ${REMOVED_REASON}`, { location: bsl.metadata.name });
        }
        for (const k of result.kept) {
          ctx.logger.warn(`${where}: backup ${k.name}: ${k.reason}`, { location: bsl.metadata.name });
        }
        for (const f of result.failed) {
          ctx.logger.warn(`${where}: backup ${f.name}: ${f.reason}`, { location: bsl.metadata.name });
        }
        if (result.imported.length > 0 || result.removed.length > 0 || result.kept.length > 0 || result.failed.length > 0) {
          const parts = [`${result.imported.length} imported`, `${result.removed.length} removed${result.removed.length > 0 ? ` (${result.removed.join(', ')}: ${REMOVED_REASON})` : ''}`];
          if (result.kept.length > 0) parts.push(`${result.kept.length} kept (${result.kept.map((k) => `${k.name}: ${k.reason}`).join('; ')})`);
          if (result.failed.length > 0) parts.push(`${result.failed.length} failed (${result.failed.map((f) => `${f.name}: ${f.reason}`).join('; ')})`);
          void ctx.events.event(bsl, result.failed.length > 0 || result.kept.length > 0 ? 'Warning' : 'Normal', 'BackupSync', parts.join(', '));
        }
        try {
          await ctx.client.patchStatus(BSLS, bsl.metadata.namespace, bsl.metadata.name, { status: { lastSyncedTime: stamp(ctx.clock.now()) } });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        return { requeueAfter: period };
      },
    },
  };
}
