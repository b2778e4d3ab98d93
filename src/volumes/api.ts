// The CSI snapshot API (snapshot.storage.k8s.io/v1) as Stowage uses it, and the names Stowage and
// Velero put on objects. One module, so the backup, the restore and the deletion agree on them.
import type { KubeObject, ResourceRef } from '../kube/index.js';
import { field, stringField } from '../kube/references.js';
import type { VolumeSnapshotRecord } from '../persistence/results.js';

export type { VolumeSnapshotRecord };

export const SNAPSHOT_GROUP = 'snapshot.storage.k8s.io';
export const SNAPSHOT_API_VERSION = `${SNAPSHOT_GROUP}/v1`;

export const VOLUME_SNAPSHOTS = { group: SNAPSHOT_GROUP, version: 'v1', resource: 'volumesnapshots', namespaced: true } as const satisfies ResourceRef;
export const VOLUME_SNAPSHOT_CONTENTS = { group: SNAPSHOT_GROUP, version: 'v1', resource: 'volumesnapshotcontents', namespaced: false } as const satisfies ResourceRef;
export const VOLUME_SNAPSHOT_CLASSES = { group: SNAPSHOT_GROUP, version: 'v1', resource: 'volumesnapshotclasses', namespaced: false } as const satisfies ResourceRef;

export const GR_VOLUME_SNAPSHOTS = `volumesnapshots.${SNAPSHOT_GROUP}`;
export const GR_VOLUME_SNAPSHOT_CONTENTS = `volumesnapshotcontents.${SNAPSHOT_GROUP}`;

/** Velero's: a VolumeSnapshotClass labelled "true" is the one for its driver; a PVC annotated with a class name uses that class. */
export const VELERO_CLASS_LABEL = 'velero.io/csi-volumesnapshot-class';
/** Velero's per-driver Backup annotation: `velero.io/csi-volumesnapshot-class_<driver>: <class>`. */
export const VELERO_BACKUP_CLASS_PREFIX = 'velero.io/csi-volumesnapshot-class_';

/**
 * On the objects a backup made (its VolumeSnapshots, and their contents once proved its own): the
 * uid of the Backup. Deletion finds the contents by it; a uid, not a name, so a later backup of the
 * same name never claims them.
 */
export const LABEL_SNAPSHOT_BACKUP_UID = 'stowage.dev/snapshot-of-backup-uid';
export const ANNOTATION_SNAPSHOT_BACKUP = 'stowage.dev/snapshot-of-backup';
/** On the objects a restore made: the uid of the Restore. */
export const LABEL_SNAPSHOT_RESTORE_UID = 'stowage.dev/snapshot-for-restore-uid';

/**
 * On the backed-up copy of a claim (never the live one): the snapshot of its volume. The restore
 * needs nothing else to bring the data back, whatever became of the stored VolumeSnapshot objects.
 */
export const ANNOTATION_VOLUME_SNAPSHOT = 'stowage.dev/volume-snapshot';

/** What the backed-up claim's annotation records (JSON): its record less where the claim was. */
export type SnapshotOfClaim = Omit<VolumeSnapshotRecord, 'namespace' | 'persistentVolumeClaim' | 'persistentVolume'>;

/** The claim's snapshot record, or undefined when it has none; a malformed one is an error naming the claim. */
export function snapshotOfClaim(pvc: KubeObject): SnapshotOfClaim | undefined {
  const raw = pvc.metadata?.annotations?.[ANNOTATION_VOLUME_SNAPSHOT];
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new Error(`its annotation ${ANNOTATION_VOLUME_SNAPSHOT} is not JSON`);
  }
  const need = ['volumeSnapshot', 'volumeSnapshotContent', 'snapshotHandle', 'driver', 'volumeSnapshotClass'] as const;
  const missing = need.filter((k) => stringField(v, k) === undefined);
  if (missing.length > 0) throw new Error(`its annotation ${ANNOTATION_VOLUME_SNAPSHOT} lacks ${missing.join(', ')}`);
  const out: SnapshotOfClaim = {
    volumeSnapshot: stringField(v, 'volumeSnapshot') ?? '',
    volumeSnapshotContent: stringField(v, 'volumeSnapshotContent') ?? '',
    snapshotHandle: stringField(v, 'snapshotHandle') ?? '',
    driver: stringField(v, 'driver') ?? '',
    volumeSnapshotClass: stringField(v, 'volumeSnapshotClass') ?? '',
  };
  const size = stringField(v, 'restoreSize');
  if (size !== undefined) out.restoreSize = size;
  const at = stringField(v, 'creationTime');
  if (at !== undefined) out.creationTime = at;
  return out;
}

/** The message a VolumeSnapshot or its content carries in status.error, if any. */
export function statusError(obj: unknown): string | undefined {
  const e = field(obj, 'status', 'error');
  if (e === undefined || e === null) return undefined;
  return stringField(e, 'message') ?? 'the snapshot controller reported an error without a message';
}

/** A quantity or a byte count as text: the content's restoreSize is bytes (int64), the snapshot's a quantity. */
export function sizeText(v: unknown): string | undefined {
  if (typeof v === 'number') return String(v);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The content's creationTime (nanoseconds since the epoch) as RFC 3339. */
export function creationTimeText(v: unknown): string | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return undefined;
  return new Date(Math.floor(v / 1e6)).toISOString();
}

/** A VolumeSnapshotContent made statically from a snapshot's handle (Retain: deleting it leaves the snapshot). */
export function staticContent(c: {
  name: string; labels: Record<string, string>; annotations?: Record<string, string>;
  driver: string | undefined; snapshotHandle: string | undefined; volumeSnapshotClassName: string | undefined;
  volumeSnapshot: { namespace: string; name: string };
}): KubeObject {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshotContent',
    metadata: { name: c.name, labels: c.labels, ...(c.annotations !== undefined ? { annotations: c.annotations } : {}) },
    spec: {
      deletionPolicy: 'Retain',
      driver: c.driver,
      source: { snapshotHandle: c.snapshotHandle },
      volumeSnapshotClassName: c.volumeSnapshotClassName,
      volumeSnapshotRef: { apiVersion: SNAPSHOT_API_VERSION, kind: 'VolumeSnapshot', ...c.volumeSnapshot },
    },
  };
}
