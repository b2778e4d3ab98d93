// One run of a backup or a restore, from the InProgress transition to the final status: the
// lifecycle both run controllers share. Its steps, in order:
//   1. record the choices made at validation in the spec, then InProgress (both conditional on
//      the validated version: two workers or servers never both start a run);
//   2. open the run log, register the run, open the location's store (storage/open.ts
//      withBackupStore) through the run's plugin handle;
//   3. the run's key (the kind's callback), then the engine (the kind's callback);
//   4. write the artifacts (the kind's callback, through BackupStore); the run log ends inside,
//      where the kind says (for a backup: before stowage-backup.json, which is written last);
//   5. the final status patch, then the event, the server log line and the metrics;
// and, in `finally`, whatever happened: the progress patches stopped, the plugin handle released,
// the run unregistered. Every status patch is conditional on the run still being InProgress, and
// a run that was deleted meanwhile ends quietly.
import fs from 'node:fs';
import type winston from 'winston';
import type { BackupStorageLocation } from '../../apis/v1/index.js';
import { isConflict, isNotFound, type KubeObject, type ResourceRef } from '../../kube/index.js';
import type { RunKind, RunLog } from '../../logging/index.js';
import type { BackupStore } from '../../persistence/backupStore.js';
import type { ArtifactKey, ArtifactRef } from '../../persistence/sealing.js';
import { normalizePrefix } from '../../persistence/layout.js';
import { errorMessage, safeErrorMessage } from '../../util/errors.js';
import type { ControllerContext } from './context.js';
import { abortIfCanceledNow, cancelOf } from './cancel.js';
import { encrypts } from '../../storage/keys.js';
import { withBackupStore, type OpenedLocation } from '../../storage/open.js';
import { openRunLog, registerRun, stamp, throttled, uploadRunLog } from './runs.js';
import type { RunCallOptions } from '../../plugin/host/index.js';
import { changedMeanwhile, patchStatusIfCurrent } from './patch.js';

export type RunPhase = 'Completed' | 'PartiallyFailed' | 'Failed' | 'Canceled';
export type RunObject = KubeObject & { metadata: { name: string; namespace?: string; resourceVersion?: string } };
type Status = Record<string, unknown>;

/** What an engine returns: its counts are the run's counts (status, event, end line and metrics all show these). */
export interface EngineResult {
  phase: Exclude<RunPhase, 'Canceled'>;
  failureReason?: string;
  warnings: number;
  errors: number;
}

export interface RunEnv {
  store: BackupStore;
  /** The run's own log. */
  log: winston.Logger;
  /** Aborted on shutdown, a lost lease or a cancel (cancel.ts): the engine stops and returns Failed (the lifecycle makes a cancel Canceled). */
  signal: AbortSignal;
  started: Date;
  handle: ReturnType<ControllerContext['plugins']['handle']>;
  /** Throttled into status.progress. */
  onProgress(progress: Record<string, number>): void;
}

/** How a run ended (or, before the artifacts are written, how it is about to end). */
export interface RunOutcome<R> {
  phase: RunPhase;
  result?: R;
  failure?: string;
  started: Date;
  finished: Date;
  warnings: number;
  errors: number;
}

export interface RunDefinition<R extends EngineResult> {
  kind: RunKind;
  resource: ResourceRef;
  /** The run as validated (phase New). */
  obj: RunObject;
  location: BackupStorageLocation;
  /** Aborted when the worker must stop (server shutdown). */
  signal: AbortSignal;
  /** Spec fields recorded before the run starts (a choice made at validation), or undefined. */
  recordSpec?: Status;
  /** Status fields of the InProgress transition besides phase and startTimestamp. */
  startStatus(started: Date): Status;
  startedMessage: string;
  /** Called once the run is InProgress (attempt metrics). */
  onStarted(): void;
  engine(env: RunEnv): Promise<R>;
  /**
   * The key the run's artifacts are sealed and read with (a backup's fresh one, a restore's its
   * backup's, from the location opened for the run), and status fields that record it, patched as
   * soon as it is known and kept in the final status.
   */
  key(opened: OpenedLocation): Promise<{ key: ArtifactKey; status?: Status }>;
  /** The run log as an artifact (what it is sealed as). */
  logRef: ArtifactRef;
  /**
   * Writes the artifacts of a run whose engine returned, Failed or not. Must call `endLog` (it ends
   * and uploads the run log, and rejects when the log could not be written) once, where the log
   * must end; `status` is the final status as it stands, for artifacts that carry it.
   */
  commit(store: BackupStore, outcome: RunOutcome<R>, status: Status, endLog: () => Promise<void>): Promise<void>;
  /** The run log's object key under the location's prefix, and its upload. */
  logKey(prefix: string): string;
  /** Undefined: the run log is not uploaded anywhere (its lines are in the server log it mirrors to). */
  putLog?(store: BackupStore, file: string): Promise<void>;
  /** Final status fields besides phase, timestamps, counts and failureReason. */
  finalStatus(outcome: RunOutcome<R>): Status;
  /** What the run did, for the end line and the event ("12 items backed up"). */
  summary(outcome: RunOutcome<R>): string;
  recordOutcome(outcome: RunOutcome<R>): void;
}

const PATCH_ATTEMPTS = 5;

/**
 * A status patch that applies only while the run is InProgress: conditional on the last version
 * this run wrote (or read), re-read on Conflict. Resolves false when the run was deleted or its
 * phase moved on (someone else decided it), so the caller stops quietly.
 */
export async function patchWhileInProgress(
  ctx: ControllerContext, resource: ResourceRef, obj: RunObject, version: { rv?: string }, status: Status,
): Promise<boolean> {
  const ns = obj.metadata.namespace ?? ctx.namespace;
  for (let attempt = 1; ; attempt++) {
    try {
      const patched = await ctx.client.patchStatus<RunObject>(resource, ns, obj.metadata.name, { metadata: { resourceVersion: version.rv }, status });
      version.rv = patched.metadata.resourceVersion;
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= PATCH_ATTEMPTS) throw err;
    }
    let fresh: RunObject;
    try {
      fresh = await ctx.client.get<RunObject>(resource, ns, obj.metadata.name);
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
    if ((fresh.status as { phase?: string } | undefined)?.phase !== 'InProgress') return false;
    version.rv = fresh.metadata.resourceVersion;
  }
}

/** FailedValidation, conditional on the validated version; a run changed or deleted meanwhile is decided again on its next event. */
export async function failValidation(
  ctx: ControllerContext, kind: RunKind, resource: ResourceRef, obj: RunObject, errors: string[], record: () => void,
): Promise<void> {
  const status = { phase: 'FailedValidation', validationErrors: errors, completionTimestamp: stamp(ctx.clock.now()), waitingFor: null };
  if (!(await patchStatusIfCurrent(ctx, resource, obj, status))) return;
  void ctx.events.event(obj, 'Warning', 'FailedValidation', errors.join('; '));
  ctx.logger.warn(`${kind} ${obj.metadata.namespace ?? ctx.namespace}/${obj.metadata.name} failed validation: ${errors.join('; ')}`);
  record();
}

/** Step 1: the recorded spec, then InProgress. Undefined when the run changed or went meanwhile (its next event brings it back). */
async function start<R extends EngineResult>(ctx: ControllerContext, def: RunDefinition<R>, started: Date): Promise<{ rv?: string } | undefined> {
  const { obj, resource } = def;
  const ns = obj.metadata.namespace ?? ctx.namespace;
  try {
    let rv = obj.metadata.resourceVersion;
    if (def.recordSpec !== undefined) {
      rv = (await ctx.client.patch<RunObject>(resource, ns, obj.metadata.name, { metadata: { resourceVersion: rv }, spec: def.recordSpec }, 'merge')).metadata.resourceVersion;
    }
    const patched = await ctx.client.patchStatus<RunObject>(resource, ns, obj.metadata.name, {
      metadata: { resourceVersion: rv }, status: { phase: 'InProgress', startTimestamp: stamp(started), validationErrors: null, waitingFor: null, ...def.startStatus(started) },
    });
    return { rv: patched.metadata.resourceVersion };
  } catch (err) {
    if (changedMeanwhile(err)) return undefined;
    throw err;
  }
}

function endLine<R>(kind: RunKind, o: RunOutcome<R>, summary: string): string {
  if (o.phase === 'Failed') return `${kind} failed: ${o.failure ?? 'failed'}`;
  if (o.phase === 'Canceled') return `${kind} ${o.failure ?? 'canceled'}; done before it stopped: ${summary}, ${o.warnings} warnings, ${o.errors} errors`;
  return `${kind} ${o.phase === 'Completed' ? 'completed' : 'partially failed'}: ${summary}, ${o.warnings} warnings, ${o.errors} errors`;
}

/**
 * Ends the run log once: the end line, close, then upload (or the spool). Rejects when the log
 * could not be written or neither uploaded nor spooled; the file then stays where it is.
 */
function logEnder<R extends EngineResult>(ctx: ControllerContext, def: RunDefinition<R>, log: RunLog, store: () => BackupStore | undefined) {
  let ended: Promise<void> | undefined;
  return (o: RunOutcome<R>): Promise<void> => {
    ended ??= (async () => {
      if (o.phase === 'Failed') log.logger.error(endLine(def.kind, o, ''));
      else if (o.phase === 'Canceled') log.logger.warn(endLine(def.kind, o, def.summary(o)));
      else log.logger.info(endLine(def.kind, o, def.summary(o)));
      const closeError = await log.close().then(() => undefined, (err: unknown) => err);
      const putLog = def.putLog;
      if (putLog === undefined) {
        fs.rmSync(log.path, { force: true });
        if (closeError !== undefined) throw new Error(`the run log could not be written: ${safeErrorMessage(closeError)}`, { cause: closeError });
        return;
      }
      const s = store();
      if (s === undefined && encrypts(def.location)) {
        // Without the run's key its log cannot be written sealed, and is not written in the clear.
        fs.rmSync(log.path, { force: true });
        throw new Error(`the run log was not uploaded: location ${def.location.metadata.name} encrypts what it stores, and this run has no key (the server's own log has its lines)`);
      }
      const prefix = s?.prefix ?? normalizePrefix(def.location.spec.objectStorage.prefix);
      // What was written goes up (or to the spool) even when the file is incomplete.
      await uploadRunLog(ctx, log, def.location.metadata.name, def.logKey(prefix),
        (file) => (s !== undefined ? putLog(s, file) : Promise.reject(new Error('the location could not be opened'))),
        s !== undefined && s.key !== 'unencrypted' ? (body) => s.seal(def.logRef, body) : undefined);
      if (closeError !== undefined) throw new Error(`the run log could not be written: ${safeErrorMessage(closeError)}`, { cause: closeError });
    })();
    return ended;
  };
}

/** What a run holds from step 2 on; `finally` releases it. */
interface Running<R extends EngineResult> {
  ctx: ControllerContext;
  def: RunDefinition<R>;
  namespace: string;
  started: Date;
  version: { rv?: string };
  log: RunLog;
  /** Aborted by a shutdown (onShutdown) or a cancel (cancel.ts). */
  abort: AbortController;
  onShutdown: () => void;
  registration: { finish(): void };
  progress: { push(p: Record<string, number>): void; flush(): Promise<void> };
  /**
   * The run's plugin calls end at once when it is aborted (a cancel cuts through an outage, a
   * retry, a slow upload). Once aborted, what is left (a canceled backup's clean-up, results, the
   * log) is tried with no outage window: a store that is down fails it at once, and it waits in
   * the spool instead of holding the run InProgress.
   */
  calls: RunCallOptions;
  /** The location's store keyed for the run, once its key is known. */
  store?: BackupStore;
  keyStatus: Status;
  endLog: (o: RunOutcome<R>) => Promise<void>;
}

/** Runs a validated backup or restore to its end (see the steps above). Never leaves it InProgress while this server is up. */
export async function runLifecycle<R extends EngineResult>(ctx: ControllerContext, def: RunDefinition<R>): Promise<void> {
  const started = ctx.clock.now();
  const version = await start(ctx, def, started);
  if (version === undefined) return;
  def.onStarted();
  const log = await openLogOrFail(ctx, def, version, started);
  if (log === undefined) return;
  const r = beginRun(ctx, def, version, started, log);
  try {
    void ctx.events.event(def.obj, 'Normal', 'Started', def.startedMessage);
    await runOnStore(r);
  } finally {
    await r.progress.flush();
    def.signal.removeEventListener('abort', r.onShutdown);
    if (!log.closed) await log.close().catch(() => undefined);
    r.registration.finish();
  }
}

/** Step 2's run log; undefined once a run whose log cannot be opened is Failed. */
async function openLogOrFail<R extends EngineResult>(ctx: ControllerContext, def: RunDefinition<R>, version: { rv?: string }, started: Date): Promise<RunLog | undefined> {
  try {
    return openRunLog(ctx, def.kind, def.obj.metadata.namespace ?? ctx.namespace, def.obj.metadata.name);
  } catch (err) {
    await finish(ctx, def, version, { phase: 'Failed', failure: `the run log could not be opened: ${safeErrorMessage(err)}`, started, finished: ctx.clock.now(), warnings: 0, errors: 0 });
    return undefined;
  }
}

/** Step 2: the run's abort (shutdown and cancel), its registration and its throttled progress. */
function beginRun<R extends EngineResult>(ctx: ControllerContext, def: RunDefinition<R>, version: { rv?: string }, started: Date, log: RunLog): Running<R> {
  const { kind, obj, resource } = def;
  const namespace = obj.metadata.namespace ?? ctx.namespace;
  const abort = new AbortController();
  const onShutdown = (): void => abort.abort(new Error(`the server shut down before the ${kind} finished`));
  def.signal.addEventListener('abort', onShutdown, { once: true });
  abort.signal.addEventListener('abort', () => {
    const canceled = cancelOf(abort.signal);
    if (canceled !== undefined) log.logger.warn(`${canceled.message} (spec.cancel): stopping the ${kind}`);
  }, { once: true });
  const registration = registerRun(ctx, kind, namespace, obj.metadata.name, log, abort);
  abortIfCanceledNow(ctx, kind, namespace, obj.metadata.name);
  const progress = throttled<Record<string, number>>(1000, async (p) => {
    await patchWhileInProgress(ctx, resource, obj, version, { progress: p }).catch(() => undefined);
  });
  const r: Running<R> = {
    ctx, def, namespace, started, version, log, abort, onShutdown, registration, progress,
    calls: { signal: abort.signal }, keyStatus: {}, endLog: () => Promise.resolve(),
  };
  r.endLog = logEnder(ctx, def, log, () => r.store);
  return r;
}

/**
 * Steps 3 to 5 on the location's store, opened with the run's plugin handle (its lines in the run
 * log, its calls aborted with the run) and released once the final status is patched. A store
 * that cannot be opened, or a handle that cannot be taken, fails the run like its engine would.
 */
async function runOnStore<R extends EngineResult>(r: Running<R>): Promise<void> {
  const { ctx, def } = r;
  let entered = false;
  const steps = async (opened: OpenedLocation | undefined, openError?: unknown): Promise<void> => {
    entered = true;
    await settle(r, await runEngine(r, opened, openError));
  };
  try {
    await withBackupStore(ctx, def.location, { kind: def.kind, namespace: r.namespace, name: def.obj.metadata.name }, (opened) => steps(opened), {
      logger: r.log.logger, calls: () => r.calls, openFailed: (err) => steps(undefined, err),
    });
  } catch (err) {
    if (entered) throw err;
    await steps(undefined, err);
  }
}

/** Step 3: the run's key, then the engine; how the run is about to end (a cancel that came meanwhile makes it Canceled). */
async function runEngine<R extends EngineResult>(r: Running<R>, opened: OpenedLocation | undefined, openError: unknown): Promise<RunOutcome<R>> {
  const { ctx, def, abort } = r;
  let result: R | undefined;
  let failure: string | undefined;
  const failed = (err: unknown): string => (abort.signal.aborted ? errorMessage(abort.signal.reason) : safeErrorMessage(err));
  try {
    if (opened === undefined) failure = failed(openError);
    else {
      const k = await def.key(opened);
      r.store = opened.store.withKey(k.key);
      if (k.status !== undefined) {
        r.keyStatus = k.status;
        await patchWhileInProgress(ctx, def.resource, def.obj, r.version, r.keyStatus);
      }
      result = await def.engine({ store: r.store, log: r.log.logger, signal: abort.signal, started: r.started, handle: opened.handle, onProgress: (p) => r.progress.push(p) });
      if (result.phase === 'Failed') failure = result.failureReason ?? `the ${def.kind} failed`;
    }
  } catch (err) {
    failure = failed(err);
  } finally {
    def.signal.removeEventListener('abort', r.onShutdown);
    r.calls = abort.signal.aborted ? { outageWindowMs: 0 } : {};
  }
  // A cancel that came while the engine ran ends the run Canceled, with what it did (its result)
  // so far; one that came after the engine returned changes nothing, the run is as the engine says.
  const canceled = cancelOf(abort.signal);
  if (canceled !== undefined && (failure !== undefined || result === undefined)) failure = canceled.message;
  return {
    phase: canceled !== undefined && failure === canceled.message ? 'Canceled' : failure !== undefined ? 'Failed' : (result?.phase ?? 'Failed'), started: r.started, finished: ctx.clock.now(),
    warnings: result?.warnings ?? 0, errors: result?.errors ?? 0,
    ...(result !== undefined ? { result } : {}), ...(failure !== undefined ? { failure } : {}),
  };
}

/** Steps 4 and 5: the artifacts (the log ends inside, or just after when they fail first), then the final status. */
async function settle<R extends EngineResult>(r: Running<R>, outcome: RunOutcome<R>): Promise<void> {
  const { ctx, def, log } = r;
  const ref = `${def.kind} ${r.namespace}/${def.obj.metadata.name}`;
  if (outcome.result !== undefined && r.store !== undefined) {
    try {
      await def.commit(r.store, outcome, { ...r.keyStatus, ...statusOf(def, outcome) }, () => r.endLog(outcome));
    } catch (err) {
      // A canceled run stays Canceled: what it could not write (the store is down) is said, not made its outcome.
      if (outcome.phase === 'Canceled' && !log.closed) log.logger.warn(`the ${def.kind} was canceled, and not all it had done could be recorded: ${safeErrorMessage(err)}`);
      else if (outcome.phase === 'Canceled') ctx.logger.warn(`${ref} was canceled, and not all it had done could be recorded: ${safeErrorMessage(err)}`);
      else fail(ctx, ref, outcome, safeErrorMessage(err));
    }
  }
  await r.endLog(outcome).catch((err: unknown) => fail(ctx, ref, outcome, safeErrorMessage(err)));
  await r.progress.flush();
  await finish(ctx, def, r.version, outcome);
}

/**
 * A late failure (an artifact, the log, the marker): the run is Failed, with the first reason. A
 * failure after the run log ended reaches the status, the event and the server log, not that log;
 * one that is not the first reason (the run had failed already) goes to the server log alone.
 */
function fail<R>(ctx: ControllerContext, ref: string, o: RunOutcome<R>, reason: string): void {
  if (o.failure !== undefined && o.failure !== reason) ctx.logger.error(`${ref}: ${reason}`);
  o.phase = 'Failed';
  o.failure ??= reason;
  o.finished = ctx.clock.now();
}

function statusOf<R extends EngineResult>(def: RunDefinition<R>, o: RunOutcome<R>): Status {
  return {
    phase: o.phase, startTimestamp: stamp(o.started), completionTimestamp: stamp(o.finished),
    warnings: o.warnings, errors: o.errors, ...def.finalStatus(o),
    failureReason: o.failure ?? null,
  };
}

/** The final status patch, then the event, the server log line and the metrics, all from `o`. */
async function finish<R extends EngineResult>(ctx: ControllerContext, def: RunDefinition<R>, version: { rv?: string }, o: RunOutcome<R>): Promise<void> {
  const { kind, obj } = def;
  const ref = `${kind} ${obj.metadata.namespace ?? ctx.namespace}/${obj.metadata.name}`;
  if (!(await patchWhileInProgress(ctx, def.resource, obj, version, statusOf(def, o)))) {
    ctx.logger.info(`${ref} was deleted or changed phase before it finished; its ${o.phase} outcome is not recorded`);
    return;
  }
  const counts = `${def.summary(o)}; ${o.warnings} warnings, ${o.errors} errors`;
  const message = o.phase === 'Failed' ? o.failure ?? 'failed' : o.phase === 'Canceled' ? `${o.failure ?? 'canceled'}; done before it stopped: ${counts}` : counts;
  void ctx.events.event(obj, o.phase === 'Completed' ? 'Normal' : 'Warning', o.phase, message);
  // Not a second end line: the run log has that (mirrored here); this says the outcome is recorded.
  ctx.logger.info(`${ref} ${o.phase}: ${message}`);
  def.recordOutcome(o);
}
