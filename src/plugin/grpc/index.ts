// Adapters between plugin/api and the generated gRPC code (the only importer of src/gen).
export * from './protocol.js';
export { CHUNK_SIZE, rechunk } from './chunks.js';
export { connectPlugin, grpcTarget, type PluginConnection } from './connection.js';
export { RemoteCallError, StatusError } from './errors.js';
export { runMetadata, runFromMetadata } from './metadata.js';
export { abortReason, type CallContext } from './unary.js';
export type { CallInfo, ServeHooks, Factory } from './serverCommon.js';
export { startPluginServer, listedPlugins, type PluginImplementations, type RunningPluginServer } from './server.js';
export * from './objectStoreClient.js';
export * from './actionClients.js';
export * from './snapshotterClient.js';
export * from './keyManagerClient.js';
export * from './coreClient.js';
export { status as GrpcStatus } from '@grpc/grpc-js';
