// Deleting a backup's snapshots with the backup (a DeleteBackupRequest: direct, GC or retention).
// The server finds the contents its backup kept by the Backup's uid label (take.ts set it, and only
// on contents it proved that backup made), turns each back to deletionPolicy Delete and deletes it:
// the CSI snapshotter then deletes the snapshot in the storage system, and the content goes once it
// has. A content that is still there with an error after the wait is named with the driver's message.
import { isNotFound, type DynamicClient, type KubeObject } from '../kube/index.js';
import { field, stringField } from '../kube/references.js';
import type { TimerClock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { formatDuration } from '../util/duration.js';
import { LABEL_SNAPSHOT_BACKUP_UID, statusError, VOLUME_SNAPSHOT_CONTENTS } from './api.js';
import { waitForObject, WaitTimeoutError } from './wait.js';

/**
 * The external-snapshotter's mark on a content whose snapshot is being deleted: its sidecar deletes
 * the snapshot in storage only for a content so marked (the snapshot controller marks it when a
 * VolumeSnapshot is deleted; the backup's VolumeSnapshot was deleted long ago, under Retain).
 */
export const BEING_DELETED_ANNOTATION = 'snapshot.storage.kubernetes.io/volumesnapshot-being-deleted';

/** How long one content may take to go. */
export const DEFAULT_SNAPSHOT_DELETE_TIMEOUT_MS = 2 * 60_000;

export interface RemoveDeps {
  serverClient: DynamicClient;
  clock: TimerClock;
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

/** Deletes every content the backup (its uid) kept. Returns what went, and one message per content that could not be deleted. */
export async function deleteBackupSnapshots(deps: RemoveDeps, backupUid: string): Promise<{ deleted: string[]; errors: string[] }> {
  const out = { deleted: [] as string[], errors: [] as string[] };
  if (backupUid === '') return out;
  let contents: KubeObject[];
  try {
    contents = (await deps.serverClient.listAll(VOLUME_SNAPSHOT_CONTENTS, { labelSelector: `${LABEL_SNAPSHOT_BACKUP_UID}=${backupUid}` })).items;
  } catch (err) {
    // No snapshot API: nothing can hold this backup's snapshots.
    if (isNotFound(err)) return out;
    out.errors.push(`listing the backup's VolumeSnapshotContents failed, so its snapshots are not deleted: ${errorMessage(err)}`);
    return out;
  }
  await Promise.all(contents.map(async (c) => {
    const r = await deleteContent(deps, c);
    if (r === undefined) out.deleted.push(c.metadata?.name ?? '');
    else out.errors.push(r);
  }));
  out.deleted.sort();
  out.errors.sort();
  return out;
}

async function deleteContent(deps: RemoveDeps, c: KubeObject): Promise<string | undefined> {
  const name = c.metadata?.name ?? '';
  const handle = stringField(c, 'status', 'snapshotHandle') ?? stringField(c, 'spec', 'source', 'snapshotHandle') ?? 'unknown';
  const what = `VolumeSnapshotContent ${name} (snapshot ${handle})`;
  try {
    if (field(c, 'metadata', 'deletionTimestamp') === undefined) {
      await deps.serverClient.patch(VOLUME_SNAPSHOT_CONTENTS, undefined, name, {
        metadata: { resourceVersion: c.metadata?.resourceVersion, annotations: { [BEING_DELETED_ANNOTATION]: 'yes' } },
        spec: { deletionPolicy: 'Delete' },
      }, 'merge');
      await deps.serverClient.delete(VOLUME_SNAPSHOT_CONTENTS, undefined, name);
    }
  } catch (err) {
    if (isNotFound(err)) return undefined;
    return `${what} could not be deleted: ${errorMessage(err)}`;
  }
  const timeoutMs = deps.timeoutMs ?? DEFAULT_SNAPSHOT_DELETE_TIMEOUT_MS;
  try {
    const failed = await waitForObject<string | undefined>(deps.serverClient, VOLUME_SNAPSHOT_CONTENTS, undefined, name, (o) => {
      if (o === undefined) return { done: undefined };
      // The snapshotter failed to delete it (it retries; the request reports it now, and can be made again).
      const e = statusError(o);
      return e !== undefined && field(o, 'metadata', 'deletionTimestamp') !== undefined ? { done: `${what} could not be deleted: the CSI snapshotter says: ${e}` } : undefined;
    }, {
      timeoutMs, clock: deps.clock, signal: deps.signal, what: `${what} to be deleted`,
      lastSeen: (o) => {
        const e = statusError(o);
        return e !== undefined ? `the driver says: ${e}` : `it is still there (finalizers: ${JSON.stringify(field(o, 'metadata', 'finalizers') ?? [])})`;
      },
    });
    return failed;
  } catch (err) {
    if (err instanceof WaitTimeoutError) return `${what} could not be deleted: it is not gone after ${formatDuration(timeoutMs)} (--csi-snapshot-delete-timeout); ${err.lastSeen ?? ''}`;
    if (deps.signal?.aborted === true) throw err;
    return `${what} could not be deleted: ${errorMessage(err)}`;
  }
}
