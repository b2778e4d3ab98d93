// The restore's side of CSI snapshots (volumes/): built per run, as they need the restore's client
// and the plan. A claim the backup snapshotted gets its data back from the snapshot (restorePVs
// unset or true) or comes back empty (false, with a warning); its old PersistentVolume is not
// restored, since the claim is no longer bound to it; the VolumeSnapshot and content the backup
// stored are not restored as such (the claim's own restore makes new ones).
import type { Restore } from '../../apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient } from '../../kube/index.js';
import { stringField } from '../../kube/references.js';
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import type { TimerClock } from '../../util/clock.js';
import { errorMessage } from '../../util/errors.js';
import {
  claimFromSnapshot, emptyClaim, GR_VOLUME_SNAPSHOT_CONTENTS, GR_VOLUME_SNAPSHOTS, LABEL_SNAPSHOT_BACKUP_UID, restoredSnapshotNames, restoreSnapshot, snapshotOfClaim,
} from '../../volumes/index.js';
import { noted } from './mappings.js';
import { selectorFor } from './selector.js';

export interface CsiRestoreDeps {
  client: DynamicClient;
  restore: Restore;
  dryRun: boolean;
  clock: TimerClock;
  /** How long a restored VolumeSnapshot may take to become ready. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  who?: string | undefined;
  /** The backed-up claim `namespace/name` (source namespace), when the restore restores it. */
  claimInPlan(namespace: string, name: string): Promise<KubeObject | undefined>;
  /** A warning in the restore's results and log, against a target namespace. */
  warn(namespace: string, message: string): void;
}

export const CSI_CLAIM_ACTION = 'stowage.dev/csi-snapshot-claim';
export const CSI_VOLUME_ACTION = 'stowage.dev/csi-snapshot-volume';
export const CSI_OBJECTS_ACTION = 'stowage.dev/csi-snapshot-objects';

export function csiRestoreActions(deps: CsiRestoreDeps): { name: string; action: RestoreItemAction }[] {
  const restorePVs = deps.restore.spec.restorePVs !== false;
  const claim: RestoreItemAction = {
    appliesTo: () => Promise.resolve(selectorFor(['persistentvolumeclaims'])),
    async execute({ item }) {
      const snap = snapshotOfClaim(item);
      if (snap === undefined) return { item, additionalItems: [], skipRestore: false };
      const ns = item.metadata.namespace ?? '';
      const what = `persistentvolumeclaims ${ns}/${item.metadata.name}`;
      if (!restorePVs) {
        deps.warn(ns, `${what}: restored without its data (restorePVs is false): a new, empty volume is provisioned instead of one from snapshot ${snap.snapshotHandle}`);
        return { item: noted(emptyClaim(item), 'restorePVs: false', ['no data: not restored from its snapshot']), additionalItems: [], skipRestore: false };
      }
      if (deps.dryRun) {
        const names = restoredSnapshotNames(deps.restore.metadata.uid ?? '', ns, item.metadata.name);
        return { item: noted(claimFromSnapshot(item, names.volumeSnapshot), 'CSI snapshot', [`data from snapshot ${snap.snapshotHandle} (would create VolumeSnapshot ${names.volumeSnapshot})`]), additionalItems: [], skipRestore: false };
      }
      if (await exists(deps, ns, item.metadata.name)) {
        // Left to the write, which reports the existing claim; no snapshot objects are made for nothing.
        return { item: claimFromSnapshot(item, restoredSnapshotNames(deps.restore.metadata.uid ?? '', ns, item.metadata.name).volumeSnapshot), additionalItems: [], skipRestore: false };
      }
      const r = await restoreSnapshot({
        client: deps.client, restore: { name: deps.restore.metadata.name, uid: deps.restore.metadata.uid ?? '' },
        clock: deps.clock, timeoutMs: deps.timeoutMs, signal: deps.signal, who: deps.who,
      }, snap, ns, item.metadata.name);
      if ('error' in r) throw new Error(`its data cannot be restored from snapshot ${snap.snapshotHandle}: ${r.error}`);
      return { item: noted(claimFromSnapshot(item, r.volumeSnapshot), 'CSI snapshot', [`data from snapshot ${snap.snapshotHandle} through VolumeSnapshot ${r.volumeSnapshot}`]), additionalItems: [], skipRestore: false };
    },
  };
  const volume: RestoreItemAction = {
    appliesTo: () => Promise.resolve(selectorFor(['persistentvolumes'])),
    async execute({ item, itemFromBackup }) {
      const ns = stringField(itemFromBackup, 'spec', 'claimRef', 'namespace');
      const name = stringField(itemFromBackup, 'spec', 'claimRef', 'name');
      if (ns === undefined || name === undefined) return { item, additionalItems: [], skipRestore: false };
      const pvc = await deps.claimInPlan(ns, name);
      let snapshotted = false;
      try {
        snapshotted = pvc !== undefined && snapshotOfClaim(pvc) !== undefined;
      } catch (err) {
        throw new Error(`its claim ${ns}/${name} has an unreadable snapshot record: ${errorMessage(err)}`, { cause: err });
      }
      // Its claim comes back on a new volume (from the snapshot, or empty): this one would only point at the old disk.
      return { item, additionalItems: [], skipRestore: snapshotted };
    },
  };
  const objects: RestoreItemAction = {
    appliesTo: () => Promise.resolve({ ...selectorFor([GR_VOLUME_SNAPSHOTS, GR_VOLUME_SNAPSHOT_CONTENTS]), labelSelector: LABEL_SNAPSHOT_BACKUP_UID }),
    // Records of the backup's snapshot: the claim's restore makes its own VolumeSnapshot and content from them.
    execute: ({ item }) => Promise.resolve({ item, additionalItems: [], skipRestore: true }),
  };
  return [{ name: CSI_CLAIM_ACTION, action: claim }, { name: CSI_VOLUME_ACTION, action: volume }, { name: CSI_OBJECTS_ACTION, action: objects }];
}

async function exists(deps: CsiRestoreDeps, ns: string, name: string): Promise<boolean> {
  try {
    await deps.client.get(CORE.persistentVolumeClaims, ns, name);
    return true;
  } catch (err) {
    // Any other answer (403, say) is left to the claim's own write to report.
    if (isNotFound(err)) return false;
    return false;
  }
}
