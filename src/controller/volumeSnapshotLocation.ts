// VolumeSnapshotLocation controller: Stowage takes volume snapshots through CSI only (a
// VolumeSnapshotClass, no VolumeSnapshotter plugin), so no location of this kind is ever used. Rather than accept one and ignore it, every VolumeSnapshotLocation is marked
// Unavailable with the reason (status, a Warning event and one server log line per object).
import { RESOURCES, type VolumeSnapshotLocation } from '../apis/v1/index.js';
import { isNotFound } from '../kube/index.js';
import { splitKey, type Result } from '../runtime/index.js';
import type { ControllerContext, ControllerDefinition } from './run/context.js';

export const VSL_REFUSED =
  'VolumeSnapshotLocations are not supported: Stowage takes volume snapshots through CSI only (snapshotVolumes, with a VolumeSnapshotClass), never through a VolumeSnapshotter plugin, so no backup uses this location (a Backup that sets volumeSnapshotLocations fails validation)';

export function volumeSnapshotLocationController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<VolumeSnapshotLocation>('VolumeSnapshotLocation');
  return {
    name: 'volume-snapshot-location',
    watches: [informer],
    workers: 1,
    reconciler: {
      async reconcile(key: string): Promise<Result> {
        const vsl = informer.get(key);
        if (vsl === undefined) return;
        if (vsl.status?.phase === 'Unavailable' && vsl.status.message === VSL_REFUSED) return;
        const { namespace = splitKey(key).namespace ?? ctx.namespace, name } = vsl.metadata;
        try {
          await ctx.client.patchStatus(RESOURCES.VolumeSnapshotLocation, namespace, name, { status: { phase: 'Unavailable', message: VSL_REFUSED } });
        } catch (err) {
          if (isNotFound(err)) return;
          throw err;
        }
        ctx.logger.warn(`VolumeSnapshotLocation ${namespace}/${name} is Unavailable: ${VSL_REFUSED}`);
        await ctx.events.event(vsl, 'Warning', 'Unsupported', VSL_REFUSED);
        return;
      },
    },
  };
}
