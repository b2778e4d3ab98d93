// The Restore controller: validates a Restore (every reason listed; its backup by resolveBackup),
// then runs it through the shared run lifecycle (lifecycle.ts) with the restore engine, reading the
// backup through its location: the restore's results (with every item's outcome, which is what a
// dry run reports), resource list and log under restores/<r>/, and phase, progress, summary,
// counts and events. A Restore left InProgress by a dead server
// is marked Failed.
import path from 'node:path';
import {
  LABEL_SCHEDULE_NAME, RESOURCES, specFieldErrors, type Backup, type BackupStorageLocation, type Restore, type RestoreStatus,
} from '../apis/v1/index.js';
import { recordRestoreOutcome } from '../metrics/index.js';
import { restoreKeys } from '../persistence/layout.js';
import { newRestoreRequest, resolveRestoreItemActions, runRestore, type RestoreResult } from '../restore/index.js';
import type { ReconcileContext, Result } from '../runtime/index.js';
import { validateFilters, validateNamespaceMapping } from '../util/filters.js';
import type { ControllerContext, ControllerDefinition } from './context.js';
import { locationProblem, resolveLocation, waitForLocation, type LocationProblem } from './locations.js';
import { failValidation, runLifecycle } from './lifecycle.js';
import { resolveBackupOf } from './resolveBackup.js';
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

export function validateRestore(ctx: ControllerContext, r: Restore): Validation {
  const spec = r.spec;
  const errors = [...specFieldErrors('Restore', spec), ...validateFilters(spec), ...validateNamespaceMapping(spec.namespaceMapping, spec)];
  const resolved = resolveBackupOf(ctx, r);
  if (resolved.backup === undefined) {
    errors.push(resolved.error);
    return { errors };
  }
  const backup = resolved.backup;
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

  function execute(r: Restore, backup: Backup, location: BackupStorageLocation, signal: AbortSignal): Promise<void> {
    const name = r.metadata.name;
    const schedule = backup.metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '';
    const dryRun = r.spec.dryRun === true;
    return runLifecycle<RestoreResult>(ctx, {
      kind: 'restore', resource: RESTORES, obj: r, location, signal,
      // A restore from a schedule records the backup it picked (as Velero does): describe shows it,
      // downloads and the backup's deletion find it, and a later backup of the schedule changes nothing.
      ...((r.spec.backupName ?? '') === '' ? { recordSpec: { backupName: backup.metadata.name } } : {}),
      startStatus: () => ({ progress: { totalItems: 0, itemsRestored: 0 } }),
      startedMessage: `${dryRun ? 'dry run' : 'restore'} of backup ${backup.metadata.name} started`,
      onStarted: () => ctx.metrics.restoreAttemptTotal.inc({ schedule }),
      engine: async (env) => {
        const actions = await resolveRestoreItemActions(env.handle.restoreItemActions().map((a) => ({ name: a.name, action: a })));
        const req = newRestoreRequest(r, backup, { priorities: ctx.config.restoreResourcePriorities });
        return runRestore({
          client: ctx.client, source: env.store, actions, log: env.log, clock: ctx.clock, signal: env.signal,
          spillDir: spillDirOf(ctx),
          maxItemBytes: ctx.config.maxItemBytes,
          onProgress: (p) => env.onProgress({ totalItems: p.totalItems, itemsRestored: p.itemsRestored }),
        }, req);
      },
      // Failed or not: results carry every item's outcome (`restore describe` shows a dry run's predictions from them).
      async commit(store, o, _status, endLog) {
        const result = o.result;
        if (result !== undefined) {
          const results = { ...result.results, dryRun: result.dryRun, summary: result.summary, outcomes: result.outcomes };
          await store.completeRestore(name, { results, resourceList: result.resourceList });
        }
        await endLog();
      },
      logKey: (prefix) => restoreKeys(prefix, name).log,
      putLog: (store, file) => store.putRestoreLog(name, file),
      finalStatus: (o) => ({
        progress: o.result?.progress ?? { totalItems: 0, itemsRestored: 0 },
        summary: o.result?.summary ?? { created: 0, updated: 0, skipped: 0, failed: 0 },
      }),
      summary: (o) => {
        const sum = o.result?.summary ?? { created: 0, updated: 0, skipped: 0, failed: 0 };
        // Nothing failed in a dry run: its failed items are predictions.
        return dryRun ? `dry run: would create ${sum.created}, would update ${sum.updated}, would skip ${sum.skipped}, would fail ${sum.failed}`
          : `created ${sum.created}, updated ${sum.updated}, skipped ${sum.skipped}, failed ${sum.failed}`;
      },
      recordOutcome: (o) => recordRestoreOutcome(ctx.metrics, { schedule, phase: o.phase, durationSeconds: (o.finished.getTime() - o.started.getTime()) / 1000 }),
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
          await failValidation(ctx, 'restore', RESTORES, r, v.errors, () => recordRestoreOutcome(ctx.metrics, { schedule: '', phase: 'FailedValidation' }));
          return;
        }
        await execute(r, v.backup, v.location, rc.signal);
      },
    },
  };
}
