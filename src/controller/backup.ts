// The Backup controller: validates a new Backup (every reason listed), then runs it through the
// shared run lifecycle (run/lifecycle.ts) with the backup engine: the tarball, the other artifacts and
// the run's own log (spooled when storage is down), stowage-backup.json last, and phase, progress,
// counts, timestamps, events and metrics. A Backup found InProgress that this server is not running was
// left by a server that died: run/staleRuns.ts settles it from the bucket (also the start-up sweep).
import {
  ANNOTATION_SYNCED_FROM, RESOURCES, type Backup, type BackupSignatureStatus, type BackupStatus, type BackupStorageLocation,
} from '../apis/v1/index.js';
import type { SigningKey } from '../signing/index.js';
import { FORMAT_VERSION } from '../archive/index.js';
import { describeRequester, type Authority } from '../auth/index.js';
import { planBackupScope, runBackup, type BackupDeps, type BackupResult } from '../backup/index.js';
import { recordBackupOutcome } from '../metrics/index.js';
import type winston from 'winston';
import type { BackupStore } from '../persistence/backupStore.js';
import { gzipJson } from '../persistence/codec.js';
import { backupKeys, normalizePrefix, unstorableKeys } from '../persistence/layout.js';
import { safeErrorMessage } from '../util/errors.js';
import type { ReconcileContext, Result } from '../runtime/index.js';
import { parseDuration } from '../util/duration.js';
import { compileSelection, type Selection } from '../selection/compile.js';
import { backupSpecErrors } from '../selection/specErrors.js';
import { encryptionStatus, newBackupKey } from '../storage/keys.js';
import { backupSigner, backupSigningKey, signatureStatus, signingValidation } from '../storage/signatures.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import { locationProblem, resolveLocation, type LocationProblem } from './run/locations.js';
import { isReadOnly, isVeleroLocation, veleroLocationRefusal } from '../storage/open.js';
import { crashPoint } from './run/faults.js';
import { createRunGate, type RunGate } from './run/gate.js';
import { failValidation, runLifecycle, type RunDefinition, type RunEnv, type RunOutcome } from './run/lifecycle.js';
import { backupScope } from './run/scope.js';
import { spoolArtifact, stamp } from './run/runs.js';
import { systemClock } from '../util/clock.js';
import { DEFAULT_CSI_SNAPSHOT_TIMEOUT_MS, newSnapshotTaker, type SnapshotTaker } from '../volumes/index.js';

const BACKUPS = RESOURCES.Backup;
export const STALE_RUN_REASON = 'the Stowage server running this backup stopped before it finished (found InProgress at start-up or failover)';

/** `pending`: the location's problem, when it is the only one and may yet clear (waitForLocation). */
type Validation = { errors: string[]; location?: BackupStorageLocation; pending?: LocationProblem };

/** Every reason the backup cannot run, or the location it will use. */
export function validateBackup(ctx: ControllerContext, backup: Backup): Validation {
  const errors = backupSpecErrors(backup.spec);
  const wanted = backup.spec.storageLocation;
  const location = resolveLocation(ctx, wanted);
  if (location === undefined) {
    errors.push(wanted !== undefined && wanted !== ''
      ? `backup storage location "${wanted}" does not exist in namespace ${ctx.namespace}`
      : `no storage location given and no default backup storage location exists in namespace ${ctx.namespace} (mark one with default: true)`);
    return { errors };
  }
  const name = location.metadata.name;
  if (isReadOnly(location)) errors.push(`backup storage location "${name}" is ReadOnly: backups cannot be written to it`);
  if (isVeleroLocation(location)) errors.push(veleroLocationRefusal(location));
  // Refused before anything is listed: a backup whose files its store cannot take would only fail at the end.
  const unstorable = unstorableKeys('backup', Object.values(backupKeys(normalizePrefix(location.spec.objectStorage.prefix), backup.metadata.name)));
  if (unstorable !== undefined) errors.push(`backup storage location "${name}" cannot hold this backup: ${unstorable}`);
  const problem = locationProblem(ctx, location, backup.metadata.creationTimestamp);
  if (problem !== undefined) {
    if (errors.length === 0 && (problem.wait || problem.recheck === true)) return { errors: [problem.reason], location, pending: problem };
    errors.push(problem.reason);
  }
  return { errors, location };
}

export function backupController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<Backup>('Backup');
  const locations = ctx.informer<BackupStorageLocation>('BackupStorageLocation'); // validation reads the location from the cache
  // Which backups may run at once (run/slots.ts): non-overlapping ones, up to --concurrent-backups.
  const gate = createRunGate(ctx, {
    kind: 'backup', resource: BACKUPS, informer, limit: ctx.config.concurrentBackups, flag: '--concurrent-backups', staleReason: STALE_RUN_REASON,
    countAll: (n) => ctx.metrics.backupTotal.set(n),
    recordCanceled: (b) => recordBackupOutcome(ctx.metrics, { schedule: scheduleOf(b), phase: 'Canceled' }),
  });
  return gate.definition('backup', [readsFrom(locations)], (key, rc) => reconcileBackup(ctx, gate, key, rc));
}

async function reconcileBackup(ctx: ControllerContext, gate: RunGate<Backup>, key: string, rc: ReconcileContext): Promise<Result> {
  // Backup sync creates imported Backups first and sets their status right after: between the
  // two they look new, and running them would overwrite the backup in the bucket.
  const got = await gate.newRun(key, (b) => b.metadata.annotations?.[ANNOTATION_SYNCED_FROM] !== undefined);
  if ('done' in got) return got.done;
  const b = got.run;
  const v = validateBackup(ctx, b);
  const authority = ctx.authority(b);
  const failed = (errors: string[]): Promise<void> =>
    failValidation(ctx, 'backup', BACKUPS, b, errors, () => recordBackupOutcome(ctx.metrics, { schedule: scheduleOf(b), phase: 'FailedValidation' }));
  // A Backup nobody can be held to (in trust mode requester: no stamp) never runs, whatever else holds.
  if ('error' in authority) return failed([...v.errors, authority.error]);
  if (await gate.waitsForLocation(key, v.location, v.pending)) return { requeueAfter: 1000 };
  if (v.errors.length > 0 || v.location === undefined) return failed(v.errors);
  const location = v.location;
  const unsignable = await signingValidation(ctx, location);
  if (unsignable !== undefined) return failed([unsignable]);
  await gate.inSlot(b, key, backupScope(b.spec), async () => {
    // Compiled once: the scope check and the run's request take the same selection.
    const selection = compileSelection(b.spec);
    const scope = await requesterScope(ctx, b, selection, authority);
    if ('validationErrors' in scope) return failed(scope.validationErrors);
    await runLifecycle(ctx, backupRun({ ctx, b, selection, location, authority, scope, schedule: scheduleOf(b), expiration: '' }, rc.signal));
  });
}

/** Trust mode requester: what of the scope the requester may read, settled before the run starts. */
async function requesterScope(
  ctx: ControllerContext, b: Backup, selection: Selection, authority: Authority,
): Promise<Pick<BackupDeps, 'scope' | 'scopeFailure'> | { validationErrors: string[] }> {
  if (authority.mode !== 'requester') return {};
  const planned = await planBackupScope({
    client: authority.client, serverClient: ctx.client, reviewer: authority.reviewer, pageSize: ctx.config.clientPageSize,
  }, b, selection);
  if ('validationErrors' in planned) return planned;
  return 'scope' in planned ? { scope: planned.scope } : { scopeFailure: planned.failure };
}

/** One backup run: what it was validated with, and what it learns as it goes. */
interface BackupRun {
  ctx: ControllerContext;
  b: Backup;
  selection: Selection;
  location: BackupStorageLocation;
  authority: Authority;
  scope: Pick<BackupDeps, 'scope' | 'scopeFailure'>;
  schedule: string;
  /** Set as the run starts. */
  expiration: string;
  /** Resolved with the data key, before anything is written; `signed` once the signature is stored. */
  signer?: SigningKey;
  signed?: BackupSignatureStatus;
  runLog?: winston.Logger;
}

/** The backup's steps in the shared lifecycle (run/lifecycle.ts). */
function backupRun(run: BackupRun, signal: AbortSignal): RunDefinition<BackupResult> {
  const { ctx, b, location, schedule } = run;
  const name = b.metadata.name;
  return {
    kind: 'backup', resource: BACKUPS, obj: b, location, signal,
    // A backup for "the default location" records which one that was: restores, downloads and
    // deletion must find it there even after another location becomes the default.
    ...((b.spec.storageLocation ?? '') === '' ? { recordSpec: { storageLocation: location.metadata.name } } : {}),
    startStatus: (started) => {
      const ttlMs = b.spec.ttl !== undefined ? parseDuration(b.spec.ttl, 'spec.ttl') : ctx.config.defaultBackupTtl;
      run.expiration = stamp(new Date(started.getTime() + ttlMs));
      return { expiration: run.expiration, formatVersion: FORMAT_VERSION, progress: { totalItems: 0, itemsBackedUp: 0 } };
    },
    startedMessage: `backup started, storing to location ${location.metadata.name}`,
    onStarted: () => ctx.metrics.backupAttemptTotal.inc({ schedule }),
    engine: (env) => backupEngine(run, env),
    commit: (store, o, status, endLog) => commitBackup(run, store, o, status, endLog),
    // A fresh data key per backup, recorded (wrapped) as the run starts: even a run that dies before
    // stowage-backup.json leaves a log and a status that say how to read it.
    key: async (opened) => {
      run.signer = await backupSigningKey(ctx, location);
      const key = await newBackupKey(ctx, opened.handle, location, name);
      return key === 'unencrypted' ? { key } : { key, status: { encryption: encryptionStatus(key) } };
    },
    logRef: { backup: name, artifact: 'log' },
    logKey: (prefix) => backupKeys(prefix, name).log,
    putLog: (store, file) => store.putLog(name, file),
    finalStatus: (o) => ({
      expiration: run.expiration, formatVersion: FORMAT_VERSION, progress: o.result?.progress ?? { totalItems: 0, itemsBackedUp: 0 },
      ...(run.signed !== undefined ? { signature: run.signed } : {}),
      ...(o.result?.hookStatus !== undefined ? { hookStatus: o.result.hookStatus } : {}),
      ...snapshotCounts(o.result),
    }),
    summary: (o) => `${o.result?.progress.itemsBackedUp ?? 0} items backed up`,
    // Called once the final status is patched.
    recordOutcome: (o) => {
      crashPoint('after-status');
      recordBackupOutcome(ctx.metrics, {
        schedule, phase: o.phase, durationSeconds: (o.finished.getTime() - o.started.getTime()) / 1000,
        ...(o.result?.manifest?.tarball !== undefined ? { tarballBytes: o.result.manifest.tarball.bytes } : {}),
        items: o.result?.progress.itemsBackedUp ?? 0, finishedAt: o.finished,
      });
    },
  };
}

function backupEngine(run: BackupRun, env: RunEnv): Promise<BackupResult> {
  const { ctx, b, authority } = run;
  run.runLog = env.log;
  crashPoint('before-tarball');
  return runBackup({
    // Every read (discovery, LISTs, GETs) goes through the requester's client in trust mode
    // requester, so the API server's RBAC holds the run to what the reviews allowed.
    client: authority.client, store: env.store, log: env.log, rights: rightsLine(authority), ...run.scope,
    actions: env.handle.backupItemActions().map((a) => ({ name: a.name, action: a })),
    pageSize: ctx.config.clientPageSize, signal: env.signal, startTime: env.started,
    onProgress: (p) => env.onProgress({ totalItems: p.totalItems, itemsBackedUp: p.itemsBackedUp }),
    ...(b.spec.snapshotVolumes === false ? {} : { volumes: snapshotTaker(ctx, b, authority, env.signal) }),
  }, { ...b, status: { ...b.status, phase: 'InProgress', startTimestamp: stamp(env.started), expiration: run.expiration } }, run.selection);
}

/** The tarball is in (the engine uploaded it). A Failed backup gets no other artifact, only its log. */
async function commitBackup(
  run: BackupRun, store: BackupStore, o: RunOutcome<BackupResult>, status: Record<string, unknown>, endLog: () => Promise<void>,
): Promise<void> {
  const { ctx, b, location } = run;
  const name = b.metadata.name;
  crashPoint('after-tarball');
  const result = o.result;
  if (o.phase === 'Failed' || result === undefined) return endLog();
  // Canceled: whatever of the tarball a store kept of the aborted upload is deleted, and no
  // stowage-backup.json is written, so nothing can restore or sync it; the results and the
  // log say what it had done. A store that is down is not waited for (run/lifecycle.ts): the
  // deletion and the results wait in the spool, done when the location is Available again.
  if (o.phase === 'Canceled') {
    await cleanUpCanceled(ctx, store, location.metadata.name, name, result.results, run.runLog);
    return endLog();
  }
  // The marker holds the final status (sync imports it): unset fields are left out, not null.
  const recorded = Object.fromEntries(Object.entries(status).filter(([, v]) => v !== null)) as BackupStatus;
  // The marker names the location it was written to (sync imports only its own location's).
  const spec = { ...b.spec, storageLocation: location.metadata.name };
  const artifacts = { resourceList: result.resourceList, results: result.results, backup: { ...b, spec, metadata: cleanMeta(b), status: recorded } };
  const withManifest = result.manifest !== undefined ? { ...artifacts, manifest: result.manifest } : artifacts;
  if (run.signer === undefined) {
    await store.completeBackup(name, withManifest, endLog);
  } else {
    const sig = signatureStatus(run.signer);
    const sign = backupSigner(run.signer, {
      backup: name, location: location.metadata.name, phase: recorded.phase ?? '', startTimestamp: recorded.startTimestamp ?? '',
      labels: b.metadata.labels ?? {}, tarballSha256: result.manifest?.tarball.sha256 ?? '',
    });
    await store.completeBackup(name, { ...withManifest, backup: { ...withManifest.backup, status: { ...recorded, signature: sig } }, sign }, endLog);
    run.signed = sig;
  }
  crashPoint('after-marker');
}

/**
 * A canceled backup's clean-up: the partial tarball deleted and the results written now, or, when
 * the store cannot be reached, both kept in the spool (the deletion skipped should a later backup of
 * the same name have completed there by then).
 */
async function cleanUpCanceled(
  ctx: ControllerContext, store: BackupStore, location: string, name: string, results: BackupResult['results'], log: winston.Logger | undefined,
): Promise<void> {
  const keys = store.keys(name);
  try {
    await store.deleteBackup(name);
  } catch (err) {
    await ctx.spool.keepDelete({ location, key: keys.tarball, unlessKey: keys.metadata });
    log?.warn(`what the canceled backup had uploaded of its tarball could not be deleted now (${safeErrorMessage(err)}); it is deleted once location ${location} can be reached`);
  }
  try {
    await store.putResults(name, results);
  } catch (err) {
    await spoolArtifact(ctx, location, keys.results, store.seal({ backup: name, artifact: 'results' }, gzipJson(results)));
    log?.warn(`the canceled backup's results could not be uploaded now (${safeErrorMessage(err)}); they are kept in the spool and uploaded once location ${location} can be reached`);
  }
}

/** The run log's line saying whose rights the run uses. */
/**
 * The backup's CSI snapshots (snapshotVolumes unset or true, as in Velero): VolumeSnapshots are
 * made with the run's client, so the requester's rights decide; the server keeps their contents.
 */
function snapshotTaker(ctx: ControllerContext, b: Backup, authority: Authority, signal: AbortSignal): SnapshotTaker {
  const timeout = b.spec.csiSnapshotTimeout;
  return newSnapshotTaker({
    client: authority.client, serverClient: ctx.client,
    backup: { name: b.metadata.name, namespace: b.metadata.namespace ?? ctx.namespace, uid: b.metadata.uid ?? '', annotations: b.metadata.annotations },
    // Validation refused a bad value.
    timeoutMs: timeout === undefined || timeout === '' ? DEFAULT_CSI_SNAPSHOT_TIMEOUT_MS : parseDuration(timeout, 'spec.csiSnapshotTimeout'),
    clock: ctx.timer ?? systemClock, signal,
    who: authority.mode === 'requester' ? authority.describe : undefined,
  });
}

/** Velero's status counts, set once the backup asked for a snapshot. */
function snapshotCounts(result: BackupResult | undefined): Partial<Pick<BackupStatus, 'csiVolumeSnapshotsAttempted' | 'csiVolumeSnapshotsCompleted'>> {
  const n = result?.volumeSnapshots;
  if (n === undefined || n.attempted === 0) return {};
  return { csiVolumeSnapshotsAttempted: n.attempted, csiVolumeSnapshotsCompleted: n.completed };
}

function rightsLine(a: Authority): string {
  if (a.mode === 'requester') return `running with the rights of ${a.describe} (trust mode requester)`;
  return `running with the server's rights (trust mode cluster-admin)${a.requester !== undefined ? `, requested by ${describeRequester(a.requester)}` : ''}`;
}

function scheduleOf(b: Backup): string {
  return b.metadata.labels?.['stowage.dev/schedule-name'] ?? '';
}

/** The Backup as stored in stowage-backup.json: no cluster-specific identity. */
function cleanMeta(b: Backup): Backup['metadata'] {
  const { name, namespace, labels, annotations } = b.metadata;
  return { name, ...(namespace !== undefined ? { namespace } : {}), ...(labels !== undefined ? { labels } : {}), ...(annotations !== undefined ? { annotations } : {}) };
}

