// The backup engine: what the controller calls.
export { runBackup, type BackupDeps, type BackupResult } from './run.js';
export { planBackupScope, type BackupScope, type ScopeOutcome } from './scope.js';
export { newBackupRequest, LABEL_EXCLUDE_FROM_BACKUP, type BackupRequest, type BackupProgress, type ItemRef } from './request.js';
export { NEVER_BACKED_UP, SUPERSEDED_BY, selectResources } from './resources.js';
export {
  builtinActions, podVolumeClaimsAction, podServiceAccountAction, pvcVolumeAction, customResourceDefinitionAction,
  type NamedBackupItemAction,
} from './actions/index.js';
