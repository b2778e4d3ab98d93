// Which backup a restore reads, for the Restore controller and for DownloadRequests of a
// restore's artifacts alike: the one it names, or the newest Completed backup of its schedule.
import { ANNOTATION_SYNCED_FROM, LABEL_SCHEDULE_NAME, labelValue, type Backup, type Restore } from '../../apis/v1/index.js';
import type { ControllerContext } from './context.js';
import { resolveLocation } from './locations.js';
import { labelsTrusted } from '../../storage/signatures.js';

/**
 * The newest Completed backup of `schedule` among `backups` (one namespace's), by start time.
 * Matched on the schedule-name label as the schedule controller writes it: a name over 63
 * characters is shortened there (labelValue), so it is here too. Only Completed counts, as in
 * Velero: a restore from a schedule is unattended, and a PartiallyFailed backup lacks items an
 * older Completed one may hold; such a backup can still be restored by naming it. `trusted`
 * leaves out backups whose labels cannot be believed (storage/signatures.ts labelsTrusted).
 */
export function latestBackupOfSchedule(backups: readonly Backup[], schedule: string, trusted: (b: Backup) => boolean = () => true): Backup | undefined {
  const label = labelValue(schedule);
  let newest: Backup | undefined;
  for (const b of backups) {
    if (b.metadata.labels?.[LABEL_SCHEDULE_NAME] !== label || b.status?.phase !== 'Completed' || !trusted(b)) continue;
    if (newest === undefined || newer(b, newest)) newest = b;
  }
  return newest;
}

/**
 * By start time; start times are stamped to the second, so ties fall to the creation time, then
 * to the name (a schedule's backup names end in their time), so the pick never depends on order.
 */
function newer(a: Backup, b: Backup): boolean {
  const byStart = timeOf(a.status?.startTimestamp) - timeOf(b.status?.startTimestamp);
  if (byStart !== 0) return byStart > 0;
  const byCreation = timeOf(a.metadata.creationTimestamp) - timeOf(b.metadata.creationTimestamp);
  if (byCreation !== 0) return byCreation > 0;
  return a.metadata.name > b.metadata.name;
}

/** A time in ms; none sorts oldest. */
function timeOf(stamp: string | undefined): number {
  const t = Date.parse(stamp ?? '');
  return Number.isNaN(t) ? Number.MIN_SAFE_INTEGER : t;
}

export type Resolved = { backup: Backup; error?: undefined } | { backup?: undefined; error: string };

/**
 * The backup `restore` reads. spec.backupName wins when set: the user's choice, or the one the
 * controller recorded when the restore started from its schedule (then it must be one of that
 * schedule's backups). `get` reads a backup by name in the restore's namespace; `list` lists that
 * namespace's backups.
 */
export function resolveBackup(
  restore: Restore, namespace: string, get: (name: string) => Backup | undefined, list: () => readonly Backup[], trusted?: (b: Backup) => boolean,
): Resolved {
  const { backupName, scheduleName } = restore.spec;
  const schedule = scheduleName ?? '';
  if (backupName !== undefined && backupName !== '') {
    const backup = get(backupName);
    if (backup === undefined) return { error: `backup "${backupName}" does not exist in namespace ${namespace}` };
    if (schedule !== '' && backup.metadata.labels?.[LABEL_SCHEDULE_NAME] !== labelValue(schedule)) {
      return { error: `backup "${backupName}" is not a backup of schedule "${schedule}"; set either backupName or scheduleName` };
    }
    return { backup };
  }
  if (schedule === '') return { error: 'backupName (or scheduleName) is required' };
  const backup = latestBackupOfSchedule(list(), schedule, trusted);
  if (backup !== undefined) return { backup };
  const untrusted = trusted !== undefined ? latestBackupOfSchedule(list(), schedule) : undefined;
  return {
    error: `schedule "${schedule}" has no Completed backup in namespace ${namespace}` +
      (untrusted !== undefined ? ` whose schedule label can be trusted (backup "${untrusted.metadata.name}" was synced from a signing location without a verified signature)` : ''),
  };
}

/** resolveBackup over the shared Backup cache, in the restore's namespace. */
export function resolveBackupOf(ctx: ControllerContext, r: Restore): Resolved {
  const namespace = r.metadata.namespace ?? ctx.namespace;
  const backups = ctx.informer<Backup>('Backup');
  // A schedule label synced from a signing location steers the pick only once sync verified its signature.
  const trusted = (b: Backup): boolean => labelsTrusted(b, b.metadata.annotations?.[ANNOTATION_SYNCED_FROM], resolveLocation(ctx, b.spec.storageLocation));
  return resolveBackup(r, namespace, (name) => backups.get(`${namespace}/${name}`),
    () => backups.list().filter((b) => (b.metadata.namespace ?? ctx.namespace) === namespace), trusted);
}
