// The built-in restore item actions. They implement plugin/api's RestoreItemAction, so they run
// through the same path as plugin actions, before them.
import type { RestoreItemAction } from '../../plugin/api/index.js';
import { jobAction } from './job.js';
import { podAction } from './pod.js';
import { serviceAction } from './service.js';
import { serviceAccountAction, tokenSecretAction } from './serviceAccounts.js';
import { persistentVolumeAction, persistentVolumeClaimAction } from './volumes.js';

export const BUILTIN_RESTORE_ITEM_ACTIONS: readonly { name: string; action: RestoreItemAction }[] = [
  { name: 'stowage.dev/pod', action: podAction },
  { name: 'stowage.dev/service', action: serviceAction },
  { name: 'stowage.dev/job', action: jobAction },
  { name: 'stowage.dev/persistent-volume', action: persistentVolumeAction },
  { name: 'stowage.dev/persistent-volume-claim', action: persistentVolumeClaimAction },
  { name: 'stowage.dev/service-account', action: serviceAccountAction },
  { name: 'stowage.dev/service-account-token-secret', action: tokenSecretAction },
];

export { restorePod, isTokenVolume } from './pod.js';
export { restoreService } from './service.js';
export { restoreJob, JOB_UID_LABELS } from './job.js';
export { restorePersistentVolume, restorePersistentVolumeClaim, PVC_BINDING_ANNOTATIONS } from './volumes.js';
export { restoreServiceAccount, restoreTokenSecret, isGeneratedTokenName } from './serviceAccounts.js';
export { actionMatcher, resolveRestoreItemActions, selectorFor, type ActionMatcher, type ResolvedRestoreItemAction } from './selector.js';
