// Taking a claim's CSI snapshot during a backup.
//
// The VolumeSnapshot is created, watched and deleted with the run's client (the requester's in
// requester mode): a requester who may not create VolumeSnapshots in a namespace cannot snapshot
// it. Once it is ready, the server keeps its VolumeSnapshotContent (deletionPolicy Retain, labelled
// with the Backup's uid) with its own client, but only a content it proved this run made: bound to
// the uid of the VolumeSnapshot the run created. Then the VolumeSnapshot is deleted. Why: a content
// with Retain outlives its namespace (a deleted namespace would otherwise take the snapshot with
// it), and no object of the backup stays in the user's namespace, where a restore would collide
// with it. The backup's deletion removes the snapshot through the content (remove.ts).
import { createHash } from 'node:crypto';
import { CORE, isAlreadyExists, isForbidden, isNotFound, type DynamicClient, type KubeObject } from '../kube/index.js';
import { stringField, field } from '../kube/references.js';
import type { TimerClock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { formatDuration } from '../util/duration.js';
import {
  ANNOTATION_SNAPSHOT_BACKUP, ANNOTATION_VOLUME_SNAPSHOT, creationTimeText, LABEL_SNAPSHOT_BACKUP_UID, SNAPSHOT_API_VERSION, sizeText, staticContent, statusError,
  VOLUME_SNAPSHOT_CLASSES, VOLUME_SNAPSHOT_CONTENTS, VOLUME_SNAPSHOTS, type SnapshotOfClaim, type VolumeSnapshotRecord,
} from './api.js';
import { chooseSnapshotClass } from './classes.js';
import { waitForObject, WaitTimeoutError } from './wait.js';

/** Velero's default csiSnapshotTimeout. */
export const DEFAULT_CSI_SNAPSHOT_TIMEOUT_MS = 10 * 60_000;

export interface SnapshotDeps {
  /** The run's client (the requester's in requester mode): creates, watches and deletes the VolumeSnapshots. */
  client: DynamicClient;
  /** The server's own client: reads the claim's volume and the snapshot classes, and keeps the contents the run's snapshots made. */
  serverClient: DynamicClient;
  backup: { name: string; namespace: string; uid: string; annotations?: Readonly<Record<string, string>> | undefined };
  /** csiSnapshotTimeout. */
  timeoutMs: number;
  clock: TimerClock;
  signal?: AbortSignal | undefined;
  /** Whose rights the run uses, for refusals (`user "alice"`); the server's when absent. */
  who?: string | undefined;
}

export type SnapshotOutcome =
  /** `item`: the claim to store, annotated with its snapshot; `objects`: the VolumeSnapshot and its content, to store too. */
  | { kind: 'taken'; item: KubeObject; record: VolumeSnapshotRecord; objects: { volumeSnapshot: KubeObject; content: KubeObject }; warning?: string }
  /** No snapshot, the claim is stored as it is: `warning` when its data is therefore not in the backup, `info` when it has none. */
  | { kind: 'skipped'; warning?: string; info?: string }
  | { kind: 'failed'; error: string };

export interface SnapshotTaker {
  snapshot(pvc: KubeObject): Promise<SnapshotOutcome>;
  /** Snapshots started (a VolumeSnapshot was asked for), and those kept ready. */
  counts(): { attempted: number; completed: number };
  records(): VolumeSnapshotRecord[];
}

export function newSnapshotTaker(deps: SnapshotDeps): SnapshotTaker {
  let attempted = 0;
  let completed = 0;
  const records: VolumeSnapshotRecord[] = [];
  let classes: Promise<KubeObject[] | string> | undefined;
  const listClasses = (): Promise<KubeObject[] | string> => (classes ??= deps.serverClient.listAll(VOLUME_SNAPSHOT_CLASSES).then(
    (l) => l.items,
    (err: unknown) => isNotFound(err)
      ? `the cluster does not serve ${VOLUME_SNAPSHOT_CLASSES.resource}.${VOLUME_SNAPSHOT_CLASSES.group}/${VOLUME_SNAPSHOT_CLASSES.version} (no CSI snapshot support is installed)`
      : `listing VolumeSnapshotClasses failed: ${errorMessage(err)}`,
  ));

  async function snapshot(pvc: KubeObject): Promise<SnapshotOutcome> {
    // Each snapshot's requests listen on a signal of their own: a page of claims in flight would
    // otherwise put more abort listeners on the run's signal than Node's leak warning allows.
    return take({ ...deps, signal: deps.signal === undefined ? undefined : AbortSignal.any([deps.signal]) }, pvc);
  }

  async function take(deps: SnapshotDeps, pvc: KubeObject): Promise<SnapshotOutcome> {
    const target = await targetOf(deps, pvc, listClasses);
    if ('kind' in target) return target;
    attempted++;
    const made = await snapshotAndKeep(deps, target);
    if ('kind' in made) return made;
    completed++;
    const taken = takenOutcome(target, made);
    records.push(taken.record);
    return taken;
  }

  return { snapshot, counts: () => ({ attempted, completed }), records: () => [...records] };
}

/** A bound CSI claim and the snapshot class chosen for it: what a snapshot is taken of. */
interface SnapshotTarget {
  pvc: KubeObject;
  ns: string;
  name: string;
  /** `persistentvolumeclaims ns/name`, for messages. */
  what: string;
  pvName: string;
  driver: string;
  className: string;
}

/** The claim as a snapshot target, or why it is not snapshotted (its data not backed up) or cannot be. */
async function targetOf(
  deps: SnapshotDeps, pvc: KubeObject, listClasses: () => Promise<KubeObject[] | string>,
): Promise<SnapshotTarget | Exclude<SnapshotOutcome, { kind: 'taken' }>> {
  const ns = pvc.metadata?.namespace ?? '';
  const name = pvc.metadata?.name ?? '';
  const what = `persistentvolumeclaims ${ns}/${name}`;
  const pvName = stringField(pvc, 'spec', 'volumeName');
  if (pvName === undefined || stringField(pvc, 'status', 'phase') !== 'Bound') return { kind: 'skipped', info: `${what} is not bound to a volume: it holds no data to snapshot` };
  let pv: KubeObject;
  try {
    pv = await deps.serverClient.get(CORE.persistentVolumes, undefined, pvName, deps.signal !== undefined ? { signal: deps.signal } : {});
  } catch (err) {
    if (isNotFound(err)) return { kind: 'skipped', warning: `${what}: its PersistentVolume ${pvName} does not exist, so its data is not backed up` };
    return { kind: 'failed', error: `${what}: reading its PersistentVolume ${pvName} failed, so it is not snapshotted: ${errorMessage(err)}` };
  }
  const driver = stringField(pv, 'spec', 'csi', 'driver');
  if (driver === undefined) return { kind: 'skipped', warning: `${what}: its PersistentVolume ${pvName} is not a CSI volume, so its data is not backed up (only CSI volumes are snapshotted)` };
  const all = await listClasses();
  if (typeof all === 'string') return { kind: 'skipped', warning: `${what}: its data is not backed up: ${all}` };
  const choice = chooseSnapshotClass(driver, pvc.metadata?.annotations, deps.backup.annotations, all);
  if ('none' in choice) return { kind: 'skipped', warning: `${what}: its data is not backed up: ${choice.none}` };
  if ('error' in choice) return { kind: 'failed', error: `${what}: not snapshotted: ${choice.error}` };
  return { pvc, ns, name, what, pvName, driver, className: choice.name };
}

/** A ready snapshot whose content the server keeps; `gone` is why its VolumeSnapshot could not be deleted. */
interface KeptSnapshot {
  vsName: string;
  vs: KubeObject;
  content: KubeObject;
  gone: string | undefined;
}

/** Creates the VolumeSnapshot, waits for it, keeps its content and deletes it; a failure leaves no snapshot behind. */
async function snapshotAndKeep(deps: SnapshotDeps, t: SnapshotTarget): Promise<KeptSnapshot | { kind: 'failed'; error: string }> {
  const { ns, what } = t;
  const vsName = snapshotName(t.name, `${deps.backup.uid}/${ns}/${t.name}`);
  const made = await createSnapshot(deps, ns, vsName, t.name, t.className, what);
  if ('error' in made) return { kind: 'failed', error: made.error };
  let ready: Awaited<ReturnType<typeof waitReady>>;
  try {
    ready = await waitReady(deps, ns, vsName, what);
  } catch (err) {
    // The run was cancelled: its snapshot is not left behind.
    await deleteSnapshot(deps, ns, vsName);
    throw err;
  }
  if ('error' in ready) {
    const cleanup = await deleteSnapshot(deps, ns, vsName);
    return { kind: 'failed', error: ready.error + (cleanup === undefined ? '' : `; ${cleanup}`) };
  }
  const kept = await keepContent(deps, ready.vs, what);
  if ('error' in kept) {
    const cleanup = await deleteSnapshot(deps, ns, vsName);
    return { kind: 'failed', error: kept.error + (cleanup === undefined ? '' : `; ${cleanup}`) };
  }
  const gone = await deleteSnapshot(deps, ns, vsName) ?? await contentOutlives(deps, kept.content, ns, vsName);
  return { vsName, vs: ready.vs, content: kept.content, gone };
}

/**
 * The snapshot controller decides whether a deleted VolumeSnapshot takes its content with it from its
 * own cache of contents, which may not yet hold the Retain just set: then it deletes the content
 * object (its sidecar, deleting an object that says Retain, keeps the snapshot on the storage; seen
 * once in a full test run). Once the VolumeSnapshot is gone that decision is made, so the content
 * is checked then and, if it went, made again statically from its handle, labelled for the backup.
 * Says why the content could not be kept, if it could not.
 */
async function contentOutlives(deps: SnapshotDeps, content: KubeObject, ns: string, vsName: string): Promise<string | undefined> {
  const name = content.metadata?.name ?? '';
  const wait = { timeoutMs: deps.timeoutMs, clock: deps.clock, signal: deps.signal };
  try {
    await waitForObject(deps.client, VOLUME_SNAPSHOTS, ns, vsName, (o) => o === undefined ? { done: true } : undefined,
      { ...wait, what: `VolumeSnapshot ${ns}/${vsName} to be deleted` });
    const now = await waitForObject(deps.serverClient, VOLUME_SNAPSHOT_CONTENTS, undefined, name,
      (o) => o === undefined || o.metadata?.deletionTimestamp === undefined ? { done: o } : undefined,
      { ...wait, what: `VolumeSnapshotContent ${name} to be deleted` });
    if (now !== undefined) return undefined;
    await deps.serverClient.create(VOLUME_SNAPSHOT_CONTENTS, undefined, staticContent({
      name,
      labels: { [LABEL_SNAPSHOT_BACKUP_UID]: deps.backup.uid },
      annotations: { [ANNOTATION_SNAPSHOT_BACKUP]: `${deps.backup.namespace}/${deps.backup.name}` },
      driver: stringField(content, 'spec', 'driver'),
      snapshotHandle: stringField(content, 'status', 'snapshotHandle'),
      volumeSnapshotClassName: stringField(content, 'spec', 'volumeSnapshotClassName'),
      volumeSnapshot: { namespace: ns, name: vsName },
    }));
    return undefined;
  } catch (err) {
    if (deps.signal?.aborted === true) throw err;
    return `its VolumeSnapshotContent ${name} could not be checked or made again after its VolumeSnapshot was deleted, so the backup's deletion may not find it: ${errorMessage(err)}`;
  }
}

/** The claim to store, annotated with its snapshot, and the record of the snapshot. */
function takenOutcome(t: SnapshotTarget, kept: KeptSnapshot): Extract<SnapshotOutcome, { kind: 'taken' }> {
  const { content, vs } = kept;
  const snap: SnapshotOfClaim = {
    volumeSnapshot: kept.vsName,
    volumeSnapshotContent: content.metadata?.name ?? '',
    snapshotHandle: stringField(content, 'status', 'snapshotHandle') ?? '',
    driver: t.driver,
    volumeSnapshotClass: t.className,
  };
  const size = sizeText(field(content, 'status', 'restoreSize')) ?? sizeText(field(vs, 'status', 'restoreSize'));
  if (size !== undefined) snap.restoreSize = size;
  const at = creationTimeText(field(content, 'status', 'creationTime')) ?? stringField(vs, 'status', 'creationTime');
  if (at !== undefined) snap.creationTime = at;
  const record: VolumeSnapshotRecord = { namespace: t.ns, persistentVolumeClaim: t.name, persistentVolume: t.pvName, ...snap };
  const { pvc } = t;
  const item: KubeObject = {
    ...pvc,
    metadata: { ...pvc.metadata, annotations: { ...pvc.metadata?.annotations, [ANNOTATION_VOLUME_SNAPSHOT]: JSON.stringify(snap) } },
  };
  const taken: Extract<SnapshotOutcome, { kind: 'taken' }> = { kind: 'taken', item, record, objects: { volumeSnapshot: vs, content } };
  if (kept.gone !== undefined) taken.warning = `${t.what}: ${kept.gone}`;
  return taken;
}

/** `<claim>-<hash>`: readable, unique per backup and claim, a valid object name whatever the claim's. */
export function snapshotName(claim: string, key: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 10);
  return `${claim.slice(0, 40).replace(/\./g, '-').replace(/-+$/, '')}-${hash}`;
}

async function createSnapshot(deps: SnapshotDeps, ns: string, vsName: string, claim: string, className: string, what: string): Promise<{ ok: true } | { error: string }> {
  const vs = {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: 'VolumeSnapshot',
    metadata: {
      name: vsName, namespace: ns,
      labels: { [LABEL_SNAPSHOT_BACKUP_UID]: deps.backup.uid },
      annotations: { [ANNOTATION_SNAPSHOT_BACKUP]: `${deps.backup.namespace}/${deps.backup.name}` },
    },
    spec: { volumeSnapshotClassName: className, source: { persistentVolumeClaimName: claim } },
  };
  try {
    await deps.client.create(VOLUME_SNAPSHOTS, ns, vs, deps.signal !== undefined ? { signal: deps.signal } : {});
    return { ok: true };
  } catch (err) {
    // This run's own snapshot, created by an earlier attempt of the same call.
    if (isAlreadyExists(err)) return { ok: true };
    if (isForbidden(err)) {
      return { error: `${what}: not snapshotted: ${deps.who ?? 'the server'} may not create volumesnapshots.snapshot.storage.k8s.io in namespace ${ns}: ${errorMessage(err)}` };
    }
    return { error: `${what}: creating its VolumeSnapshot ${ns}/${vsName} failed: ${errorMessage(err)}` };
  }
}

async function waitReady(deps: SnapshotDeps, ns: string, vsName: string, what: string): Promise<{ vs: KubeObject } | { error: string }> {
  try {
    const r = await waitForObject<{ vs: KubeObject } | { error: string }>(deps.client, VOLUME_SNAPSHOTS, ns, vsName, (obj) => {
      if (obj === undefined) return { done: { error: `${what}: its VolumeSnapshot ${ns}/${vsName} was deleted before it was ready` } };
      const failed = statusError(obj);
      if (failed !== undefined) return { done: { error: `${what}: its snapshot failed: ${failed}` } };
      return field(obj, 'status', 'readyToUse') === true && stringField(obj, 'status', 'boundVolumeSnapshotContentName') !== undefined ? { done: { vs: obj } } : undefined;
    }, {
      timeoutMs: deps.timeoutMs, clock: deps.clock, signal: deps.signal, what: `VolumeSnapshot ${ns}/${vsName}`,
      lastSeen: (o) => o === undefined ? 'it does not exist' : `readyToUse is ${String(field(o, 'status', 'readyToUse') ?? 'unset')}`,
    });
    return r;
  } catch (err) {
    if (err instanceof WaitTimeoutError) {
      return { error: `${what}: its snapshot was not ready within csiSnapshotTimeout (${formatDuration(deps.timeoutMs)}): ${err.message}` };
    }
    if (deps.signal?.aborted === true) throw err;
    return { error: `${what}: waiting for its VolumeSnapshot ${ns}/${vsName} failed: ${errorMessage(err)}` };
  }
}

/**
 * Sets the content's deletionPolicy to Retain and labels it with the Backup's uid, after checking it
 * is bound to the very VolumeSnapshot this run created (its uid): the server's rights on contents
 * are cluster-wide, so it touches no content it cannot tie to the run.
 */
async function keepContent(deps: SnapshotDeps, vs: KubeObject, what: string): Promise<{ content: KubeObject } | { error: string }> {
  const contentName = stringField(vs, 'status', 'boundVolumeSnapshotContentName') ?? '';
  const vsUid = vs.metadata?.uid ?? '';
  for (let attempt = 0; ; attempt++) {
    let content: KubeObject;
    try {
      content = await deps.serverClient.get(VOLUME_SNAPSHOT_CONTENTS, undefined, contentName);
    } catch (err) {
      return { error: `${what}: reading its VolumeSnapshotContent ${contentName} failed: ${errorMessage(err)}` };
    }
    const ref = field(content, 'spec', 'volumeSnapshotRef');
    if (vsUid === '' || stringField(ref, 'uid') !== vsUid || stringField(ref, 'namespace') !== vs.metadata?.namespace || stringField(ref, 'name') !== vs.metadata?.name) {
      return { error: `${what}: VolumeSnapshotContent ${contentName} is not bound to the VolumeSnapshot this backup created (uid ${vsUid}), so it is left alone` };
    }
    const patch = {
      metadata: {
        resourceVersion: content.metadata?.resourceVersion,
        labels: { [LABEL_SNAPSHOT_BACKUP_UID]: deps.backup.uid },
        annotations: { [ANNOTATION_SNAPSHOT_BACKUP]: `${deps.backup.namespace}/${deps.backup.name}` },
      },
      spec: { deletionPolicy: 'Retain' },
    };
    try {
      return { content: await deps.serverClient.patch(VOLUME_SNAPSHOT_CONTENTS, undefined, contentName, patch, 'merge') };
    } catch (err) {
      // The snapshot controller updated it meanwhile: read it again (and check it again).
      if ((err as { status?: unknown }).status === 409 && attempt < 4) continue;
      return { error: `${what}: keeping its VolumeSnapshotContent ${contentName} (deletionPolicy Retain) failed: ${errorMessage(err)}` };
    }
  }
}

/** Deletes the run's VolumeSnapshot; says why it could not, if it could not. */
async function deleteSnapshot(deps: SnapshotDeps, ns: string, vsName: string): Promise<string | undefined> {
  try {
    await deps.client.delete(VOLUME_SNAPSHOTS, ns, vsName);
    return undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    return `its VolumeSnapshot ${ns}/${vsName} could not be deleted and stays in the namespace: ${errorMessage(err)}`;
  }
}
