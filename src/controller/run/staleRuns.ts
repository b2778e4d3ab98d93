// Runs left InProgress by a server that died (the start-up sweep and failover both come here).
// stowage-backup.json, written last, is a backup's commit point, so the bucket decides:
// - a backup whose stowage-backup.json is written (by this run: same start time) takes the phase,
//   counts, timestamps and expiration recorded there, with an event and a server-log line saying it
//   was recovered from the bucket;
// - every other stale run (any restore) is Failed.
// A location that cannot be read now is not taken as "no marker": the run is retried with backoff
// for up to --object-store-outage-timeout (the window every object-store read and write rides out),
// then Failed with the read error named, so an outage neither hangs the run nor fails a complete
// backup on a blip. A location that no longer exists cannot be read at all: Failed at once.
// The run's log is settled before its status: the partial log left in the scratch directory is
// salvaged (whole lines kept, a closing line appended) and uploaded to the run's log key, or
// spooled while the location is down; a log the dead server had already uploaded gets the closing
// line too when the run ends Failed; a run with neither (it ran on another pod) says its log was
// lost with that server. Settling twice is harmless, so a crash during the sweep is safe too.
import fs from 'node:fs';
import path from 'node:path';
import {
  LABEL_SCHEDULE_NAME, RESOURCES, type Backup, type BackupStatus, type BackupStorageLocation, type Restore,
} from '../../apis/v1/index.js';
import { isNotFound, type KubeObject } from '../../kube/index.js';
import { renderJson, runLogFileName, type RunKind } from '../../logging/index.js';
import { hasLocalRunLog, removeLocalRunLog, salvageLocalRunLog, salvageRunLog } from '../../logging/salvage.js';
import { recordBackupOutcome } from '../../metrics/index.js';
import type { BackupStore } from '../../persistence/backupStore.js';
import { backupKeys, restoreKeys } from '../../persistence/layout.js';
import type { ArtifactRef } from '../../persistence/sealing.js';
import { isVeleroStore } from '../../persistence/veleroStore.js';
import { KeyUnavailableError, type ObjectStore, type RunIdentity } from '../../plugin/api/index.js';
import type { Result } from '../../runtime/index.js';
import { formatDuration } from '../../util/duration.js';
import { safeErrorMessage } from '../../util/errors.js';
import type { ControllerContext } from './context.js';
import { encrypts } from '../../storage/keys.js';
import { BSL_RESOURCE, resolveLocation } from './locations.js';
import { withBackupStore, writeRefusal, type OpenedLocation } from '../../storage/open.js';
import { stamp, uploadRunLog } from './runs.js';
import { resolveBackupOf } from './resolveBackup.js';
import { unlessChanged } from './patch.js';

type StaleObject = KubeObject & { metadata: { name: string; namespace?: string; resourceVersion?: string } };
type PatchStatus = (status: Record<string, unknown>, resourceVersion: string | undefined) => Promise<unknown>;

interface Stale {
  ctx: ControllerContext;
  kind: RunKind;
  namespace: string;
  name: string;
  obj: StaleObject;
  patch: PatchStatus;
  /** Who the location's store is opened for (storage/open.ts withBackupStore). */
  opener: RunIdentity;
}

/** The location a stale run wrote to, opened; `gone` says why there is none. */
type Where = { bsl: BackupStorageLocation; objectStore: ObjectStore; store: BackupStore } | { gone: string };

/**
 * Settles a run found InProgress that this server is not running (see the module comment). The
 * status patch is conditional on the cached version, so a run that just finished here, before the
 * cache caught up, wins. Returns a requeue while the run's location cannot be read.
 */
export async function failStaleRun(ctx: ControllerContext, kind: RunKind, obj: StaleObject, patch: PatchStatus, reason: string): Promise<Result> {
  const namespace = obj.metadata.namespace ?? ctx.namespace;
  if (ctx.runs.get(kind, namespace, obj.metadata.name) !== undefined) return;
  // The cache can lag a run this server has just finished (its final status is patched, the event
  // not yet in): only a fresh read that still says InProgress makes it stale, so a finished run's
  // uploaded log is never rewritten under a reader.
  let fresh: StaleObject & { status?: { phase?: string } };
  try {
    fresh = await ctx.client.get(kind === 'backup' ? RESOURCES.Backup : RESOURCES.Restore, namespace, obj.metadata.name);
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  if (fresh.status?.phase !== 'InProgress' || ctx.runs.get(kind, namespace, obj.metadata.name) !== undefined) return;
  const name = fresh.metadata.name;
  const s: Stale = { ctx, kind, namespace, name, obj: fresh, patch, opener: { kind: 'controller', namespace, name: `stale-run/${kind}/${name}` } };
  if (kind === 'backup') return withStaleStore(s, fresh as Backup, (where) => settleBackup(s, fresh as Backup, reason, where));
  return settleRestore(s, fresh as Restore, reason);
}

/**
 * Opens the location of `backup` (the stale run's own, or the one a stale restore read), keys its
 * store for the backup, and settles with what it found; the store is released once settled.
 */
async function withStaleStore(s: Stale, backup: Backup, settle: (where: Where) => Promise<Result>): Promise<Result> {
  const bsl = await findLocation(s.ctx, backup.spec.storageLocation);
  if (typeof bsl === 'string') return settle({ gone: bsl });
  return withBackupStore(s.ctx, bsl, s.opener, async (opened) => settle(await keyedWhere(opened, bsl, backup)), {
    openFailed: (err) => settle({ gone: `its location "${bsl.metadata.name}" could not be opened: ${safeErrorMessage(err)}` }),
  });
}

/** The opened location with its store keyed for `backup`; unkeyed when the key could not be read now. */
async function keyedWhere(opened: OpenedLocation, bsl: BackupStorageLocation, backup: Backup): Promise<Where> {
  const { objectStore } = opened;
  try {
    return { bsl, objectStore, store: await opened.keyedFor(backup) };
  } catch (err) {
    // A read failure is the caller's to retry (it reads the marker again); a key that is gone is final.
    if (!(err instanceof KeyUnavailableError)) return { bsl, objectStore, store: opened.store };
    return { gone: `the data key of backup "${backup.metadata.name}" is not available (${safeErrorMessage(err)})` };
  }
}

/** What the marker says, or the wait before reading it again while the location cannot be read. */
async function judge(s: Stale, b: Backup, where: Where): Promise<BackupVerdict | { retry: number }> {
  if ('gone' in where) return { phase: 'Failed', why: `${where.gone}, so whether it completed cannot be checked` };
  const { ctx } = s;
  const attemptStarted = performance.now();
  try {
    return judgeMarker(b, await where.store.getBackupMetadata(s.name), where.bsl.metadata.name);
  } catch (err) {
    const window = formatDuration(ctx.config.objectStoreOutageTimeout);
    const read = `location ${where.bsl.metadata.name} cannot be read to look for its stowage-backup.json (${safeErrorMessage(err)})`;
    const retry = nextRetry(s, attemptStarted);
    if (retry !== undefined) {
      ctx.logger.warn(`backup ${s.namespace}/${s.name} was left InProgress by a server that stopped, and ${read}; trying again in ${formatDuration(retry)} (it is marked Failed once the location has been unreadable for ${window})`);
      return { retry };
    }
    return { phase: 'Failed', why: `${read} for ${window}, so whether it completed could not be checked` };
  }
}

/** Reads the marker (or requeues while the location cannot be read), then settles log and status. */
async function settleBackup(s: Stale, b: Backup, reason: string, where: Where): Promise<Result> {
  const { ctx } = s;
  const verdict = await judge(s, b, where);
  if ('retry' in verdict) return { requeueAfter: verdict.retry };
  forgetRetry(s);
  const closing = verdict.phase === 'Failed'
    ? { level: 'error', message: `backup failed: ${reason}; ${verdict.why}` }
    : { level: 'info', message: `${reason}, after writing stowage-backup.json: the backup is whole and was recovered from the bucket as ${verdict.phase}` };
  const logNote = await settleLog(s, where, verdict.phase === 'Failed', closing);
  const schedule = b.metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '';
  if (verdict.phase === 'Failed') {
    const failure = `${reason}; ${verdict.why}${logNote !== '' ? `; ${logNote}` : ''}`;
    if (!await patchOrLose(s, { phase: 'Failed', failureReason: failure, completionTimestamp: stamp(ctx.clock.now()) })) return;
    void ctx.events.event(b, 'Warning', 'Failed', failure);
    ctx.logger.warn(`backup ${s.namespace}/${s.name} marked Failed: ${failure}`);
    recordBackupOutcome(ctx.metrics, { schedule, phase: 'Failed' });
    return;
  }
  const st = verdict.status;
  if (!await patchOrLose(s, { ...st, failureReason: null })) return;
  const message = `recovered from stowage-backup.json in location ${verdict.location}: the server running it stopped after writing it, before recording the outcome; `
    + `${st.progress?.itemsBackedUp ?? 0} items backed up, ${st.warnings ?? 0} warnings, ${st.errors ?? 0} errors${logNote !== '' ? `; ${logNote}` : ''}`;
  void ctx.events.event(b, verdict.phase === 'Completed' ? 'Normal' : 'Warning', verdict.phase, message);
  ctx.logger.info(`backup ${s.namespace}/${s.name} ${verdict.phase}: ${message}`);
  const finished = st.completionTimestamp !== undefined ? new Date(st.completionTimestamp) : ctx.clock.now();
  recordBackupOutcome(ctx.metrics, {
    schedule, phase: verdict.phase, items: st.progress?.itemsBackedUp ?? 0, finishedAt: finished,
    ...(st.startTimestamp !== undefined ? { durationSeconds: (finished.getTime() - Date.parse(st.startTimestamp)) / 1000 } : {}),
  });
}

/** A restore has no commit point to recover: it is Failed, once its log is settled. */
async function settleRestore(s: Stale, r: Restore, reason: string): Promise<Result> {
  const backup = await restoredBackup(s.ctx, r);
  const settle = async (where: Where): Promise<Result> => {
    const logNote = await settleLog(s, where, true, { level: 'error', message: `restore failed: ${reason}` });
    const failure = `${reason}${logNote !== '' ? `; ${logNote}` : ''}`;
    if (!await patchOrLose(s, { phase: 'Failed', failureReason: failure, completionTimestamp: stamp(s.ctx.clock.now()) })) return;
    void s.ctx.events.event(r, 'Warning', 'Failed', failure);
    s.ctx.logger.warn(`restore ${s.namespace}/${s.name} marked Failed: ${failure}`);
  };
  if (backup !== undefined) return withStaleStore(s, backup, settle);
  return settle({ gone: `its backup ${r.spec.backupName !== undefined && r.spec.backupName !== '' ? `"${r.spec.backupName}"` : `of schedule "${r.spec.scheduleName ?? ''}"`} no longer exists` });
}

type BackupVerdict = { phase: 'Failed'; why: string } | { phase: 'Completed' | 'PartiallyFailed'; status: BackupStatus; location: string };

/** What the bucket's stowage-backup.json (or its absence) says about the stale run `b`. */
export function judgeMarker(b: Backup, marker: Backup | undefined, location: string): BackupVerdict {
  if (marker === undefined) return { phase: 'Failed', why: `location ${location} holds no stowage-backup.json for it, so the backup is incomplete` };
  const st = marker.status ?? {};
  const started = b.status?.startTimestamp;
  // The marker of an earlier backup of the same name (deleted, created again) is not this run's.
  if (started !== undefined && st.startTimestamp !== started) {
    return { phase: 'Failed', why: `the stowage-backup.json in location ${location} belongs to another run of this name (started ${st.startTimestamp ?? 'at an unrecorded time'}, this one ${started})` };
  }
  if (st.phase !== 'Completed' && st.phase !== 'PartiallyFailed') {
    return { phase: 'Failed', why: `the stowage-backup.json in location ${location} records phase ${st.phase ?? '(none)'}, not a finished backup` };
  }
  return { phase: st.phase, status: st, location };
}

/**
 * The Backup a stale Restore read: the one it recorded in spec.backupName when it started (see
 * resolveBackup). At start-up the restore's sweep can run before the Backup cache has caught up,
 * so a name the cache lacks is read from the API server.
 */
async function restoredBackup(ctx: ControllerContext, r: Restore): Promise<Backup | undefined> {
  const cached = resolveBackupOf(ctx, r).backup;
  const name = r.spec.backupName ?? '';
  if (cached !== undefined || name === '') return cached;
  try {
    return await ctx.client.get<Backup>(RESOURCES.Backup, r.metadata.namespace ?? ctx.namespace, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * The named (or default) location, from the cache or, when the cache does not have it (it may not
 * have caught up at start-up), from the API server; a string says why there is none. Other API
 * errors throw, so the reconcile is retried with the work queue's backoff.
 */
async function findLocation(ctx: ControllerContext, name: string | undefined): Promise<BackupStorageLocation | string> {
  const cached = resolveLocation(ctx, name);
  if (cached !== undefined) return cached;
  if (name === undefined || name === '') return 'it names no location and no default backup storage location exists';
  try {
    return await ctx.client.get<BackupStorageLocation>(BSL_RESOURCE, ctx.namespace, name);
  } catch (err) {
    if (isNotFound(err)) return `its backup storage location "${name}" no longer exists`;
    throw err;
  }
}

/** Where a stale run's log goes in its location, and the files it is salvaged through. */
interface LogTarget {
  location: string;
  key: string;
  ref: ArtifactRef;
  put: (file: string) => Promise<void>;
  seal: ((body: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>) | undefined;
  /** The log the dead server left in the scratch directory, and its salvaged copy. */
  local: string;
  salvaged: string;
  /** The closing line(s), given how many lines were recovered. */
  closingLines: (recovered: number) => string[];
}

/**
 * Puts the run's log in its place and says what happened to it ('' when it was already uploaded).
 * `closing` is appended to a salvaged log, and, when `appendToUploaded`, to a log already uploaded
 * (it ends with what the dead server believed, not with how the run ended).
 */
async function settleLog(s: Stale, where: Where, appendToUploaded: boolean, closing: { level: string; message: string }): Promise<string> {
  const { ctx, kind, namespace, name } = s;
  const local = path.join(ctx.runLogDir, runLogFileName(kind, namespace, name));
  const hasLocal = hasLocalRunLog(local);
  if ('gone' in where) {
    if (!hasLocal) return `its log was lost with the server that ran it (it is not in this server's scratch directory), and ${where.gone}`;
    removeLocalRunLog(local);
    return `its partial log could not be uploaded and was removed: ${where.gone}`;
  }
  const unwritable = logUnwritable(s, where);
  if (unwritable !== undefined) {
    removeLocalRunLog(local);
    return unwritable;
  }
  const t = logTarget(s, where, local, closing);
  if (hasLocal) return uploadSalvaged(ctx, t);
  if ((await ctx.spool.list()).some((l) => l.target.location === t.location && l.target.key === t.key)) {
    return `its log is kept in the log spool until location ${t.location} can be written`;
  }
  let uploaded: boolean;
  try {
    uploaded = await where.objectStore.objectExists(where.store.bucket, t.key);
  } catch (err) {
    return `whether its log was uploaded could not be checked: ${safeErrorMessage(err)}`;
  }
  if (!uploaded) return uploadLostNote(s, t);
  if (!appendToUploaded) return '';
  try {
    await salvageRunLog(where.store.open(t.ref, await where.objectStore.getObject(where.store.bucket, t.key)), t.salvaged, t.closingLines);
    await uploadRunLog(ctx, { path: t.salvaged }, t.location, t.key, t.put, t.seal);
    return '';
  } catch (err) {
    fs.rmSync(t.salvaged, { force: true });
    return `its uploaded log could not be given its closing line: ${safeErrorMessage(err)}`;
  }
}

/** Why the run's log is not written into its location at all, or undefined. */
function logUnwritable(s: Stale, where: Exclude<Where, { gone: string }>): string | undefined {
  const location = where.bsl.metadata.name;
  const refusal = writeRefusal(where.bsl);
  if (isVeleroStore(where.store) || refusal !== undefined) {
    // Nothing is written into a Velero or ReadOnly location, not even through the spool.
    return `its log was not uploaded: ${refusal ?? `location ${location} holds Velero's backups, which Stowage never writes into`} (the lines are in the server's log)`;
  }
  if (where.store.key === 'unencrypted' && s.kind === 'backup' && encrypts(where.bsl)) {
    // No data key for this run (it stopped before it had one, or it cannot be read now): its log is not stored in the clear.
    return `its log was not uploaded: location ${location} encrypts what it stores and no data key of this run could be read (the lines were in the stopped server's own log)`;
  }
  return undefined;
}

function logTarget(s: Stale, where: Exclude<Where, { gone: string }>, local: string, closing: { level: string; message: string }): LogTarget {
  const { kind, namespace, name } = s;
  const { store } = where;
  const ref: ArtifactRef = kind === 'backup' ? { backup: name, artifact: 'log' } : { restore: name, artifact: 'log' };
  return {
    location: where.bsl.metadata.name, ref, local, salvaged: `${local}.salvaged`,
    key: kind === 'backup' ? backupKeys(store.prefix, name).log : restoreKeys(store.prefix, name).log,
    put: (file) => (kind === 'backup' ? store.putLog(name, file) : store.putRestoreLog(name, file)),
    seal: store.key !== 'unencrypted' ? (body) => store.seal(ref, body) : undefined,
    closingLines: (recovered) => [renderJson(new Date().toISOString(), closing.level, closing.message, [
      [kind, `${namespace}/${name}`], ['logSource', 'server'], ['recoveredLines', recovered],
    ])],
  };
}

/** The partial log left in the scratch directory: whole lines kept, the closing line appended, uploaded or spooled. */
async function uploadSalvaged(ctx: ControllerContext, t: LogTarget): Promise<string> {
  const r = await salvageLocalRunLog(t.local, t.salvaged, t.closingLines);
  const lines = `${r.recovered} lines${r.damage !== undefined ? `; the rest did not inflate: ${r.damage}` : ''}`;
  const landed = await uploadRunLog(ctx, { path: t.salvaged }, t.location, t.key, t.put, t.seal);
  removeLocalRunLog(t.local);
  if (landed === 'refused') return `its partial log (${lines}) was recovered, but location ${t.location} refuses its key for good, so it is in the server log only`;
  return landed === 'uploaded'
    ? `its partial log (${lines}) was recovered from this server's scratch directory and uploaded`
    : `its partial log (${lines}) was recovered and is kept in the log spool until location ${t.location} can be written`;
}

/** A log holding only the explanation, so `backup logs` says what happened instead of "not found". */
async function uploadLostNote(s: Stale, t: LogTarget): Promise<string> {
  const { ctx, kind, namespace, name } = s;
  const lost = 'its log was lost with the server that ran it (neither in this server\'s scratch directory nor in the bucket: it ran on another pod, or stopped before its log file was written)';
  await salvageRunLog(noBytes(), t.salvaged, (n) => [renderJson(new Date().toISOString(), 'warn', `the earlier lines of this ${kind}'s log are gone: ${lost}`, [
    [kind, `${namespace}/${name}`], ['logSource', 'server'],
  ]), ...t.closingLines(n)]);
  const landed = await uploadRunLog(ctx, { path: t.salvaged }, t.location, t.key, t.put, t.seal);
  if (landed === 'refused') return `${lost}; location ${t.location} refuses its log's key for good, so only the server log says so`;
  return `${lost}; the log ${landed === 'uploaded' ? 'uploaded' : `kept in the log spool until location ${t.location} can be written`} says so`;
}

// eslint-disable-next-line require-yield -- an empty source: the log of a run whose lines are all lost
async function* noBytes(): AsyncIterable<Uint8Array> {
  return;
}

async function patchOrLose(s: Stale, status: Record<string, unknown>): Promise<boolean> {
  // Changed under us (finished here, or deleted): the next event decides again.
  return unlessChanged(s.patch(status, s.obj.metadata.resourceVersion));
}

/** First wait after a failed read of the location; doubled per attempt up to RETRY_CAP_MS. */
const RETRY_BASE_MS = 1000;
const RETRY_CAP_MS = 30_000;

/** Stale backups whose location failed to read: since when (elapsed-time clock) and how often. */
const outages = new WeakMap<ControllerContext, Map<string, { since: number; attempts: number }>>();

/**
 * The wait before the next read of an unreadable location, or undefined once the window is spent.
 * `attemptStarted` is when the failed read began: the built-in stores ride out an outage inside the
 * read itself (for the same window), so the window counts from there, not from the failure.
 */
function nextRetry(s: Stale, attemptStarted: number): number | undefined {
  const { ctx } = s;
  let runs = outages.get(ctx);
  if (runs === undefined) outages.set(ctx, (runs = new Map()));
  const key = `${s.kind}/${s.namespace}/${s.name}`;
  const now = performance.now();
  const o = runs.get(key) ?? { since: attemptStarted, attempts: 0 };
  runs.set(key, o);
  const left = ctx.config.objectStoreOutageTimeout - (now - o.since);
  if (left <= 0) return undefined;
  const wait = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** o.attempts, left);
  o.attempts++;
  return Math.max(1, Math.ceil(wait));
}

function forgetRetry(s: Stale): void {
  outages.get(s.ctx)?.delete(`${s.kind}/${s.namespace}/${s.name}`);
}
