// Names shared by the server, the CLI and the CRDs. Value lists here feed the schema enums in
// kinds.ts, so the phase unions in types.gen.ts and the CRD validation come from the same arrays.

export const GROUP = 'stowage.dev';
export const VERSION = 'v1';
export const API_VERSION = 'stowage.dev/v1';

/** Namespace of the server and of its custom resources unless configured otherwise. */
export const DEFAULT_NAMESPACE = 'stowage';

export const LABEL_BACKUP_NAME = 'stowage.dev/backup-name';
export const LABEL_BACKUP_UID = 'stowage.dev/backup-uid';
export const LABEL_RESTORE_NAME = 'stowage.dev/restore-name';
export const LABEL_SCHEDULE_NAME = 'stowage.dev/schedule-name';
export const LABEL_STORAGE_LOCATION = 'stowage.dev/storage-location';
/** Set on Backups that backup sync imported from object storage rather than created here. */
export const ANNOTATION_SYNCED_FROM = 'stowage.dev/synced-from';
/**
 * Set on Backups that backup sync imported from a Velero location (value `velero`): read-only
 * records of another tool's backups, which Stowage restores from but never writes, expires or deletes.
 */
export const LABEL_IMPORTED_FROM = 'stowage.dev/imported-from';
export const IMPORTED_FROM_VELERO = 'velero';
/** Set on DownloadRequests/ServerStatusRequests by the CLI, for cleanup of stale requests. */
export const LABEL_CREATED_BY = 'stowage.dev/created-by';
/** Held on a Restore that has run, until the server has removed its log and results from object storage. */
export const RESTORE_ARTIFACTS_FINALIZER = 'stowage.dev/restore-artifacts';

/** Canceled: spec.cancel stopped the run; nothing it did is restorable (a backup keeps only its log and results). */
export const BACKUP_PHASES = ['New', 'FailedValidation', 'InProgress', 'Completed', 'PartiallyFailed', 'Failed', 'Canceled', 'Deleting'] as const;
export const RESTORE_PHASES = ['New', 'FailedValidation', 'InProgress', 'Completed', 'PartiallyFailed', 'Failed', 'Canceled'] as const;
export const BSL_PHASES = ['Available', 'Unavailable'] as const;
export const BSL_ACCESS_MODES = ['ReadWrite', 'ReadOnly'] as const;
/** Whose layout a location's bucket holds: Stowage's own, or Velero's (read only). */
export const BSL_LAYOUTS = ['Stowage', 'Velero'] as const;
export const SCHEDULE_PHASES = ['New', 'Enabled', 'FailedValidation'] as const;
export const DELETE_BACKUP_REQUEST_PHASES = ['New', 'InProgress', 'Processed'] as const;
export const DOWNLOAD_REQUEST_PHASES = ['New', 'Processed'] as const;
/** Download targets stored in object storage, next to their backup or restore. */
export const STORED_DOWNLOAD_TARGET_KINDS = [
  'BackupLog',
  'BackupContents',
  'BackupResourceList',
  'BackupResults',
  'BackupManifest',
  'RestoreLog',
  'RestoreResults',
  'RestoreResourceList',
] as const;
export type StoredDownloadTargetKind = (typeof STORED_DOWNLOAD_TARGET_KINDS)[number];
/**
 * Every download target. `ServerLog` is the answering server's recent log lines, kept in its
 * memory (for `stowage debug`); its name is the server's namespace.
 */
export const DOWNLOAD_TARGET_KINDS = [...STORED_DOWNLOAD_TARGET_KINDS, 'ServerLog'] as const;
/** A download target in words, for messages ("the log of backup \"b1\""). */
export const DOWNLOAD_TARGET_WORDS: Readonly<Record<(typeof DOWNLOAD_TARGET_KINDS)[number], string>> = {
  BackupLog: 'log of backup',
  BackupContents: 'contents of backup',
  BackupResourceList: 'resource list of backup',
  BackupResults: 'results of backup',
  BackupManifest: 'manifest of backup',
  RestoreLog: 'log of restore',
  RestoreResults: 'results of restore',
  RestoreResourceList: 'resource list of restore',
  ServerLog: 'recent log lines of the server in namespace',
};
export const SERVER_STATUS_REQUEST_PHASES = ['New', 'Processed'] as const;
export const VSL_PHASES = ['Available', 'Unavailable'] as const;
export const EXISTING_RESOURCE_POLICIES = ['none', 'update'] as const;
export const LABEL_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

/** Backup phases after which nothing more happens to the run. */
export const BACKUP_TERMINAL_PHASES = ['FailedValidation', 'Completed', 'PartiallyFailed', 'Failed', 'Canceled'] as const;
export const RESTORE_TERMINAL_PHASES = ['FailedValidation', 'Completed', 'PartiallyFailed', 'Failed', 'Canceled'] as const;
/** The only backup phases a restore may read from (a backup whose stowage-backup.json was written). */
export const RESTORABLE_BACKUP_PHASES = ['Completed', 'PartiallyFailed'] as const;
/** Set by the admission webhook when spec.cancel turns true: who asked for the cancel (the run log and status name them). */
export const ANNOTATION_CANCELED_BY = 'stowage.dev/canceled-by';

/** Defaults the controllers apply when a field is unset (not CRD defaults, so old objects behave the same). */
export const DEFAULT_BACKUP_TTL = '720h0m0s';
export const DEFAULT_VALIDATION_FREQUENCY = '1m';
export const DEFAULT_BACKUP_SYNC_PERIOD = '1m';
