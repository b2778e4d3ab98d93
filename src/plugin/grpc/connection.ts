// One gRPC channel to a plugin process, shared by a client for each service it may serve.
import { Channel, credentials, type ChannelOptions } from '@grpc/grpc-js';
import { PluginListerClient } from '../../gen/stowage/plugin/v1/lister.js';
import type { ObjectStoreClient } from '../../gen/stowage/plugin/v1/object_store.js';
import { FastObjectStoreClient } from './fastCodec.js';
import { FastBackupItemActionClient } from './batchCodec.js';
import {
  type BackupItemActionClient,
  DeleteItemActionClient,
  RestoreItemActionClient,
} from '../../gen/stowage/plugin/v1/item_actions.js';
import { VolumeSnapshotterClient } from '../../gen/stowage/plugin/v1/volume_snapshotter.js';
import { KeyManagerClient } from '../../gen/stowage/plugin/v1/key_manager.js';
import { ControllerClient } from '../../gen/stowage/plugin/v1/controller.js';
import { HealthClient } from '../../gen/grpc/health/v1/health.js';

/** Largest message either side accepts: a 1 MiB chunk, or one large Kubernetes object as JSON. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export const CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  // A plugin is on the same machine: never wait for a dead socket to come back.
  'grpc.enable_retries': 0,
  // What the host receives (GetObject chunks): 1 MiB (16 chunks) in flight rather than HTTP/2's 64 KiB.
  // Whatever the window admits is buffered in the server until the reader takes it: at 16 MiB a
  // 50k-object restore's peak RSS was 15 MiB higher (bench/README.md, "Session 17").
  'grpc-node.flow_control_window': 1024 * 1024,
};

export interface PluginConnection {
  readonly target: string;
  readonly lister: PluginListerClient;
  readonly objectStore: ObjectStoreClient;
  readonly backupItemAction: BackupItemActionClient;
  readonly restoreItemAction: RestoreItemActionClient;
  readonly deleteItemAction: DeleteItemActionClient;
  readonly volumeSnapshotter: VolumeSnapshotterClient;
  readonly keyManager: KeyManagerClient;
  readonly controller: ControllerClient;
  readonly health: HealthClient;
  close(): void;
}

/** Target string for a handshake's network and address (`unix` socket path or `tcp` host:port). */
export function grpcTarget(network: 'unix' | 'tcp', address: string): string {
  return network === 'unix' ? `unix:${address}` : address;
}

export function connectPlugin(target: string): PluginConnection {
  const creds = credentials.createInsecure();
  const channel = new Channel(target, creds, CHANNEL_OPTIONS);
  const opts = { channelOverride: channel };
  return {
    target,
    lister: new PluginListerClient(target, creds, opts),
    objectStore: new FastObjectStoreClient(target, creds, opts),
    backupItemAction: new FastBackupItemActionClient(target, creds, opts),
    restoreItemAction: new RestoreItemActionClient(target, creds, opts),
    deleteItemAction: new DeleteItemActionClient(target, creds, opts),
    volumeSnapshotter: new VolumeSnapshotterClient(target, creds, opts),
    keyManager: new KeyManagerClient(target, creds, opts),
    controller: new ControllerClient(target, creds, opts),
    health: new HealthClient(target, creds, opts),
    close: () => channel.close(),
  };
}
