// Constructors and small predicates over the generated types.
import crypto from 'node:crypto';
import { API_VERSION, BACKUP_TERMINAL_PHASES, LABEL_BACKUP_NAME, LABEL_SCHEDULE_NAME, RESTORE_TERMINAL_PHASES } from './constants.js';
import type { ObjectMeta } from './meta.js';
import type {
  Backup,
  BackupPhase,
  BackupSpec,
  BackupStorageLocation,
  BackupStorageLocationSpec,
  DeleteBackupRequest,
  DownloadRequest,
  DownloadTarget,
  KindMap,
  Restore,
  RestorePhase,
  RestoreSpec,
  Schedule,
  ScheduleSpec,
  ServerStatusRequest,
} from './types.gen.js';

function meta(name: string, namespace: string, labels?: Record<string, string>): ObjectMeta {
  return labels === undefined ? { name, namespace } : { name, namespace, labels: { ...labels } };
}

/** A new object of kind K with apiVersion and kind filled in. */
export function newObject<K extends keyof KindMap>(kind: K, metadata: ObjectMeta, spec: KindMap[K]['spec']): KindMap[K] {
  // reason: TS cannot narrow a generic K to a member of the KindMap union; the shape is identical for every kind.
  return { apiVersion: API_VERSION, kind, metadata, spec } as KindMap[K];
}

export function newBackup(name: string, namespace: string, spec: BackupSpec = {}, labels?: Record<string, string>): Backup {
  return newObject('Backup', meta(name, namespace, labels), spec);
}

export function newRestore(name: string, namespace: string, spec: RestoreSpec, labels?: Record<string, string>): Restore {
  return newObject('Restore', meta(name, namespace, labels), spec);
}

export function newBackupStorageLocation(name: string, namespace: string, spec: BackupStorageLocationSpec): BackupStorageLocation {
  return newObject('BackupStorageLocation', meta(name, namespace), spec);
}

export function newSchedule(name: string, namespace: string, spec: ScheduleSpec): Schedule {
  return newObject('Schedule', meta(name, namespace), spec);
}

/**
 * The Backup a schedule makes, whether its controller fires it or a user triggers it: the template
 * (copied, never shared with the Schedule), the Schedule's labels plus the schedule-name label, and
 * the owner reference when the Schedule asks for one. Who requested it is the caller's to add.
 */
export function newScheduledBackup(schedule: Schedule, backupName: string): Backup {
  const labels: Record<string, string> = { ...(schedule.metadata.labels ?? {}), [LABEL_SCHEDULE_NAME]: labelValue(schedule.metadata.name) };
  const backup = newBackup(backupName, schedule.metadata.namespace ?? '', structuredClone(schedule.spec.template ?? {}), labels);
  const uid = schedule.metadata.uid;
  if (schedule.spec.useOwnerReferencesInBackup === true && uid !== undefined) {
    backup.metadata.ownerReferences = [{ apiVersion: schedule.apiVersion, kind: 'Schedule', name: schedule.metadata.name, uid, controller: true }];
  }
  return backup;
}

/** Uses generateName, so several requests for one backup can coexist (a failed one can be retried). */
export function newDeleteBackupRequest(backupName: string, namespace: string): DeleteBackupRequest {
  return newObject('DeleteBackupRequest', { name: '', generateName: `${backupName}-`, namespace, labels: { [LABEL_BACKUP_NAME]: labelValue(backupName) } }, { backupName });
}

export function newDownloadRequest(namespace: string, target: DownloadTarget): DownloadRequest {
  return newObject('DownloadRequest', { name: '', generateName: `${target.name}-`, namespace }, { target });
}

export function newServerStatusRequest(namespace: string): ServerStatusRequest {
  return newObject('ServerStatusRequest', { name: '', generateName: 'stowage-cli-', namespace }, {});
}

/**
 * A name usable as a label value (at most 63 characters). Longer names are cut and suffixed with a
 * hash of the full name, so two long names that share a prefix still get different values.
 */
export function labelValue(name: string): string {
  if (name.length <= 63) return name;
  const hash = crypto.createHash('sha256').update(name).digest('hex').slice(0, 6);
  return `${name.slice(0, 56).replace(/[-_.]+$/, '')}-${hash}`;
}

export function isBackupTerminal(phase: BackupPhase | undefined): boolean {
  return phase !== undefined && (BACKUP_TERMINAL_PHASES as readonly string[]).includes(phase);
}

export function isRestoreTerminal(phase: RestorePhase | undefined): boolean {
  return phase !== undefined && (RESTORE_TERMINAL_PHASES as readonly string[]).includes(phase);
}
