// Garbage collection: every --garbage-collection-frequency, decide with util/retention which
// backups have expired (TTL) or fallen out of their schedule's keep policy, and ask for their
// deletion by creating a DeleteBackupRequest. The deletion itself is deleteBackupRequest.ts's job.
//
// A backup is skipped (logged, and a Warning event on the Backup) when its location is missing,
// Unavailable or ReadOnly: deleting from there would fail or is forbidden. A backup that already
// has a pending request (New/InProgress) gets no second one, and one imported from a Velero
// location is never collected (Velero expires it); one whose earlier request ended with
// errors gets a new request on the next run, which is how failed deletions are retried.
import {
  LABEL_BACKUP_UID,
  LABEL_SCHEDULE_NAME,
  RESOURCES,
  labelValue,
  newDeleteBackupRequest,
  type Backup,
  type BackupStorageLocation,
  type DeleteBackupRequest,
  type Schedule,
} from '../apis/v1/index.js';
import { isVeleroImport } from '../persistence/veleroBackup.js';
import type { Result } from '../runtime/index.js';
import { errorMessage } from '../util/errors.js';
import { effectiveExpiration, planRetention, type KeepPolicy, type RetentionBackup, type RetentionPlan } from '../util/retention.js';
import type { ControllerContext, ControllerDefinition } from './context.js';

const DBRS = RESOURCES.DeleteBackupRequest;

export interface GcInput {
  /** Every Backup in the namespace GC looks after. */
  backups: readonly Backup[];
  schedules: readonly Schedule[];
  locations: readonly BackupStorageLocation[];
  deleteRequests: readonly DeleteBackupRequest[];
  /** --default-backup-storage-location ('' for none). */
  defaultLocation: string;
  defaultTtlMs: number;
  now: Date;
}

export interface GcDecision {
  backup: Backup;
  reason: string;
}

export interface GcPlan {
  /** Create a DeleteBackupRequest for each. */
  delete: GcDecision[];
  /** Due for deletion but not deletable now; report each. */
  skip: GcDecision[];
}

/**
 * The location a backup lives in: its spec, else the location marked default, else the configured
 * default name (the order locations.ts resolveLocation uses).
 */
export function backupLocationName(backup: Backup, locations: readonly BackupStorageLocation[], defaultLocation: string): string | undefined {
  const named = backup.spec.storageLocation;
  if (named !== undefined && named !== '') return named;
  const marked = locations.find((l) => l.spec.default === true)?.metadata.name;
  if (marked !== undefined) return marked;
  return defaultLocation !== '' ? defaultLocation : undefined;
}

/** A backup that failed validation never wrote anything to storage: deleting it touches only the cluster. */
export function hasStoredData(backup: Backup): boolean {
  return backup.status?.phase !== 'FailedValidation';
}

/**
 * Why nothing can be deleted from the backup's location right now, or undefined when it can.
 * Shared with the DeleteBackupRequest controller so both say the same thing.
 */
export function locationBlocksDeletion(
  backup: Backup,
  locations: readonly BackupStorageLocation[],
  defaultLocation: string,
): string | undefined {
  const name = backupLocationName(backup, locations, defaultLocation);
  if (name === undefined) return 'the backup names no storage location and there is no default location';
  const loc = locations.find((l) => l.metadata.name === name);
  if (loc === undefined) return `backup storage location "${name}" does not exist`;
  if (loc.spec.accessMode === 'ReadOnly') return `backup storage location "${name}" is ReadOnly, so its backups cannot be deleted`;
  if (loc.status?.phase === 'Unavailable') {
    const why = loc.status.message !== undefined && loc.status.message !== '' ? `: ${loc.status.message}` : '';
    return `backup storage location "${name}" is Unavailable${why}`;
  }
  return undefined;
}

function isPending(dbr: DeleteBackupRequest): boolean {
  return dbr.status?.phase !== 'Processed';
}

function keepPolicyOf(schedule: Schedule | undefined): KeepPolicy | undefined {
  if (schedule === undefined) return undefined;
  const { keepLast, keepHourly, keepDaily, keepWeekly, keepMonthly } = schedule.spec;
  return { keepLast, keepHourly, keepDaily, keepWeekly, keepMonthly };
}

function retentionInput(b: Backup, defaultTtlMs: number): RetentionBackup {
  const st = b.status ?? {};
  const input: RetentionBackup = { name: b.metadata.name };
  if (st.phase !== undefined) input.phase = st.phase;
  if (st.startTimestamp !== undefined) input.startTimestamp = st.startTimestamp;
  if (st.completionTimestamp !== undefined) input.completionTimestamp = st.completionTimestamp;
  if (b.metadata.creationTimestamp !== undefined) input.creationTimestamp = b.metadata.creationTimestamp;
  const exp = effectiveExpiration({ creationTimestamp: b.metadata.creationTimestamp, expiration: st.expiration, ttl: b.spec.ttl }, defaultTtlMs);
  if (exp !== undefined) input.expiration = exp;
  return input;
}

/**
 * What retention decides for one group of backups: a schedule's (`scheduled`; `schedule` is
 * undefined when the Schedule is gone) or the unscheduled ones. GC acts on it; `schedule describe`
 * shows it.
 */
export function retentionOf(backups: readonly Backup[], schedule: Schedule | undefined, scheduled: boolean, defaultTtlMs: number, now: Date): RetentionPlan {
  return planRetention(backups.map((b) => retentionInput(b, defaultTtlMs)), keepPolicyOf(schedule), now, { protectLastSuccessful: scheduled });
}

/** Decides which backups to delete now and which are due but blocked. Pure. */
export function planGc(input: GcInput): GcPlan {
  const pending = new Set(input.deleteRequests.filter(isPending).map((d) => `${d.metadata.namespace ?? ''}/${d.spec.backupName}`));
  // One retention group per (namespace, schedule label); unscheduled backups form their own group per namespace.
  const groups = new Map<string, { schedule: Schedule | undefined; scheduled: boolean; backups: Backup[] }>();
  for (const b of input.backups) {
    // Velero's own server expires its backups; deleting an imported one here would only remove the
    // resource, which the next sync brings back.
    if (isVeleroImport(b)) continue;
    const ns = b.metadata.namespace ?? '';
    const label = b.metadata.labels?.[LABEL_SCHEDULE_NAME];
    const key = label === undefined ? `${ns}\n` : `${ns}\n${label}`;
    let g = groups.get(key);
    if (g === undefined) {
      const schedule =
        label === undefined
          ? undefined
          : input.schedules.find((s) => (s.metadata.namespace ?? '') === ns && labelValue(s.metadata.name) === label);
      g = { schedule, scheduled: label !== undefined, backups: [] };
      groups.set(key, g);
    }
    g.backups.push(b);
  }

  const plan: GcPlan = { delete: [], skip: [] };
  for (const g of groups.values()) {
    const byName = new Map(g.backups.map((b) => [b.metadata.name, b]));
    const retention = retentionOf(g.backups, g.schedule, g.scheduled, input.defaultTtlMs, input.now);
    for (const verdict of retention.delete) {
      const backup = byName.get(verdict.name);
      if (backup === undefined) continue;
      if (pending.has(`${backup.metadata.namespace ?? ''}/${backup.metadata.name}`)) continue;
      const blocked = hasStoredData(backup) ? locationBlocksDeletion(backup, input.locations, input.defaultLocation) : undefined;
      if (blocked !== undefined) plan.skip.push({ backup, reason: `${verdict.reason}, but it is not deleted: ${blocked}` });
      else plan.delete.push({ backup, reason: verdict.reason });
    }
  }
  return plan;
}

// ---- controller ----------------------------------------------------------------------------------

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
