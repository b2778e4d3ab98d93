// The plugin SDK: everything a plugin author imports (`stowage/plugin-sdk`).
export { servePlugins, validatePluginNames, negotiateVersion, type PluginServeOptions } from './serve.js';
export { callOutageWindow, callSignal, log, type PluginLogger, type LogFields, type LogLevel } from './logger.js';
export type {
  ObjectStore,
  PluginConfig,
  KubeObject,
  ResourceIdentifier,
  ResourceSelector,
  BackupItemAction,
  RestoreItemAction,
  DeleteItemAction,
  VolumeSnapshotter,
  KeyManager,
  KeyUnavailableReason,
  PluginInfo,
  PluginKind,
  RunIdentity,
  ResumableGetObject,
} from '../api/index.js';
/** Thrown by a KeyManager's unwrapKey to refuse ('unknown-key', 'wrong-key'); the server gets the reason and message. */
export { KeyUnavailableError, PLUGIN_NAME_PATTERN } from '../api/index.js';
/** Names the environment variable holding the server's object-store outage window (ms). */
export { OBJECT_STORE_OUTAGE_ENV } from '../grpc/index.js';
