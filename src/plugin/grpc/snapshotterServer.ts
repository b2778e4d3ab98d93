// Plugin side of the VolumeSnapshotter service.
import type { VolumeSnapshotter } from '../api/index.js';
import type { VolumeSnapshotterServer } from '../../gen/stowage/plugin/v1/volume_snapshotter.js';
import { decodeObject, encodeObject } from './convert.js';
import { InstanceTable, unaryHandler, unknownPlugin, type Factory, type ServeHooks } from './serverCommon.js';

export function volumeSnapshotterServer(factories: Record<string, Factory<VolumeSnapshotter>>, hooks: ServeHooks): VolumeSnapshotterServer {
  const service = 'VolumeSnapshotter';
  const instances = new InstanceTable<VolumeSnapshotter>();
  const of = (ref: { plugin: string; instanceId: string } | undefined) => instances.get('VolumeSnapshotter', ref);
  const pluginOf = (r: { instance?: { plugin: string } | undefined }) => r.instance?.plugin ?? '';
  return {
    init: unaryHandler(hooks, service, 'Init', (r) => r.plugin, async (req) => {
      const factory = factories[req.plugin];
      if (factory === undefined) throw unknownPlugin('VolumeSnapshotter', req.plugin, Object.keys(factories));
      const snapshotter = await factory();
      await snapshotter.init({ ...req.config });
      return { instanceId: instances.add(req.plugin, snapshotter) };
    }),
    createSnapshot: unaryHandler(hooks, service, 'CreateSnapshot', pluginOf, async (req) => ({
      snapshotId: await of(req.instance).createSnapshot(req.volumeId, req.volumeAz, { ...req.tags }),
    })),
    deleteSnapshot: unaryHandler(hooks, service, 'DeleteSnapshot', pluginOf, async (req) => {
      await of(req.instance).deleteSnapshot(req.snapshotId);
      return {};
    }),
    createVolumeFromSnapshot: unaryHandler(hooks, service, 'CreateVolumeFromSnapshot', pluginOf, async (req) => ({
      volumeId: await of(req.instance).createVolumeFromSnapshot(req.snapshotId, req.volumeType, req.volumeAz, req.iops),
    })),
    getVolumeId: unaryHandler(hooks, service, 'GetVolumeID', pluginOf, async (req) => ({
      volumeId: await of(req.instance).getVolumeID(decodeObject(req.persistentVolume, 'persistentVolume')),
    })),
    setVolumeId: unaryHandler(hooks, service, 'SetVolumeID', pluginOf, async (req) => ({
      persistentVolume: encodeObject(await of(req.instance).setVolumeID(decodeObject(req.persistentVolume, 'persistentVolume'), req.volumeId)),
    })),
    getVolumeInfo: unaryHandler(hooks, service, 'GetVolumeInfo', pluginOf, async (req) => {
      const info = await of(req.instance).getVolumeInfo(req.volumeId, req.volumeAz);
      return { volumeType: info.volumeType, iops: info.iops };
    }),
  };
}
