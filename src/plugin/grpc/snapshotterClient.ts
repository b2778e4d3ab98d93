// Host side of the VolumeSnapshotter service.
import type { KubeObject, PluginConfig } from '../api/index.js';
import type { InstanceRef } from '../../gen/stowage/plugin/v1/common.js';
import type { PluginConnection } from './connection.js';
import { decodeObject, encodeObject } from './convert.js';
import { unary, type CallContext } from './unary.js';

export async function snapshotterInit(conn: PluginConnection, ctx: CallContext, plugin: string, config: PluginConfig): Promise<string> {
  const c = conn.volumeSnapshotter;
  return (await unary(c.init.bind(c), { plugin, config: { ...config } }, ctx)).instanceId;
}

export async function snapshotterCreateSnapshot(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  volumeId: string,
  volumeAz: string,
  tags: Record<string, string>,
): Promise<string> {
  const c = conn.volumeSnapshotter;
  return (await unary(c.createSnapshot.bind(c), { instance: ref, volumeId, volumeAz, tags: { ...tags } }, ctx)).snapshotId;
}

export async function snapshotterDeleteSnapshot(conn: PluginConnection, ctx: CallContext, ref: InstanceRef, snapshotId: string): Promise<void> {
  const c = conn.volumeSnapshotter;
  await unary(c.deleteSnapshot.bind(c), { instance: ref, snapshotId }, ctx);
}

export async function snapshotterCreateVolume(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  snapshotId: string,
  volumeType: string,
  volumeAz: string,
  iops: number | undefined,
): Promise<string> {
  const c = conn.volumeSnapshotter;
  const res = await unary(c.createVolumeFromSnapshot.bind(c), { instance: ref, snapshotId, volumeType, volumeAz, iops }, ctx);
  return res.volumeId;
}

export async function snapshotterGetVolumeID(conn: PluginConnection, ctx: CallContext, ref: InstanceRef, pv: KubeObject): Promise<string> {
  const c = conn.volumeSnapshotter;
  return (await unary(c.getVolumeId.bind(c), { instance: ref, persistentVolume: encodeObject(pv) }, ctx)).volumeId;
}

export async function snapshotterSetVolumeID(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  pv: KubeObject,
  volumeId: string,
): Promise<KubeObject> {
  const c = conn.volumeSnapshotter;
  const res = await unary(c.setVolumeId.bind(c), { instance: ref, persistentVolume: encodeObject(pv), volumeId }, ctx);
  return decodeObject(res.persistentVolume, `PersistentVolume returned by ${ref.plugin}`);
}

export async function snapshotterGetVolumeInfo(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  volumeId: string,
  volumeAz: string,
): Promise<{ volumeType: string; iops: number | undefined }> {
  const c = conn.volumeSnapshotter;
  const res = await unary(c.getVolumeInfo.bind(c), { instance: ref, volumeId, volumeAz }, ctx);
  return { volumeType: res.volumeType, iops: res.iops };
}
