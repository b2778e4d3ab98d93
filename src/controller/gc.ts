// Garbage collection: every --garbage-collection-frequency, decide with schedule/gc.ts which
// backups have expired (TTL) or fallen out of their schedule's keep policy, and ask for their
// deletion by creating a DeleteBackupRequest. The deletion itself is deleteBackupRequest.ts's job.
//
// A backup is skipped (logged, and a Warning event on the Backup) when its location is missing,
// Unavailable or ReadOnly: deleting from there would fail or is forbidden. A backup that already
// has a pending request (New/InProgress) gets no second one, and one imported from a Velero
// location is never collected (Velero expires it); one whose earlier request ended with
// errors gets a new request on the next run, which is how failed deletions are retried.
import { LABEL_BACKUP_UID, RESOURCES, newDeleteBackupRequest, type Backup, type BackupStorageLocation, type DeleteBackupRequest, type Schedule } from '../apis/v1/index.js';
import type { Result } from '../runtime/index.js';
import { errorMessage } from '../util/errors.js';
import { planGc, type GcDecision } from '../schedule/gc.js';
import type { ControllerContext, ControllerDefinition } from './run/context.js';

const DBRS = RESOURCES.DeleteBackupRequest;

/** The single key the sweep runs under; any watched change enqueues it, the sweep itself is rate-limited. */
export const GC_KEY = 'garbage-collection';

export interface GcSweepResult {
  requested: GcDecision[];
  skipped: GcDecision[];
}

/** One GC pass over the server's namespace: plans, then creates the DeleteBackupRequests. */
export async function sweepOnce(ctx: ControllerContext): Promise<GcSweepResult> {
  const plan = planGc({
    backups: ctx.informer<Backup>('Backup').list(),
    schedules: ctx.informer<Schedule>('Schedule').list(),
    locations: ctx.informer<BackupStorageLocation>('BackupStorageLocation').list(),
    deleteRequests: ctx.informer<DeleteBackupRequest>('DeleteBackupRequest').list(),
    defaultLocation: ctx.config.defaultBackupStorageLocation,
    defaultTtlMs: ctx.config.defaultBackupTtl,
    now: ctx.clock.now(),
  });
  const requested: GcDecision[] = [];
  const created: string[] = [];
  for (const d of plan.delete) {
    const { namespace = ctx.namespace, name } = d.backup.metadata;
    const request = newDeleteBackupRequest(name, namespace);
    const uid = d.backup.metadata.uid;
    if (uid !== undefined) request.metadata.labels = { ...request.metadata.labels, [LABEL_BACKUP_UID]: uid };
    try {
      const made = await ctx.client.create<DeleteBackupRequest>(DBRS, namespace, request);
      created.push(`${namespace}/${made.metadata.name}`);
    } catch (err) {
      ctx.logger.warn(`garbage collection: could not request deletion of backup ${namespace}/${name}: ${errorMessage(err)}`, { backup: `${namespace}/${name}` });
      continue;
    }
    requested.push(d);
    ctx.logger.info(`garbage collection: deleting backup ${namespace}/${name}: ${d.reason}`, { backup: `${namespace}/${name}` });
    void ctx.events.event(d.backup, 'Normal', 'DeletionRequested', `garbage collection: ${d.reason}`);
  }
  // The next sweep plans from the informer cache: wait until it holds the requests just made, or
  // a quick second sweep would not see them as pending and request the same deletions again.
  const dbrs = ctx.informer<DeleteBackupRequest>('DeleteBackupRequest');
  for (const deadline = Date.now() + 10_000; created.some((k) => dbrs.get(k) === undefined) && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const d of plan.skip) {
    const { namespace = ctx.namespace, name } = d.backup.metadata;
    ctx.logger.warn(`garbage collection: backup ${namespace}/${name} ${d.reason}`, { backup: `${namespace}/${name}` });
    void ctx.events.event(d.backup, 'Warning', 'DeletionSkipped', d.reason);
  }
  return { requested, skipped: plan.skip };
}

export function gcController(ctx: ControllerContext): ControllerDefinition {
  const frequency = ctx.config.garbageCollectionFrequency;
  // Elapsed time (not ctx.clock, which tests may freeze) paces the sweeps.
  let lastSweep: number | undefined;
  const toKey = (): string[] => [GC_KEY];
  return {
    name: 'garbage-collection',
    watches: [
      { informer: ctx.informer<Backup>('Backup'), mapKeys: toKey },
      { informer: ctx.informer<BackupStorageLocation>('BackupStorageLocation'), mapKeys: toKey },
      { informer: ctx.informer<Schedule>('Schedule'), mapKeys: toKey },
      { informer: ctx.informer<DeleteBackupRequest>('DeleteBackupRequest'), mapKeys: toKey },
    ],
    reconciler: {
      async reconcile(key): Promise<Result> {
        if (key !== GC_KEY || frequency <= 0) return;
        const elapsed = lastSweep === undefined ? Infinity : performance.now() - lastSweep;
        if (elapsed < frequency) return { requeueAfter: frequency - elapsed };
        lastSweep = performance.now();
        await sweepOnce(ctx);
        return { requeueAfter: frequency };
      },
    },
  };
}
