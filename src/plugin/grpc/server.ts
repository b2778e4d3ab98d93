// Plugin side: a gRPC server serving every service for a set of plugin implementations.
import type { Http2Server, ServerHttp2Session } from 'node:http2';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type {
  BackupItemAction,
  DeleteItemAction,
  KeyManager,
  ObjectStore,
  PluginInfo,
  PluginKind,
  RestoreItemAction,
  VolumeSnapshotter,
} from '../api/index.js';
import { PluginListerService } from '../../gen/stowage/plugin/v1/lister.js';
import {
  DeleteItemActionService,
  RestoreItemActionService,
} from '../../gen/stowage/plugin/v1/item_actions.js';
import { VolumeSnapshotterService } from '../../gen/stowage/plugin/v1/volume_snapshotter.js';
import { KeyManagerService } from '../../gen/stowage/plugin/v1/key_manager.js';
import { ControllerService } from '../../gen/stowage/plugin/v1/controller.js';
import { HealthService } from '../../gen/grpc/health/v1/health.js';
import { backupItemActionServer, deleteItemActionServer, restoreItemActionServer } from './actionServers.js';
import { MAX_MESSAGE_BYTES } from './connection.js';
import { FastObjectStoreService } from './fastCodec.js';
import { FastBackupItemActionService } from './batchCodec.js';
import { controllerServer, healthServer, pluginListerServer } from './coreServers.js';
import { keyManagerServer } from './keyManagerServer.js';
import { objectStoreServer } from './objectStoreServer.js';
import type { Factory, ServeHooks } from './serverCommon.js';
import { volumeSnapshotterServer } from './snapshotterServer.js';

/** Plugin implementations by name; each factory runs once (actions) or once per Init (stateful kinds). */
export interface PluginImplementations {
  objectStores?: Record<string, Factory<ObjectStore>>;
  backupItemActions?: Record<string, Factory<BackupItemAction>>;
  restoreItemActions?: Record<string, Factory<RestoreItemAction>>;
  deleteItemActions?: Record<string, Factory<DeleteItemAction>>;
  volumeSnapshotters?: Record<string, Factory<VolumeSnapshotter>>;
  keyManagers?: Record<string, Factory<KeyManager>>;
}

const KIND_OF_FIELD: Record<keyof PluginImplementations, PluginKind> = {
  objectStores: 'ObjectStore',
  backupItemActions: 'BackupItemAction',
  restoreItemActions: 'RestoreItemAction',
  deleteItemActions: 'DeleteItemAction',
  volumeSnapshotters: 'VolumeSnapshotter',
  keyManagers: 'KeyManager',
};

export function listedPlugins(impls: PluginImplementations): PluginInfo[] {
  const out: PluginInfo[] = [];
  for (const [field, kind] of Object.entries(KIND_OF_FIELD) as [keyof PluginImplementations, PluginKind][]) {
    for (const name of Object.keys(impls[field] ?? {})) out.push({ kind, name });
  }
  return out;
}

/**
 * HTTP/2 flow-control window of each stream the plugin receives (PutObject chunks). Node's default
 * of 64 KiB lets the host send only 64 KiB per round trip, which caps uploads far below the
 * storage's speed on a busy machine; 16 MiB per stream keeps many chunks in flight.
 * The session window is left alone: session.setLocalWindowSize() on these server sessions stalled
 * 16 concurrent calls of 30 KiB for good (test/plugin/batch.test.ts), and raising it by
 * incrementWindowSize() instead made no measurable difference to PutObject throughput.
 */
export const STREAM_WINDOW_BYTES = 16 * 1024 * 1024;
/** Largest HTTP/2 frame the host may send: a whole chunk in a few frames, not 64 frames of 16 KiB. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/**
 * grpc-js has no server option for window sizes, so widen them on each new HTTP/2 session of the
 * server's listeners. Feature-detected: if grpc-js changes its internals, defaults stay in force.
 */
function widenFlowControlWindows(server: Server): void {
  const listeners = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(listeners instanceof Map)) return;
  for (const http2Server of listeners.keys() as IterableIterator<Http2Server>) {
    http2Server.on('session', (session: ServerHttp2Session) => {
      try {
        session.settings({ initialWindowSize: STREAM_WINDOW_BYTES, maxFrameSize: MAX_FRAME_BYTES });
      } catch {
        // a session closing as it opens: nothing to tune
      }
    });
  }
}

export interface RunningPluginServer {
  /** Stops accepting calls and waits up to graceMs for in-flight ones. */
  close(graceMs: number): Promise<void>;
}

/** Serves `impls` on the unix socket `socketPath`; `onShutdown` runs when the host asks to stop. */
export async function startPluginServer(
  impls: PluginImplementations,
  hooks: ServeHooks,
  socketPath: string,
  onShutdown: () => void,
): Promise<RunningPluginServer> {
  const server = new Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(PluginListerService, pluginListerServer(listedPlugins(impls), hooks));
  server.addService(FastObjectStoreService, objectStoreServer(impls.objectStores ?? {}, hooks));
  server.addService(FastBackupItemActionService, backupItemActionServer(impls.backupItemActions ?? {}, hooks));
  server.addService(RestoreItemActionService, restoreItemActionServer(impls.restoreItemActions ?? {}, hooks));
  server.addService(DeleteItemActionService, deleteItemActionServer(impls.deleteItemActions ?? {}, hooks));
  server.addService(VolumeSnapshotterService, volumeSnapshotterServer(impls.volumeSnapshotters ?? {}, hooks));
  server.addService(KeyManagerService, keyManagerServer(impls.keyManagers ?? {}, hooks));
  server.addService(ControllerService, controllerServer(onShutdown, hooks));
  server.addService(
    HealthService,
    healthServer([
      'stowage.plugin.v1.PluginLister',
      'stowage.plugin.v1.ObjectStore',
      'stowage.plugin.v1.BackupItemAction',
      'stowage.plugin.v1.RestoreItemAction',
      'stowage.plugin.v1.DeleteItemAction',
      'stowage.plugin.v1.VolumeSnapshotter',
      'stowage.plugin.v1.KeyManager',
      'stowage.plugin.v1.Controller',
    ]),
  );
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix:${socketPath}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });
  widenFlowControlWindows(server);
  return {
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
