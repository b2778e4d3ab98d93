// A backup made now from a schedule's template, for `schedule trigger` and `backup create
// --from-schedule`: named and labelled as the schedule controller names and labels its own
// backups (newScheduledBackup), so retention, `restore --from-schedule` and the controller's
// "still running" check count it as one of the schedule's backups.
import { LABEL_SCHEDULE_NAME, RESOURCES, labelValue, newScheduledBackup, type Backup, type Schedule } from '../../apis/v1/index.js';
import { scheduledBackupName } from '../../schedule/cron.js';
import { CliError } from './errors.js';
import { getInNamespace, type CliContext } from './kubeContext.js';

export function scheduleNotFound(name: string, namespace: string): CliError {
  return new CliError(`schedule "${name}" not found in namespace ${namespace}`);
}

export function getSchedule(ctx: CliContext, name: string): Promise<Schedule> {
  return getInNamespace<Schedule>(ctx, RESOURCES.Schedule, name, scheduleNotFound);
}

/**
 * The Backup to submit: `<schedule>-<yyyyMMddHHmmss>` unless named, with `labels` added. No
 * requester stamp is copied: the admission webhook stamps the user who submits it.
 */
export function backupOfSchedule(schedule: Schedule, name?: string, labels?: Record<string, string>, now = new Date()): Backup {
  if (schedule.status?.phase === 'FailedValidation') {
    const why = (schedule.status.validationErrors ?? []).join('; ');
    throw new CliError(`schedule "${schedule.metadata.name}" failed validation, so its template cannot be used${why !== '' ? `: ${why}` : ''}`);
  }
  const backup = newScheduledBackup(schedule, name ?? scheduledBackupName(schedule.metadata.name, now));
  // The user's labels may override the schedule's, never the schedule-name label that makes it the schedule's.
  if (labels !== undefined) backup.metadata.labels = { ...backup.metadata.labels, ...labels, [LABEL_SCHEDULE_NAME]: labelValue(schedule.metadata.name) };
  return backup;
}
