// The Backup controller: validates a new Backup (every reason listed), runs it through the backup
// engine into its location's object store, uploads the artifacts with stowage-backup.json last
// and the run's own log (spooled when storage is down), and records phase, progress, counts,
// timestamps, events and metrics. A Backup found InProgress that this server is not running was
// left by a server that died: staleRuns.ts settles it from the bucket (also the start-up sweep).
import {
  ANNOTATION_SYNCED_FROM, RESOURCES, specFieldErrors, type Backup, type BackupStatus, type BackupStorageLocation,
} from '../apis/v1/index.js';
import { FORMAT_VERSION } from '../archive/index.js';
import { runBackup, type BackupResult } from '../backup/index.js';
import { isConflict, isNotFound } from '../kube/index.js';
import { recordBackupOutcome } from '../metrics/index.js';
import { backupKeys, normalizePrefix } from '../persistence/layout.js';
import type { ReconcileContext, Result } from '../runtime/index.js';
import { parseDuration, validateTtl } from '../util/duration.js';
import { errorMessage, safeErrorMessage } from '../util/errors.js';
import { validateFilters } from '../util/filters.js';
import type { ControllerContext, ControllerDefinition } from './context.js';
import { crashPoint } from './faults.js';
import { isReadOnly, locationProblem, openBackupStore, resolveLocation, waitForLocation, type LocationProblem } from './locations.js';
import { openRunLog, registerRun, stamp, throttled, uploadRunLog } from './runs.js';
import { failStaleRun } from './staleRuns.js';

const BACKUPS = RESOURCES.Backup;
export const STALE_RUN_REASON = 'the Stowage server running this backup stopped before it finished (found InProgress at start-up or failover)';

/** `pending`: the location's problem, when it is the only one and may yet clear (waitForLocation). */
type Validation = { errors: string[]; location?: BackupStorageLocation; pending?: LocationProblem };

/** Every reason the backup cannot run, or the location it will use. */
export function validateBackup(ctx: ControllerContext, backup: Backup): Validation {
  const errors = [
    ...specFieldErrors('Backup', backup.spec), ...validateFilters(backup.spec), ...(backup.spec.ttl !== undefined ? validateTtl(backup.spec.ttl, 'spec.ttl') : []),
  ];
  const wanted = backup.spec.storageLocation;
  const location = resolveLocation(ctx, wanted);
  if (location === undefined) {
    errors.push(wanted !== undefined && wanted !== ''
      ? `backup storage location "${wanted}" does not exist in namespace ${ctx.namespace}`
      : `no storage location given and no default backup storage location exists in namespace ${ctx.namespace} (mark one with default: true)`);
    return { errors };
  }
  const name = location.metadata.name;
  if (isReadOnly(location)) errors.push(`backup storage location "${name}" is ReadOnly: backups cannot be written to it`);
  const problem = locationProblem(ctx, location, backup.metadata.creationTimestamp);
  if (problem !== undefined) {
    if (errors.length === 0 && (problem.wait || problem.recheck === true)) return { errors: [problem.reason], location, pending: problem };
    errors.push(problem.reason);
  }
  return { errors, location };
}

export function backupController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<Backup>('Backup');

  const patchStatus = (b: Backup, status: Partial<Record<keyof BackupStatus, unknown>>, resourceVersion?: string): Promise<Backup> =>
    ctx.client.patchStatus<Backup>(BACKUPS, b.metadata.namespace, b.metadata.name,
      resourceVersion === undefined ? { status } : { metadata: { resourceVersion }, status });

  async function failValidation(b: Backup, errors: string[]): Promise<void> {
    try {
      await patchStatus(b, { phase: 'FailedValidation', validationErrors: errors, completionTimestamp: stamp(ctx.clock.now()) }, b.metadata.resourceVersion);
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return; // changed under us: decided again on the next event
      throw err;
    }
    void ctx.events.event(b, 'Warning', 'FailedValidation', errors.join('; '));
    ctx.logger.warn(`backup ${b.metadata.namespace}/${b.metadata.name} failed validation: ${errors.join('; ')}`);
    recordBackupOutcome(ctx.metrics, { schedule: scheduleOf(b), phase: 'FailedValidation' });
  }

  async function execute(b: Backup, location: BackupStorageLocation, signal: AbortSignal): Promise<void> {
    const { namespace = ctx.namespace, name } = b.metadata;
    const started = ctx.clock.now();
    const ttlMs = b.spec.ttl !== undefined ? parseDuration(b.spec.ttl, 'spec.ttl') : ctx.config.defaultBackupTtl;
    const expiration = stamp(new Date(started.getTime() + ttlMs));
    // Optimistic lock on the version we validated: two servers (or workers) never both start it.
    try {
      // A backup for "the default location" records which one that was: restores, downloads and
      // deletion must find it there even after another location becomes the default.
      const version = (b.spec.storageLocation ?? '') !== '' ? b.metadata.resourceVersion
        : (await ctx.client.patch<Backup>(BACKUPS, namespace, name, {
          metadata: { resourceVersion: b.metadata.resourceVersion }, spec: { storageLocation: location.metadata.name },
        }, 'merge')).metadata.resourceVersion;
      await patchStatus(b, {
        phase: 'InProgress', startTimestamp: stamp(started), expiration, formatVersion: FORMAT_VERSION,
        validationErrors: null, progress: { totalItems: 0, itemsBackedUp: 0 },
      }, version);
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return; // changed under us: the next event brings it back
      throw err;
    }
    ctx.metrics.backupAttemptTotal.inc({ schedule: scheduleOf(b) });
    const log = openRunLog(ctx, 'backup', namespace, name);
    const abort = new AbortController();
    const onShutdown = (): void => abort.abort(new Error('the server shut down before the backup finished'));
    signal.addEventListener('abort', onShutdown, { once: true });
    const run = registerRun(ctx, 'backup', namespace, name, log, abort);
    void ctx.events.event(b, 'Normal', 'Started', `backup started, storing to location ${location.metadata.name}`);
    const progress = throttled<{ totalItems: number; itemsBackedUp: number }>(1000, async (p) => {
      await patchStatus(b, { progress: p }).then(() => undefined, () => undefined);
    });
    const handle = ctx.plugins.handle({ kind: 'backup', namespace, name }, log.logger);
    let result: BackupResult | undefined;
    let failure: string | undefined;
    let store: Awaited<ReturnType<typeof openBackupStore>> | undefined;
    try {
      store = await openBackupStore(ctx, handle, location);
      crashPoint('before-tarball');
      result = await runBackup({
        client: ctx.client, store, log: log.logger,
        actions: handle.backupItemActions().map((a) => ({ name: a.name, action: a })),
        pageSize: ctx.config.clientPageSize, signal: abort.signal, startTime: started,
        onProgress: (p) => progress.push({ totalItems: p.totalItems, itemsBackedUp: p.itemsBackedUp }),
      }, { ...b, status: { ...b.status, phase: 'InProgress', startTimestamp: stamp(started), expiration } });
      crashPoint('after-tarball');
      if (result.phase === 'Failed') failure = result.failureReason ?? 'the backup failed';
      else {
        // Everything but stowage-backup.json first: a failure here must leave no marker behind. The three
        // are independent, so they upload at once (the manifest alone is ~6 MB gzipped at 50k items);
        // all of them are waited for, so none is still being written when the run reports its end.
        const uploads = await Promise.allSettled([
          store.putResourceList(name, result.resourceList),
          store.putResults(name, result.results),
          ...(result.manifest !== undefined ? [store.putManifest(name, result.manifest)] : []),
        ]);
        const firstFailure = uploads.find((u): u is PromiseRejectedResult => u.status === 'rejected');
        if (firstFailure !== undefined) failure = `uploading the backup's artifacts failed: ${safeErrorMessage(firstFailure.reason)}`;
      }
    } catch (err) {
      failure = abort.signal.aborted ? errorMessage(abort.signal.reason) : safeErrorMessage(err);
    } finally {
      signal.removeEventListener('abort', onShutdown);
    }

    let phase: 'Completed' | 'PartiallyFailed' | 'Failed' = failure !== undefined ? 'Failed' : (result?.phase ?? 'Failed');
    if (failure !== undefined) log.logger.error(`backup failed: ${failure}`);
    else log.logger.info(`backup ${phase === 'Completed' ? 'completed' : 'partially failed'}: ${result?.progress.itemsBackedUp ?? 0} items`);
    const counts = log.counts();
    await log.close();
    const s = store;
    await uploadRunLog(ctx, log, location.metadata.name, backupKeys(s?.prefix ?? normalizePrefix(location.spec.objectStorage.prefix), name).log,
      (file) => (s !== undefined ? s.putLog(name, file) : Promise.reject(new Error('the location could not be opened'))));

    const finished = ctx.clock.now();
    const status: BackupStatus = {
      phase, startTimestamp: stamp(started), completionTimestamp: stamp(finished), expiration, formatVersion: FORMAT_VERSION,
      progress: result?.progress ?? { totalItems: 0, itemsBackedUp: 0 },
      warnings: counts.warnings, errors: counts.errors,
      ...(failure !== undefined ? { failureReason: failure } : {}),
    };
    if (phase !== 'Failed' && store !== undefined) {
      try {
        await store.putBackupMetadata(name, { ...b, metadata: cleanMeta(b), status }); // written last: the backup is whole
        crashPoint('after-marker');
      } catch (err) {
        phase = 'Failed';
        status.phase = 'Failed';
        status.failureReason = `writing stowage-backup.json failed: ${safeErrorMessage(err)}`;
        ctx.logger.error(`backup ${namespace}/${name}: ${status.failureReason}`);
      }
    }
    await progress.flush();
    handle.release();
    try {
      await patchStatus(b, { ...status, failureReason: status.failureReason ?? null });
      crashPoint('after-status');
    } finally {
      run.finish();
    }
    const message = phase === 'Failed' ? status.failureReason ?? 'failed'
      : `${status.progress?.itemsBackedUp ?? 0} items backed up, ${counts.warnings} warnings, ${counts.errors} errors`;
    void ctx.events.event(b, phase === 'Completed' ? 'Normal' : 'Warning', phase, message);
    ctx.logger.info(`backup ${namespace}/${name} ${phase}: ${message}`);
    recordBackupOutcome(ctx.metrics, {
      schedule: scheduleOf(b), phase, durationSeconds: (finished.getTime() - started.getTime()) / 1000,
      ...(result?.manifest?.tarball !== undefined ? { tarballBytes: result.manifest.tarball.bytes } : {}),
      items: status.progress?.itemsBackedUp ?? 0, finishedAt: finished,
    });
  }

  return {
    name: 'backup',
    watches: [informer],
    workers: Math.max(1, ctx.config.concurrentBackups),
    reconciler: {
      async reconcile(key: string, rc: ReconcileContext): Promise<Result> {
        ctx.metrics.backupTotal.set(informer.keys().length);
        const b = informer.get(key);
        if (b === undefined) return;
        const phase = b.status?.phase ?? 'New';
        if (phase === 'InProgress') {
          return await failStaleRun(ctx, 'backup', b, (status, rv) => patchStatus(b, status, rv), STALE_RUN_REASON);
        }
        if (phase !== 'New') return;
        // Backup sync creates imported Backups first and sets their status right after: between the
        // two they look new, and running them would overwrite the backup in the bucket.
        if (b.metadata.annotations?.[ANNOTATION_SYNCED_FROM] !== undefined) return;
        if (ctx.shutdown.aborted) return; // a shutting-down server starts nothing new
        const v = validateBackup(ctx, b);
        if (v.pending !== undefined && v.location !== undefined && await waitForLocation(ctx, v.location, v.pending)) return { requeueAfter: 1000 };
        if (v.errors.length > 0 || v.location === undefined) {
          await failValidation(b, v.errors);
          return;
        }
        await execute(b, v.location, rc.signal);
      },
    },
  };
}

function scheduleOf(b: Backup): string {
  return b.metadata.labels?.['stowage.dev/schedule-name'] ?? '';
}

/** The Backup as stored in stowage-backup.json: no cluster-specific identity. */
function cleanMeta(b: Backup): Backup['metadata'] {
  const { name, namespace, labels, annotations } = b.metadata;
  return { name, ...(namespace !== undefined ? { namespace } : {}), ...(labels !== undefined ? { labels } : {}), ...(annotations !== undefined ? { annotations } : {}) };
}

