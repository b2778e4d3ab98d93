// The Restore controller: validates a Restore (every reason listed), reads its backup through the
// backup's location, runs the restore engine, uploads the restore's log, results (with every
// item's outcome, which is what a dry run reports) and resource list under restores/<r>/, and
// records phase, progress, summary, counts and events. A Restore left InProgress by a dead server
// is marked Failed.
import path from 'node:path';
import {
  LABEL_SCHEDULE_NAME, RESOURCES, specFieldErrors, type Backup, type BackupStorageLocation, type Restore, type RestoreStatus,
} from '../apis/v1/index.js';
import { isConflict, isNotFound } from '../kube/index.js';
import { recordRestoreOutcome } from '../metrics/index.js';
import { normalizePrefix, restoreKeys } from '../persistence/layout.js';
import { newRestoreRequest, resolveRestoreItemActions, runRestore, type RestoreResult } from '../restore/index.js';
import type { ReconcileContext, Result } from '../runtime/index.js';
import { errorMessage, safeErrorMessage } from '../util/errors.js';
import { validateFilters, validateNamespaceMapping } from '../util/filters.js';
import type { ControllerContext, ControllerDefinition } from './context.js';
import { locationProblem, openBackupStore, resolveLocation, waitForLocation, type LocationProblem } from './locations.js';
import { openRunLog, registerRun, stamp, throttled, uploadRunLog } from './runs.js';
import { failStaleRun } from './staleRuns.js';

const RESTORES = RESOURCES.Restore;
/**
 * Where restores (and deletions running DeleteItemActions) spill a backup's items while they run:
 * under the scratch directory, private (0700; Secret data lands there), emptied as each run ends.
 */
export function spillDirOf(ctx: Pick<ControllerContext, 'scratchDir'>): string {
  return path.join(ctx.scratchDir, 'spill');
}

export const STALE_RESTORE_REASON = 'the Stowage server running this restore stopped before it finished (found InProgress at start-up or failover)';

/** `pending`: the location's problem, when it is the only one and may yet clear (waitForLocation). */
type Validation = { errors: string[]; backup?: Backup; location?: BackupStorageLocation; pending?: LocationProblem };

/** The newest Completed/PartiallyFailed backup of a schedule. */
function latestOfSchedule(ctx: ControllerContext, schedule: string): Backup | undefined {
  return ctx.informer<Backup>('Backup').list()
    .filter((b) => b.metadata.labels?.[LABEL_SCHEDULE_NAME] === schedule && ['Completed', 'PartiallyFailed'].includes(b.status?.phase ?? ''))
    .sort((a, b) => (b.status?.startTimestamp ?? '').localeCompare(a.status?.startTimestamp ?? ''))[0];
}

export function validateRestore(ctx: ControllerContext, r: Restore): Validation {
  const spec = r.spec;
  const errors = [...specFieldErrors('Restore', spec), ...validateFilters(spec), ...validateNamespaceMapping(spec.namespaceMapping, spec)];
  const hasBackup = spec.backupName !== undefined && spec.backupName !== '';
  const hasSchedule = spec.scheduleName !== undefined && spec.scheduleName !== '';
  if (hasBackup && hasSchedule) errors.push('set either backupName or scheduleName, not both');
  if (!hasBackup && !hasSchedule) {
    errors.push('backupName (or scheduleName) is required');
    return { errors };
  }
  const backup = hasBackup
    ? ctx.informer<Backup>('Backup').get(`${r.metadata.namespace ?? ctx.namespace}/${spec.backupName}`)
    : latestOfSchedule(ctx, spec.scheduleName ?? '');
  if (backup === undefined) {
    errors.push(hasBackup
      ? `backup "${spec.backupName}" does not exist in namespace ${r.metadata.namespace ?? ctx.namespace}`
      : `schedule "${spec.scheduleName}" has no Completed or PartiallyFailed backup`);
    return { errors };
  }
  const phase = backup.status?.phase ?? 'New';
  if (phase !== 'Completed' && phase !== 'PartiallyFailed') {
    errors.push(`backup "${backup.metadata.name}" is ${phase}; only Completed or PartiallyFailed backups can be restored`);
  }
  const location = resolveLocation(ctx, backup.spec.storageLocation);
  if (location === undefined) {
    errors.push(`backup storage location "${backup.spec.storageLocation ?? '(default)'}" of backup "${backup.metadata.name}" does not exist`);
  } else {
    const problem = locationProblem(ctx, location, r.metadata.creationTimestamp);
    if (problem !== undefined) {
      if (errors.length === 0 && (problem.wait || problem.recheck === true)) return { errors: [problem.reason], backup, location, pending: problem };
      errors.push(problem.reason);
    }
  }
  return { errors, backup, ...(location !== undefined ? { location } : {}) };
}

export function restoreController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<Restore>('Restore');
  ctx.informer<Backup>('Backup'); // validation reads backups from the shared cache

  const patchStatus = (r: Restore, status: Partial<Record<keyof RestoreStatus, unknown>>, resourceVersion?: string): Promise<Restore> =>
    ctx.client.patchStatus<Restore>(RESTORES, r.metadata.namespace, r.metadata.name,
      resourceVersion === undefined ? { status } : { metadata: { resourceVersion }, status });

  async function execute(r: Restore, backup: Backup, location: BackupStorageLocation, signal: AbortSignal): Promise<void> {
    const { namespace = ctx.namespace, name } = r.metadata;
    const started = ctx.clock.now();
    try {
      await patchStatus(r, { phase: 'InProgress', startTimestamp: stamp(started), validationErrors: null, progress: { totalItems: 0, itemsRestored: 0 } }, r.metadata.resourceVersion);
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return;
      throw err;
    }
    ctx.metrics.restoreAttemptTotal.inc({ schedule: backup.metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '' });
    const log = openRunLog(ctx, 'restore', namespace, name);
    const abort = new AbortController();
    const onShutdown = (): void => abort.abort(new Error('the server shut down before the restore finished'));
    signal.addEventListener('abort', onShutdown, { once: true });
    const run = registerRun(ctx, 'restore', namespace, name, log, abort);
    void ctx.events.event(r, 'Normal', 'Started', `${r.spec.dryRun === true ? 'dry run' : 'restore'} of backup ${backup.metadata.name} started`);
    const progress = throttled<{ totalItems: number; itemsRestored: number }>(1000, async (p) => {
      await patchStatus(r, { progress: p }).then(() => undefined, () => undefined);
    });
    const handle = ctx.plugins.handle({ kind: 'restore', namespace, name }, log.logger);
    let result: RestoreResult | undefined;
    let failure: string | undefined;
    let store: Awaited<ReturnType<typeof openBackupStore>> | undefined;
    try {
      store = await openBackupStore(ctx, handle, location);
      const actions = await resolveRestoreItemActions(handle.restoreItemActions().map((a) => ({ name: a.name, action: a })));
      const req = newRestoreRequest(r, backup, { priorities: ctx.config.restoreResourcePriorities });
      result = await runRestore({
        client: ctx.client, source: store, actions, log: log.logger, clock: ctx.clock, signal: abort.signal,
        spillDir: spillDirOf(ctx),
        onProgress: (p) => progress.push({ totalItems: p.totalItems, itemsRestored: p.itemsRestored }),
      }, req);
      if (result.phase === 'Failed') failure = result.failureReason ?? 'the restore failed';
      try {
        // Results carry every item's outcome: `restore describe` shows a dry run's predictions from them.
        const results = { ...result.results, dryRun: result.dryRun, summary: result.summary, outcomes: result.outcomes };
        await store.putRestoreResults(name, results);
        await store.putRestoreResourceList(name, result.resourceList);
      } catch (err) {
        failure ??= `uploading the restore's results failed: ${safeErrorMessage(err)}`;
      }
    } catch (err) {
      failure = abort.signal.aborted ? errorMessage(abort.signal.reason) : safeErrorMessage(err);
    } finally {
      signal.removeEventListener('abort', onShutdown);
    }
    const phase: 'Completed' | 'PartiallyFailed' | 'Failed' = failure !== undefined ? 'Failed' : (result?.phase ?? 'Failed');
    if (failure !== undefined) log.logger.error(`restore failed: ${failure}`);
    else log.logger.info(`restore ${phase === 'Completed' ? 'completed' : 'partially failed'}: ${JSON.stringify(result?.summary ?? {})}`);
    const counts = log.counts();
    await log.close();
    const s = store;
    const logKey = restoreKeys(s?.prefix ?? normalizePrefix(location.spec.objectStorage.prefix), name).log;
    await uploadRunLog(ctx, log, location.metadata.name, logKey,
      (file) => (s !== undefined ? s.putRestoreLog(name, file) : Promise.reject(new Error('the location could not be opened'))));
    await progress.flush();
    handle.release();
    const finished = ctx.clock.now();
    const status: Partial<Record<keyof RestoreStatus, unknown>> = {
      phase, startTimestamp: stamp(started), completionTimestamp: stamp(finished),
      progress: result?.progress ?? { totalItems: 0, itemsRestored: 0 },
      summary: result?.summary ?? { created: 0, updated: 0, skipped: 0, failed: 0 },
      warnings: counts.warnings, errors: counts.errors, failureReason: failure ?? null,
    };
    try {
      await patchStatus(r, status);
    } finally {
      run.finish();
    }
    const sum = result?.summary;
    const message = phase === 'Failed' ? failure ?? 'failed'
      : r.spec.dryRun === true
        // Nothing failed in a dry run: its failed items are predictions.
        ? `dry run: would create ${sum?.created ?? 0}, would update ${sum?.updated ?? 0}, would skip ${sum?.skipped ?? 0}, would fail ${sum?.failed ?? 0}; ${counts.warnings} warnings, ${counts.errors} errors`
        : `created ${sum?.created ?? 0}, updated ${sum?.updated ?? 0}, skipped ${sum?.skipped ?? 0}, failed ${sum?.failed ?? 0}; ${counts.warnings} warnings, ${counts.errors} errors`;
    void ctx.events.event(r, phase === 'Completed' ? 'Normal' : 'Warning', phase, message);
    ctx.logger.info(`restore ${namespace}/${name} ${phase}: ${message}`);
    recordRestoreOutcome(ctx.metrics, {
      schedule: backup.metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '', phase, durationSeconds: (finished.getTime() - started.getTime()) / 1000,
    });
  }

  return {
    name: 'restore',
    watches: [informer],
    workers: 1,
    reconciler: {
      async reconcile(key: string, rc: ReconcileContext): Promise<Result> {
        ctx.metrics.restoreTotal.set(informer.keys().length);
        const r = informer.get(key);
        if (r === undefined) return;
        const phase = r.status?.phase ?? 'New';
        if (phase === 'InProgress') {
          return await failStaleRun(ctx, 'restore', r, (status, rv) => patchStatus(r, status, rv), STALE_RESTORE_REASON);
        }
        if (phase !== 'New' || ctx.shutdown.aborted) return;
        const v = validateRestore(ctx, r);
        if (v.pending !== undefined && v.location !== undefined && await waitForLocation(ctx, v.location, v.pending)) return { requeueAfter: 1000 };
        if (v.errors.length > 0 || v.backup === undefined || v.location === undefined) {
          await patchStatus(r, { phase: 'FailedValidation', validationErrors: v.errors, completionTimestamp: stamp(ctx.clock.now()) });
          void ctx.events.event(r, 'Warning', 'FailedValidation', v.errors.join('; '));
          ctx.logger.warn(`restore ${r.metadata.namespace}/${r.metadata.name} failed validation: ${v.errors.join('; ')}`);
          recordRestoreOutcome(ctx.metrics, { schedule: '', phase: 'FailedValidation' });
          return;
        }
        await execute(r, v.backup, v.location, rc.signal);
      },
    },
  };
}
