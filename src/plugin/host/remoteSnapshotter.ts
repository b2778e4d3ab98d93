// The host's VolumeSnapshotter. Creating a snapshot or a volume is not idempotent, so those two
// calls are not retried after a process death; the others are.
import type { PluginConfig, VolumeSnapshotter } from '../api/index.js';
import {
  snapshotterCreateSnapshot,
  snapshotterCreateVolume,
  snapshotterDeleteSnapshot,
  snapshotterGetVolumeID,
  snapshotterGetVolumeInfo,
  snapshotterSetVolumeID,
  type CallContext,
  type InstanceRef,
} from '../grpc/index.js';
import { callPlugin, type CallPolicy, type CallSite } from './call.js';
import type { PluginInstance } from './instances.js';
import type { Live } from './restartable.js';

export function remoteVolumeSnapshotter(
  site: CallSite,
  instance: () => PluginInstance,
  reinit: (config: PluginConfig) => Promise<void>,
  policy: CallPolicy,
): VolumeSnapshotter {
  const once: CallPolicy = { ...policy, retryBlocker: () => 'the call is not idempotent, so it is not retried' };
  const call = <T>(method: string, p: CallPolicy, op: (live: Live, ctx: CallContext, r: InstanceRef) => Promise<T>): Promise<T> =>
    callPlugin(site, method, p, async (live, ctx) => {
      const inst = instance();
      return op(live, ctx, { plugin: inst.plugin, instanceId: await inst.idOn(live, ctx) });
    });
  return {
    init: (config) => reinit(config),
    createSnapshot: (volumeId, volumeAZ, tags) =>
      call('CreateSnapshot', once, (l, c, r) => snapshotterCreateSnapshot(l.conn, c, r, volumeId, volumeAZ, tags)),
    deleteSnapshot: (snapshotId) => call('DeleteSnapshot', policy, (l, c, r) => snapshotterDeleteSnapshot(l.conn, c, r, snapshotId)),
    createVolumeFromSnapshot: (snapshotId, volumeType, volumeAZ, iops) =>
      call('CreateVolumeFromSnapshot', once, (l, c, r) => snapshotterCreateVolume(l.conn, c, r, snapshotId, volumeType, volumeAZ, iops)),
    getVolumeID: (pv) => call('GetVolumeID', policy, (l, c, r) => snapshotterGetVolumeID(l.conn, c, r, pv)),
    setVolumeID: (pv, volumeId) => call('SetVolumeID', policy, (l, c, r) => snapshotterSetVolumeID(l.conn, c, r, pv, volumeId)),
    getVolumeInfo: (volumeId, volumeAZ) => call('GetVolumeInfo', policy, (l, c, r) => snapshotterGetVolumeInfo(l.conn, c, r, volumeId, volumeAZ)),
  };
}
