// What garbage collection decides, pure: which backups have expired (TTL) or fallen out of their
// schedule's keep policy (schedule/retention.ts), and which of those cannot be deleted now because
// of their location. controller/gc.ts acts on the plan; `stowage schedule describe` shows retention.
import {
  LABEL_SCHEDULE_NAME,
  labelValue,
  type Backup,
  type BackupStorageLocation,
  type DeleteBackupRequest,
  type Schedule,
} from '../apis/v1/index.js';
import { isVeleroImport } from '../persistence/veleroBackup.js';
import { effectiveExpiration, planRetention, type KeepPolicy, type RetentionBackup, type RetentionPlan } from './retention.js';

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
 * default name (the order controller/run/locations.ts resolveLocation uses).
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
