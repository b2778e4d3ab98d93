// The plugin host: discovery, the server-wide plugin pool and per-run handles.
export {
  createPluginPool,
  BUILTIN_EXECUTABLE,
  type PluginPool,
  type PluginPoolOptions,
  type PluginPoolStatus,
} from './pool.js';
export type { PluginHandle } from './handle.js';
export type { RunCallOptions } from './call.js';
export type { Named } from './remoteActions.js';
export type { RegisteredPlugin } from './registry.js';
export { scanPluginDirs } from './registry.js';
export { parseHandshake, HandshakeError, type Handshake } from './handshake.js';
export { PluginCallError, PluginCrashLoopError, PluginRegistryError } from './errors.js';
export { PluginStartError } from './spawn.js';
export { AWS_IDENTITY_ENV, pluginEnv } from './env.js';
export { credentialsDir, removeAllCredentialFiles, removeCredentialFiles, writeCredentialFile } from './credentialFiles.js';
export { replayableBody } from '../api/index.js';
