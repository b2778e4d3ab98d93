export type { ObjectStore, PluginConfig } from './objectStore.js';
export type { KubeObject, ResourceIdentifier, ResourceSelector } from './items.js';
export { executeEachItem, executeItems } from './actions.js';
export type {
  BackupItemAction,
  BackupItemActionBatchResult,
  BackupItemActionOutput,
  RestoreItemAction,
  DeleteItemAction,
} from './actions.js';
export type { VolumeSnapshotter } from './volumeSnapshotter.js';
export { DATA_KEY_BYTES, KeyUnavailableError, type KeyManager, type KeyUnavailableReason } from './keyManager.js';
export { PLUGIN_KINDS, PLUGIN_NAME_PATTERN, type PluginKind, type PluginInfo, type RunIdentity } from './kinds.js';
export { replayableBody, isReplayable, isResumable, type ReplayableBody, type ResumableGetObject } from './bodies.js';
