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
/** Set on DownloadRequests/ServerStatusRequests by the CLI, for cleanup of stale requests. */
export const LABEL_CREATED_BY = 'stowage.dev/created-by';
/** Held on a Restore that has run, until the server has removed its log and results from object storage. */
export const RESTORE_ARTIFACTS_FINALIZER = 'stowage.dev/restore-artifacts';

export const BACKUP_PHASES = ['New', 'FailedValidation', 'InProgress', 'Completed', 'PartiallyFailed', 'Failed', 'Deleting'] as const;
export const RESTORE_PHASES = ['New', 'FailedValidation', 'InProgress', 'Completed', 'PartiallyFailed', 'Failed'] as const;
export const BSL_PHASES = ['Available', 'Unavailable'] as const;
export const BSL_ACCESS_MODES = ['ReadWrite', 'ReadOnly'] as const;
export const SCHEDULE_PHASES = ['New', 'Enabled', 'FailedValidation'] as const;
export const DELETE_BACKUP_REQUEST_PHASES = ['New', 'InProgress', 'Processed'] as const;
export const DOWNLOAD_REQUEST_PHASES = ['New', 'Processed'] as const;
export const DOWNLOAD_TARGET_KINDS = [
  'BackupLog',
  'BackupContents',
  'BackupResourceList',
  'BackupResults',
  'BackupManifest',
  'RestoreLog',
  'RestoreResults',
  'RestoreResourceList',
] as const;
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
};
export const SERVER_STATUS_REQUEST_PHASES = ['New', 'Processed'] as const;
export const VSL_PHASES = ['Available', 'Unavailable'] as const;
export const EXISTING_RESOURCE_POLICIES = ['none', 'update'] as const;
export const LABEL_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

/** Backup phases after which nothing more happens to the run. */
export const BACKUP_TERMINAL_PHASES = ['FailedValidation', 'Completed', 'PartiallyFailed', 'Failed'] as const;
export const RESTORE_TERMINAL_PHASES = ['FailedValidation', 'Completed', 'PartiallyFailed', 'Failed'] as const;

/** Defaults the controllers apply when a field is unset (not CRD defaults, so old objects behave the same). */
export const DEFAULT_BACKUP_TTL = '720h0m0s';
export const DEFAULT_VALIDATION_FREQUENCY = '1m';
export const DEFAULT_BACKUP_SYNC_PERIOD = '1m';
