// DeleteBackupRequest controller: deletes a backup completely.
//
// Order, so that whatever fails leaves something that can be retried:
//   1. refuse (Processed with the reason, nothing touched) when the request has no requester (trust
//      mode requester), the backup does not exist, the requester could neither have made it nor
//      restore everything in it (controller/run/backupRights.ts), it is still running, or its location
//      is missing, ReadOnly or Unavailable;
//   2. mark the Backup Deleting (GC and sync leave it alone);
//   3. delete the CSI snapshots the backup kept (volumes/remove.ts; a snapshot that cannot be deleted
//      is named, and the backup stays so the request can be made again);
//   3b. run the DeleteItemAction plugins on the backup's items (read from its tarball);
//   4. delete every object of the backup from storage (stowage-backup.json first, so a half-deleted
//      backup is never synced back), and the restores/<r>/ artifacts of its Restores;
//   5. delete the Restore resources that reference the backup, then the Backup resource.
// If step 3, 3b or 4 fails, nothing more is deleted, the Backup gets its phase back, and the request
// ends Processed with every error listed. Retrying means a new DeleteBackupRequest: GC makes one
// on its next run for an expired backup, and `stowage backup delete` makes one on demand. (A
// Processed request is never re-run: its errors stay as the record of that attempt.)
// A request found InProgress that this server is not working on was left by a server that died;
// it is simply run again (every step tolerates what an earlier attempt already did).
// Processed requests are deleted 24h after creation.
import {
  RESOURCES, type Backup, type BackupPhase, type BackupStorageLocation, type DeleteBackupRequest, type DeleteBackupRequestStatus, type Restore,
} from '../apis/v1/index.js';
import { createSpillFile, loadSpilled, spillArchive, type ItemIdentity, type SpillFile, type SpilledItem } from '../archive/index.js';
import { isNotFound as isKubeNotFound } from '../kube/index.js';
import { isNotFound as isStoreNotFound, type BackupStore } from '../persistence/backupStore.js';
import type { DeleteItemAction, KubeObject } from '../plugin/api/index.js';
import type { Informer, Result } from '../runtime/index.js';
import { safeErrorMessage } from '../util/errors.js';
import { namespaceFilter, resourceFilter } from '../selection/filters.js';
import { labelSelectorMatches, parseLabelSelector } from '../selection/labels.js';
import { isVeleroImport, VELERO_DELETE_NOTE } from '../persistence/veleroBackup.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import { hasStoredData, locationBlocksDeletion } from '../schedule/gc.js';
import { backupRefusal } from './run/backupRights.js';
import { resolveLocation } from './run/locations.js';
import { withBackupStore } from '../storage/open.js';
import { spillDirOf } from './restore.js';
import { statusPatch, unlessChanged } from './run/patch.js';
import { systemClock } from '../util/clock.js';
import { deleteBackupSnapshots } from '../volumes/index.js';

const DBRS = RESOURCES.DeleteBackupRequest;
const BACKUPS = RESOURCES.Backup;
const RESTORES = RESOURCES.Restore;
/** Processed requests are removed this long after they were created. */
export const PROCESSED_REQUEST_TTL_MS = 24 * 3_600_000;

export interface NamedDeleteItemAction {
  name: string;
  action: DeleteItemAction;
}

/** What the actions are matched on: an item's identity and its labels (`picked` while the archive was read). */
export type DeletionItem = Pick<ItemIdentity, 'groupResource' | 'namespace' | 'name'> & { picked: Record<string, string> | undefined };

function describeItem(item: DeletionItem): string {
  return `${item.groupResource} ${item.namespace !== undefined ? `${item.namespace}/` : ''}${item.name}`;
}

/**
 * Runs each action on the items its AppliesTo selects (in archive order), reading each object with
 * `load` only when an action takes it. Never throws: returns one precise message per failure,
 * naming the plugin and the item.
 */
export async function runDeleteItemActions<T extends DeletionItem>(
  actions: readonly NamedDeleteItemAction[],
  items: readonly T[],
  load: (item: T) => Promise<KubeObject>,
  backup: KubeObject,
): Promise<string[]> {
  const errors: string[] = [];
  for (const { name, action } of actions) {
    let matches: (item: T) => boolean;
    try {
      const sel = await action.appliesTo();
      const ns = namespaceFilter(sel.includedNamespaces, sel.excludedNamespaces);
      const rs = resourceFilter(sel.includedResources, sel.excludedResources);
      const labels = sel.labelSelector === '' ? undefined : parseLabelSelector(sel.labelSelector);
      matches = (item) =>
        (item.namespace === undefined ? ns.includesEverything() : ns.shouldInclude(item.namespace)) &&
        rs.shouldInclude(item.groupResource) &&
        labelSelectorMatches(labels, item.picked);
    } catch (err) {
      const msg = safeErrorMessage(err);
      errors.push(msg.includes(name) ? msg : `DeleteItemAction ${name}: AppliesTo failed: ${msg}`);
      continue;
    }
    for (const item of items) {
      if (!matches(item)) continue;
      try {
        await action.execute({ item: await load(item), backup });
      } catch (err) {
        const msg = safeErrorMessage(err);
        // Errors from plugin processes already name the plugin (and its executable).
        errors.push(msg.includes(name) ? `${describeItem(item)}: ${msg}` : `DeleteItemAction ${name} on ${describeItem(item)}: ${msg}`);
      }
    }
  }
  return errors;
}

/** Why the backup cannot be deleted now, or undefined. Pure. */
export function deletionRefusal(backup: Backup, locations: readonly BackupStorageLocation[], defaultLocation: string): string | undefined {
  const phase = backup.status?.phase;
  if (phase === undefined || phase === 'New' || phase === 'InProgress') {
    return `backup "${backup.metadata.name}" is still ${phase ?? 'New'}; delete it once it has finished`;
  }
  if (!hasStoredData(backup) || isVeleroImport(backup)) return undefined;
  return locationBlocksDeletion(backup, locations, defaultLocation);
}

export function deleteBackupRequestController(ctx: ControllerContext): ControllerDefinition {
  const requests = ctx.informer<DeleteBackupRequest>('DeleteBackupRequest');
  const x: Deletions = { ctx, locations: ctx.informer<BackupStorageLocation>('BackupStorageLocation'), restores: ctx.informer<Restore>('Restore') };
  /** Requests this server is working on right now (keys). */
  const working = new Set<string>();
  return {
    name: 'delete-backup-request',
    // Locations and Restores are read from their caches, so they must be synced; their events enqueue nothing.
    watches: [requests, readsFrom(x.locations), readsFrom(x.restores)],
    workers: 2,
    reconciler: {
      async reconcile(key): Promise<Result> {
        const d = requests.get(key);
        if (d === undefined) return;
        const phase = d.status?.phase ?? 'New';
        if (phase === 'Processed') return removeWhenDue(ctx, d);
        if (phase === 'InProgress' && working.has(key)) return;
        if (ctx.shutdown.aborted) return;
        // Another request for the same backup in flight here: wait for it rather than race it.
        const busy = [...working].some((k) => k !== key && requests.get(k)?.spec.backupName === d.spec.backupName && requests.get(k)?.metadata.namespace === d.metadata.namespace);
        if (busy) return { requeueAfter: 2000 };
        working.add(key);
        try {
          await processRequest(x, d);
        } finally {
          working.delete(key);
        }
        return;
      },
    },
  };
}

/** What a deletion reads besides the server's context: the caches of locations and of Restores. */
interface Deletions {
  ctx: ControllerContext;
  locations: Informer<BackupStorageLocation>;
  restores: Informer<Restore>;
}

/** A processed request is removed PROCESSED_REQUEST_TTL_MS after it was created. */
async function removeWhenDue(ctx: ControllerContext, d: DeleteBackupRequest): Promise<Result> {
  const created = Date.parse(d.metadata.creationTimestamp ?? '');
  const left = (Number.isNaN(created) ? 0 : created) + PROCESSED_REQUEST_TTL_MS - ctx.clock.now().getTime();
  if (left > 0) return { requeueAfter: Math.min(left, 3_600_000) };
  try {
    await ctx.client.delete(DBRS, d.metadata.namespace, d.metadata.name);
  } catch (err) {
    if (!isKubeNotFound(err)) throw err;
  }
  return;
}

function patchRequestStatus(
  ctx: ControllerContext, d: DeleteBackupRequest, status: Partial<Record<keyof DeleteBackupRequestStatus, unknown>>, resourceVersion?: string,
): Promise<DeleteBackupRequest> {
  return ctx.client.patchStatus<DeleteBackupRequest>(DBRS, d.metadata.namespace, d.metadata.name, statusPatch(status, resourceVersion));
}

function setBackupPhase(ctx: ControllerContext, b: Backup, phase: BackupPhase): Promise<unknown> {
  return ctx.client.patchStatus(BACKUPS, b.metadata.namespace, b.metadata.name, { status: { phase } });
}

/**
 * Reads the backup's tarball whole (spilling its items to disk, so memory does not grow with the
 * backup), then runs the DeleteItemActions on its items. Returns every error.
 */
async function runActionsOnTarball(
  ctx: ControllerContext, store: BackupStore, actions: readonly NamedDeleteItemAction[], backup: Backup, bucket: string,
): Promise<string[]> {
  const name = backup.metadata.name;
  let spill: SpillFile | undefined;
  try {
    let items: SpilledItem<Record<string, string> | undefined>[];
    try {
      spill = await createSpillFile(spillDirOf(ctx));
      items = (await spillArchive(await store.getTarball(name), spill, { pick: (o) => o.metadata.labels, keepEntries: false, limits: { maxEntryBytes: ctx.config.maxItemBytes } })).items;
    } catch (err) {
      // No tarball (e.g. a Failed backup): there are no items for the actions to clean up.
      if (isStoreNotFound(err)) return [];
      return [`reading the backup's tarball from ${bucket} for the DeleteItemAction plugins (${actions.map((a) => a.name).join(', ')}) failed: ${safeErrorMessage(err)}`];
    }
    const from = spill;
    return await runDeleteItemActions(actions, items, (it) => loadSpilled(from, it), backup);
  } finally {
    await spill?.close().catch(() => undefined);
  }
}

/** The backup's objects in its location, after the DeleteItemActions on its items; the errors, or undefined once they are gone. */
async function deleteStoredData(ctx: ControllerContext, d: DeleteBackupRequest, backup: Backup, ownRestores: readonly Restore[]): Promise<string[] | undefined> {
  const { namespace = ctx.namespace, name } = backup.metadata;
  const location = resolveLocation(ctx, backup.spec.storageLocation);
  if (location === undefined) return [`backup storage location "${backup.spec.storageLocation ?? ''}" disappeared during the deletion`];
  const bucket = `bucket "${location.spec.objectStorage.bucket}" of location "${location.metadata.name}"`;
  return withBackupStore(ctx, location, { kind: 'controller', namespace, name: `deletebackuprequest/${d.metadata.name}` }, async ({ handle, store, keyedFor }) => {
    const actions = handle.deleteItemActions().map((a) => ({ name: a.name, action: a }));
    if (actions.length > 0) {
      let keyed: typeof store;
      try {
        keyed = await keyedFor(backup);
      } catch (err) {
        return [`the backup's tarball cannot be read for the DeleteItemAction plugins: ${safeErrorMessage(err)}`];
      }
      const errors = await runActionsOnTarball(ctx, keyed, actions, backup, bucket);
      if (errors.length > 0) return errors;
    }
    try {
      await store.deleteBackup(name, ownRestores.map((r) => r.metadata.name));
    } catch (err) {
      return [`deleting the backup's objects from ${bucket} failed: ${safeErrorMessage(err)}`];
    }
    return undefined;
  }).catch((err: unknown) => [`opening ${bucket} failed: ${safeErrorMessage(err)}`]);
}

/** Deletes the backup; returns every error (empty on success). */
async function deleteBackup(x: Deletions, d: DeleteBackupRequest, backup: Backup): Promise<string[]> {
  const { ctx } = x;
  const { namespace = ctx.namespace, name } = backup.metadata;
  const previous = backup.status?.phase ?? 'Completed';
  // Refs whose Restore resources go with it (only in the backup's namespace, where they live).
  const ownRestores = x.restores.list().filter((r) => r.spec.backupName === name && (r.metadata.namespace ?? '') === namespace);
  if (previous !== 'Deleting') await setBackupPhase(ctx, backup, 'Deleting');
  void ctx.events.event(backup, 'Normal', 'Deleting', `deletion requested by DeleteBackupRequest ${d.metadata.name}`);

  // Whatever its phase or location: a Failed backup may have kept snapshots before it failed.
  const snapshots = await deleteBackupSnapshots({
    serverClient: ctx.client, clock: ctx.timer ?? systemClock, signal: ctx.shutdown, timeoutMs: ctx.config.csiSnapshotDeleteTimeout,
  }, backup.metadata.uid ?? '');
  if (snapshots.deleted.length > 0) {
    ctx.logger.info(`backup ${namespace}/${name}: deleted ${snapshots.deleted.length} VolumeSnapshotContents and their snapshots: ${snapshots.deleted.join(', ')}`, { backup: `${namespace}/${name}` });
  }
  if (snapshots.errors.length > 0) return snapshots.errors;

  // An imported Velero backup's data is Velero's: only the resources go (persistence/veleroStore.ts refuses the deletion anyway).
  if (hasStoredData(backup) && !isVeleroImport(backup)) {
    const failed = await deleteStoredData(ctx, d, backup, ownRestores);
    if (failed !== undefined) return failed;
  }

  const errors: string[] = [];
  for (const r of ownRestores) {
    try {
      await ctx.client.delete(RESTORES, r.metadata.namespace, r.metadata.name);
    } catch (err) {
      if (!isKubeNotFound(err)) errors.push(`deleting Restore ${r.metadata.namespace ?? ''}/${r.metadata.name} failed: ${safeErrorMessage(err)}`);
    }
  }
  if (errors.length > 0) return errors; // keep the Backup so the request can be repeated
  try {
    await ctx.client.delete(BACKUPS, namespace, name);
  } catch (err) {
    if (!isKubeNotFound(err)) return [`deleting Backup ${namespace}/${name} failed: ${safeErrorMessage(err)}`];
  }
  return [];
}

/** One deletion attempt; every error, or none. `seen` gets the Backup once it is read. */
async function attempt(x: Deletions, d: DeleteBackupRequest, seen: { backup?: Backup }): Promise<string[]> {
  const { ctx } = x;
  const { namespace = ctx.namespace } = d.metadata;
  const backupName = d.spec.backupName;
  // Who asked comes first: a request without a requester is refused before anything is looked up.
  const authority = ctx.authority(d);
  if ('error' in authority) return [`this DeleteBackupRequest is refused: ${authority.error}`];
  let backup: Backup;
  try {
    backup = await ctx.client.get<Backup>(BACKUPS, namespace, backupName);
  } catch (err) {
    if (isKubeNotFound(err)) return [`backup "${backupName}" does not exist in namespace ${namespace}`];
    throw err;
  }
  seen.backup = backup;
  let denied: string | undefined;
  try {
    denied = await backupRefusal(ctx, authority, backup, `delete backup "${backupName}"`, 'it', `deletebackuprequest/${d.metadata.name}`);
  } catch (err) {
    return [safeErrorMessage(err)];
  }
  if (denied !== undefined) return [denied];
  const refusal = deletionRefusal(backup, x.locations.list(), ctx.config.defaultBackupStorageLocation);
  if (refusal !== undefined) return [refusal];
  const previous = backup.status?.phase ?? 'Completed';
  const errors = await deleteBackup(x, d, backup);
  if (errors.length > 0 && previous !== 'Deleting') {
    // Give the backup its phase back so it stays usable and GC can ask again.
    await setBackupPhase(ctx, backup, previous).catch(() => undefined);
  }
  return errors;
}

async function processRequest(x: Deletions, d: DeleteBackupRequest): Promise<void> {
  const { ctx } = x;
  const { namespace = ctx.namespace } = d.metadata;
  const backupName = d.spec.backupName;
  // Changed under us: the next event brings it back.
  if (!(await unlessChanged(patchRequestStatus(ctx, d, { phase: 'InProgress', errors: null }, d.metadata.resourceVersion)))) return;
  const seen: { backup?: Backup } = {};
  const errors = await attempt(x, d, seen);
  const imported = seen.backup !== undefined && isVeleroImport(seen.backup);
  await patchRequestStatus(ctx, d, { phase: 'Processed', errors: errors.length > 0 ? errors : null });
  const what = `DeleteBackupRequest ${namespace}/${d.metadata.name} for backup ${backupName}`;
  if (errors.length === 0) {
    const note = imported ? `: ${VELERO_DELETE_NOTE(backupName)}` : '';
    ctx.logger.info(`${what}: backup deleted${note}`, { backup: `${namespace}/${backupName}` });
    void ctx.events.event(d, 'Normal', 'Processed', `backup ${backupName} deleted${note}`);
  } else {
    ctx.logger.warn(`${what} failed: ${errors.join('; ')}`, { backup: `${namespace}/${backupName}` });
    void ctx.events.event(d, 'Warning', 'Failed', errors.join('; '));
  }
}
