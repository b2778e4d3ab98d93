import type { KubeObject } from './items.js';
import type { PluginConfig } from './objectStore.js';

/** Snapshots persistent volumes in a storage provider. */
export interface VolumeSnapshotter {
  init(config: PluginConfig): Promise<void>;
  createSnapshot(volumeId: string, volumeAZ: string, tags: Record<string, string>): Promise<string>;
  deleteSnapshot(snapshotId: string): Promise<void>;
  createVolumeFromSnapshot(snapshotId: string, volumeType: string, volumeAZ: string, iops: number | undefined): Promise<string>;
  getVolumeID(pv: KubeObject): Promise<string>;
  setVolumeID(pv: KubeObject, volumeId: string): Promise<KubeObject>;
  getVolumeInfo(volumeId: string, volumeAZ: string): Promise<{ volumeType: string; iops: number | undefined }>;
}
