// Bringing a claim's data back from its CSI snapshot during a restore: the snapshot's content is
// created again statically (the stored handle, deletionPolicy Retain, so nothing the restore made
// can delete the backup's snapshot), with a VolumeSnapshot bound to it in the claim's target
// namespace; the claim is then written with that VolumeSnapshot as its dataSource and no volumeName,
// so the driver provisions a new volume from the snapshot instead of binding the old one. Every
// request goes through the restore's client: in requester mode the requester must be allowed to
// create VolumeSnapshotContents (cluster-scoped) and VolumeSnapshots.
import { createHash } from 'node:crypto';
import { isAlreadyExists, isForbidden, type DynamicClient, type KubeObject } from '../kube/index.js';
import { field, stringField } from '../kube/references.js';
import type { TimerClock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import {
  ANNOTATION_VOLUME_SNAPSHOT, LABEL_SNAPSHOT_RESTORE_UID, SNAPSHOT_API_VERSION, SNAPSHOT_GROUP, staticContent, statusError,
  VOLUME_SNAPSHOT_CONTENTS, VOLUME_SNAPSHOTS, type SnapshotOfClaim,
} from './api.js';
import { snapshotName } from './take.js';
import { waitForObject, WaitTimeoutError } from './wait.js';

export interface ClaimRestoreDeps {
  client: DynamicClient;
  restore: { name: string; uid: string };
  clock: TimerClock;
  /** How long the restored VolumeSnapshot may take to become ready. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  who?: string | undefined;
}

/** The names the restore gives the objects of one claim: stable for a restore and a target claim. */
export function restoredSnapshotNames(restoreUid: string, namespace: string, claim: string): { volumeSnapshot: string; content: string } {
  const key = `${restoreUid}/${namespace}/${claim}`;
  return { volumeSnapshot: snapshotName(claim, key), content: `stowage-${createHash('sha256').update(key).digest('hex').slice(0, 24)}` };
}

/** The claim as it is written when it comes back with its data: bound to nothing, provisioned from the VolumeSnapshot. */
export function claimFromSnapshot<T extends KubeObject>(pvc: T, volumeSnapshot: string): T {
  const out = withoutSnapshotNote(pvc);
  const spec = { ...(out.spec as Record<string, unknown> | undefined) };
  delete spec.volumeName;
  // dataSourceRef is filled in from dataSource by the API server; the stored one names the old source.
  delete spec.dataSourceRef;
  spec.dataSource = { apiGroup: SNAPSHOT_GROUP, kind: 'VolumeSnapshot', name: volumeSnapshot };
  return { ...out, spec };
}

/** The claim as a new, empty one (restorePVs: false): bound to nothing, with no data source (one it had names objects of the source cluster). */
export function emptyClaim<T extends KubeObject>(pvc: T): T {
  const out = withoutSnapshotNote(pvc);
  const spec = { ...(out.spec as Record<string, unknown> | undefined) };
  delete spec.volumeName;
  delete spec.dataSource;
  delete spec.dataSourceRef;
  return { ...out, spec };
}

function withoutSnapshotNote<T extends KubeObject>(pvc: T): T {
  const annotations = { ...pvc.metadata?.annotations };
  delete annotations[ANNOTATION_VOLUME_SNAPSHOT];
  const metadata = { ...pvc.metadata };
  if (Object.keys(annotations).length === 0) delete metadata.annotations;
  else metadata.annotations = annotations;
  return { ...pvc, metadata };
}

/**
 * Creates the static content and its VolumeSnapshot in `namespace` and waits for it to be ready.
 * Returns the VolumeSnapshot's name, or why the claim cannot get its data back.
 */
export async function restoreSnapshot(deps: ClaimRestoreDeps, snap: SnapshotOfClaim, namespace: string, claim: string): Promise<{ volumeSnapshot: string } | { error: string }> {
  const names = restoredSnapshotNames(deps.restore.uid, namespace, claim);
  const labels = { [LABEL_SNAPSHOT_RESTORE_UID]: deps.restore.uid };
  const content = staticContent({
    name: names.content, labels, driver: snap.driver, snapshotHandle: snap.snapshotHandle,
    volumeSnapshotClassName: snap.volumeSnapshotClass, volumeSnapshot: { namespace, name: names.volumeSnapshot },
  });
  const vs = {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: { name: names.volumeSnapshot, namespace, labels },
    spec: { volumeSnapshotClassName: snap.volumeSnapshotClass, source: { volumeSnapshotContentName: names.content } },
  };
  const made = await create(deps, VOLUME_SNAPSHOT_CONTENTS, undefined, content, `VolumeSnapshotContent ${names.content}`, 'volumesnapshotcontents.snapshot.storage.k8s.io at the cluster scope')
    ?? await create(deps, VOLUME_SNAPSHOTS, namespace, vs, `VolumeSnapshot ${namespace}/${names.volumeSnapshot}`, `volumesnapshots.snapshot.storage.k8s.io in namespace ${namespace}`);
  if (made !== undefined) return { error: made };
  try {
    return await waitForObject<{ volumeSnapshot: string } | { error: string }>(deps.client, VOLUME_SNAPSHOTS, namespace, names.volumeSnapshot, (o) => {
      if (o === undefined) return { done: { error: `its VolumeSnapshot ${namespace}/${names.volumeSnapshot} was deleted before it was ready` } };
      const failed = statusError(o);
      if (failed !== undefined) return { done: { error: `its VolumeSnapshot ${namespace}/${names.volumeSnapshot} (snapshot ${snap.snapshotHandle}) failed: ${failed}` } };
      return field(o, 'status', 'readyToUse') === true ? { done: { volumeSnapshot: names.volumeSnapshot } } : undefined;
    }, {
      timeoutMs: deps.timeoutMs, clock: deps.clock, signal: deps.signal, what: `VolumeSnapshot ${namespace}/${names.volumeSnapshot} (snapshot ${snap.snapshotHandle}) to become ready`,
      lastSeen: (o) => (o === undefined ? 'it does not exist' : `bound to ${stringField(o, 'status', 'boundVolumeSnapshotContentName') ?? 'no content yet'}`),
    });
  } catch (err) {
    if (err instanceof WaitTimeoutError) return { error: err.message };
    if (deps.signal?.aborted === true) throw err;
    return { error: errorMessage(err) };
  }
}

async function create(deps: ClaimRestoreDeps, res: typeof VOLUME_SNAPSHOTS | typeof VOLUME_SNAPSHOT_CONTENTS, ns: string | undefined, obj: object, what: string, where: string): Promise<string | undefined> {
  try {
    await deps.client.create(res, ns, obj, deps.signal !== undefined ? { signal: deps.signal } : {});
    return undefined;
  } catch (err) {
    // Made by an earlier attempt of this restore (same name, from the restore's uid).
    if (isAlreadyExists(err)) return undefined;
    if (isForbidden(err)) return `${deps.who ?? 'the server'} may not create ${where}, so the claim cannot get its data back: ${errorMessage(err)}`;
    return `creating ${what} failed: ${errorMessage(err)}`;
  }
}
