// The Restore controller: validates a Restore (every reason listed; its backup by resolveBackup),
// then runs it through the shared run lifecycle (run/lifecycle.ts) with the restore engine, reading the
// backup through its location: the restore's results (with every item's outcome, which is what a
// dry run reports), resource list and log under restores/<r>/, and phase, progress, summary,
// counts and events. A backup in a Velero location (restore/veleroStatus.ts) is restored without a manifest,
// and nothing of the restore is uploaded there. A Restore left InProgress by a dead server
// is marked Failed. The engine acts with the Restore's authority (auth/authority.ts): in trust mode
// "requester" every request it makes goes out impersonating the user who created the Restore, so
// the API server's RBAC and admission decide each item; an item of the backup that user could not
// read (nor download), and a target namespace where they may create nothing, fail validation (restoreRights). The Restore's own status stays the server's.
import path from 'node:path';
import {
  LABEL_SCHEDULE_NAME, RESOURCES, type Backup, type BackupStorageLocation, type Restore,
} from '../apis/v1/index.js';
import { recordRestoreOutcome } from '../metrics/index.js';
import { normalizePrefix, restoreKeys, unstorableKeys } from '../persistence/layout.js';
import { backupUseRefusal, type Authority, type HeldResources } from '../auth/index.js';
import {
  checkTargetNamespaces, inStowageForm, loadRestoreTransforms, newRestoreRequest, noManifestWarning, noteNoManifest, resolveRestoreItemActions, runRestore,
  sourcesOfResourceList, targetsOfResourceList, veleroRestoreStatus, type RestorePodHooks, type RestoreRequest, type RestoreResult, type RestoreTransforms, type TargetNamespace,
} from '../restore/index.js';
import { safeErrorMessage } from '../util/errors.js';
import type { ReconcileContext, Result } from '../runtime/index.js';
import { restoreSpecErrors } from '../selection/specErrors.js';
import type winston from 'winston';
import { connectionOf, execInPod } from '../hooks/index.js';
import { newRestoreHookRunner } from '../hooks/restoreRun.js';
import { restoreHookErrors } from '../hooks/restoreSpec.js';
import type { DynamicClient } from '../kube/index.js';
import type { ArtifactKey } from '../persistence/sealing.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import type { BackupStore } from '../persistence/backupStore.js';
import { locationProblem, resolveLocation, type LocationProblem } from './run/locations.js';
import {
  isVeleroLocation, readStoredResourceList, UnencryptedBackupError, writeRefusal, type OpenedLocation, type VerifiedStore,
} from '../storage/open.js';
import { createRunGate, type RunGate } from './run/gate.js';
import { failValidation, runLifecycle, type RunDefinition, type RunEnv } from './run/lifecycle.js';
import { resolveBackupOf } from './run/resolveBackup.js';
import { restoreScope } from './run/scope.js';
import { scheduleMismatch } from '../storage/signatures.js';

const RESTORES = RESOURCES.Restore;
/**
 * Where restores (and deletions running DeleteItemActions) spill a backup's items while they run:
 * under the scratch directory, private (0700; Secret data lands there), emptied as each run ends.
 */
export function spillDirOf(ctx: Pick<ControllerContext, 'scratchDir'>): string {
  return path.join(ctx.scratchDir, 'spill');
}

export const STALE_RESTORE_REASON = 'the Stowage server running this restore stopped before it finished (found InProgress at start-up or failover)';

/** `pending`: the location's problem, when it is the only one and may yet clear (waitForLocation). */
type Validation = { errors: string[]; backup?: Backup; location?: BackupStorageLocation; pending?: LocationProblem };

export function validateRestore(ctx: ControllerContext, r: Restore): Validation {
  const spec = r.spec;
  const errors = [...restoreSpecErrors(spec), ...restoreHookErrors(spec.hooks)];
  const resolved = resolveBackupOf(ctx, r);
  if (resolved.backup === undefined) {
    errors.push(resolved.error);
    return { errors };
  }
  const backup = resolved.backup;
  const phase = backup.status?.phase ?? 'New';
  if (phase === 'Canceled') {
    errors.push(`backup "${backup.metadata.name}" was canceled before it finished: it holds no complete tarball and can never be restored; restore a Completed or PartiallyFailed backup`);
  } else if (phase !== 'Completed' && phase !== 'PartiallyFailed') {
    errors.push(`backup "${backup.metadata.name}" is ${phase}; only Completed or PartiallyFailed backups can be restored`);
  }
  const location = resolveLocation(ctx, backup.spec.storageLocation);
  if (location === undefined) {
    errors.push(`backup storage location "${backup.spec.storageLocation ?? '(default)'}" of backup "${backup.metadata.name}" does not exist`);
  } else {
    // Refused before anything is created: a restore whose log and results its store cannot take
    // would write to the cluster and then fail to say what it did. (A location Stowage never writes
    // into keeps them in the server log and the status instead.)
    const unstorable = writeRefusal(location) === undefined
      ? unstorableKeys('restore', Object.values(restoreKeys(normalizePrefix(location.spec.objectStorage.prefix), r.metadata.name)))
      : undefined;
    if (unstorable !== undefined) errors.push(`backup storage location "${location.metadata.name}" cannot hold this restore's log and results: ${unstorable}`);
    const problem = locationProblem(ctx, location, r.metadata.creationTimestamp);
    if (problem !== undefined) {
      if (errors.length === 0 && (problem.wait || problem.recheck === true)) return { errors: [problem.reason], backup, location, pending: problem };
      errors.push(problem.reason);
    }
  }
  return { errors, backup, ...(location !== undefined ? { location } : {}) };
}

/** Whose rights a validated restore runs with, the run log's line saying so, and the engine's own checks when validation could not make them. */
interface Rights {
  authority: Authority;
  logLine: string;
  authorizeTargets?: (targets: TargetNamespace[]) => Promise<string[]>;
  authorizeSources?: (held: HeldResources) => Promise<string[]>;
}

/** `restore backup "b1"`: what the refusal of reading its items says the requester may not do. */
const restoreAction = (backup: Backup): string => `restore backup "${backup.metadata.name}"`;
const SOURCE_HOLDER = 'what it would restore';

/**
 * The restore's rights, or the validation errors refusing it. In trust mode "requester" the
 * requester must be able to read what they would bring back, by the rule downloads and deletions
 * use (auth/backupAccess.ts: `list` or `create` of each kind in each source namespace, cluster-wide
 * for cluster-scoped items), and every target namespace (rights.ts) must be one they may create
 * objects in: both checked with SubjectAccessReviews against the backup's resource list before
 * anything runs; a backup without a resource list in Stowage's form (a Velero backup) is checked
 * by the engine from its plan, still before any write.
 */
export async function restoreRights(
  ctx: ControllerContext, req: RestoreRequest, location: BackupStorageLocation, authority: Authority,
): Promise<Rights | { errors: string[] }> {
  const { restore: r, backup } = req;
  if (authority.mode === 'cluster-admin') return { authority, logLine: `acting with ${authority.describe}` };
  const reviewer = authority.reviewer;
  const acting = `acting with the rights of ${authority.describe} (trust mode requester): every read and write of the cluster is made as them`;
  let targets: TargetNamespace[] | undefined;
  let sources: HeldResources | undefined;
  let why = "the backup's resource list is not in Stowage's form";
  // A handle of its own: the run's handle is the lifecycle's, taken once the run is InProgress.
  try {
    const list = await readStoredResourceList(ctx, location, backup, { kind: 'restore-validation', namespace: r.metadata.namespace ?? ctx.namespace, name: r.metadata.name });
    // A Velero backup's list names kinds (`v1/Secret`): the cluster's discovery turns them into resources.
    const listed = list === undefined || !Object.keys(list).some((k) => k.includes('/')) ? list : inStowageForm(list, await ctx.client.discover());
    if (list === undefined) why = 'the backup has no resource list';
    else if (listed !== undefined) {
      targets = targetsOfResourceList(listed, req);
      sources = sourcesOfResourceList(listed, req);
    }
  } catch (err) {
    why = `the backup's resource list could not be read (${safeErrorMessage(err)})`;
  }
  if (targets === undefined || sources === undefined) {
    return {
      authority, logLine: `${acting}; ${why}, so what it reads and the target namespaces are checked from the plan before anything is written`,
      authorizeSources: async (held) => {
        const refused = await backupUseRefusal(reviewer, held, restoreAction(backup), SOURCE_HOLDER);
        return refused === undefined ? [] : [refused];
      },
      authorizeTargets: async (t) => (await checkTargetNamespaces(reviewer, t)).refused,
    };
  }
  const [unreadable, verdict] = await Promise.all([backupUseRefusal(reviewer, sources, restoreAction(backup), SOURCE_HOLDER), checkTargetNamespaces(reviewer, targets)]);
  const errors = [...(unreadable !== undefined ? [unreadable] : []), ...verdict.refused];
  if (errors.length > 0) return { errors };
  const n = targets.length;
  return { authority, logLine: `${acting}; SubjectAccessReviews allowed reading what it restores, and ${verdict.reviews} allowed its ${n} target namespace${n === 1 ? '' : 's'}` };
}

/**
 * The restore's hooks (spec.hooks and the pods' Velero hook annotations): pods are watched and
 * exec'd into with the run's client, so in trust mode requester a requester who may not exec into a
 * pod cannot hook it either (the refusal names the pod and the right).
 */
function restoreHooksOf(r: Restore, client: DynamicClient, log: winston.Logger, signal: AbortSignal): RestorePodHooks {
  const conn = connectionOf(client);
  return newRestoreHookRunner({ hooks: r.spec.hooks, client, log, signal, exec: (target, opts) => execInPod(conn, target, opts) });
}

export function restoreController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<Restore>('Restore');
  // Validation reads backups and locations from the shared caches.
  const backups = ctx.informer<Backup>('Backup');
  const locations = ctx.informer<BackupStorageLocation>('BackupStorageLocation');
  // Restores writing to disjoint namespaces run at once, up to --concurrent-restores (run/slots.ts).
  const gate = createRunGate(ctx, {
    kind: 'restore', resource: RESTORES, informer, limit: ctx.config.concurrentRestores, flag: '--concurrent-restores', staleReason: STALE_RESTORE_REASON,
    countAll: (n) => ctx.metrics.restoreTotal.set(n),
    recordCanceled: () => recordRestoreOutcome(ctx.metrics, { schedule: '', phase: 'Canceled' }),
  });
  return gate.definition('restore', [readsFrom(backups), readsFrom(locations)], (key, rc) => reconcileRestore(ctx, gate, key, rc));
}

function refuse(ctx: ControllerContext, r: Restore, errors: string[]): Promise<void> {
  return failValidation(ctx, 'restore', RESTORES, r, errors, () => recordRestoreOutcome(ctx.metrics, { schedule: '', phase: 'FailedValidation' }));
}

async function reconcileRestore(ctx: ControllerContext, gate: RunGate<Restore>, key: string, rc: ReconcileContext): Promise<Result> {
  const got = await gate.newRun(key);
  if ('done' in got) return got.done;
  const r = got.run;
  const v = validateRestore(ctx, r);
  const authority = ctx.authority(r);
  if ('error' in authority) {
    // Listed with the other reasons; a location that may yet clear is not one (it is waited for when the stamp is there).
    await refuse(ctx, r, [...(v.pending === undefined ? v.errors : []), authority.error]);
    return;
  }
  if (await gate.waitsForLocation(key, v.location, v.pending)) return { requeueAfter: 1000 };
  // Read once the run is not waiting: listed with the other reasons when refused.
  const transforms = await loadRestoreTransforms(ctx, r, authority);
  const transformErrors = 'errors' in transforms ? transforms.errors : [];
  if (v.errors.length > 0 || v.backup === undefined || v.location === undefined) {
    await refuse(ctx, r, [...v.errors, ...transformErrors]);
    return;
  }
  const { backup, location } = v;
  await gate.inSlot(r, key, restoreScope(r.spec, backup.spec), async () => {
    // Built once: the rights check and the run read the same request.
    const req = newRestoreRequest(r, backup, { priorities: ctx.config.restoreResourcePriorities });
    const rights = await restoreRights(ctx, req, location, authority);
    if ('errors' in rights || 'errors' in transforms) {
      await refuse(ctx, r, [...('errors' in rights ? rights.errors : []), ...transformErrors]);
      return;
    }
    await runLifecycle(ctx, restoreRun({ ctx, req, location, rights, transforms }, rc.signal));
  });
}

/** One restore run: what it was validated with. */
interface RestoreRun {
  ctx: ControllerContext;
  req: RestoreRequest;
  location: BackupStorageLocation;
  rights: Rights;
  transforms: RestoreTransforms;
}

/** The restore's steps in the shared lifecycle (run/lifecycle.ts). */
function restoreRun(run: RestoreRun, signal: AbortSignal): RunDefinition<RestoreResult> {
  const { ctx, location } = run;
  const { restore: r, backup } = run.req;
  const name = r.metadata.name;
  const schedule = backup.metadata.labels?.[LABEL_SCHEDULE_NAME] ?? '';
  const dryRun = r.spec.dryRun === true;
  // A Velero location is only read, and so is a ReadOnly one (its owner's word): the restore's log and results stay out of the bucket.
  const refusal = writeRefusal(location);
  const runName = `${r.metadata.namespace ?? ctx.namespace}/${name}`;
  return {
    kind: 'restore', resource: RESTORES, obj: r, location, signal,
    // A restore from a schedule records the backup it picked (as Velero does): describe shows it,
    // downloads and the backup's deletion find it, and a later backup of the schedule changes nothing.
    ...((r.spec.backupName ?? '') === '' ? { recordSpec: { backupName: backup.metadata.name } } : {}),
    startStatus: () => ({ progress: { totalItems: 0, itemsRestored: 0 } }),
    startedMessage: `${dryRun ? 'dry run' : 'restore'} of backup ${backup.metadata.name} started`,
    onStarted: () => ctx.metrics.restoreAttemptTotal.inc({ schedule }),
    engine: (env) => restoreEngine(run, env),
    // Failed or not: results carry every item's outcome (`restore describe` shows a dry run's predictions from them).
    async commit(store, o, _status, endLog) {
      const result = o.result;
      if (result !== undefined && refusal === undefined) {
        const results = { ...result.results, dryRun: result.dryRun, summary: result.summary, outcomes: result.outcomes };
        await store.completeRestore(name, { results, resourceList: result.resourceList });
      }
      await endLog();
    },
    key: (opened) => restoreKey(run, opened),
    logRef: { restore: name, artifact: 'log' },
    logKey: (prefix) => restoreKeys(prefix, name).log,
    ...(refusal !== undefined ? {} : { putLog: (store: BackupStore, file: string) => store.putRestoreLog(name, file) }),
    finalStatus: (o) => ({
      progress: o.result?.progress ?? { totalItems: 0, itemsRestored: 0 },
      summary: o.result?.summary ?? { created: 0, updated: 0, skipped: 0, failed: 0 },
      ...(o.result?.hookStatus !== undefined ? { hookStatus: o.result.hookStatus } : {}),
      ...(refusal !== undefined ? veleroRestoreStatus(refusal, backup.metadata.name, runName, o.result?.results) : {}),
    }),
    summary: (o) => {
      const sum = o.result?.summary ?? { created: 0, updated: 0, skipped: 0, failed: 0 };
      // Nothing failed in a dry run: its failed items are predictions.
      return dryRun ? `dry run: would create ${sum.created}, would update ${sum.updated}, would skip ${sum.skipped}, would fail ${sum.failed}`
        : `created ${sum.created}, updated ${sum.updated}, skipped ${sum.skipped}, failed ${sum.failed}`;
    },
    recordOutcome: (o) => recordRestoreOutcome(ctx.metrics, { schedule, phase: o.phase, durationSeconds: (o.finished.getTime() - o.started.getTime()) / 1000 }),
  };
}

/**
 * The backup's key opens it and seals what the restore writes (bound to the restore's name). An
 * unencrypted backup where the location requires encryption is refused first; then a signing
 * location's backup is restored only when its signature holds, and it was made by the schedule the
 * restore names, before anything is created.
 */
async function restoreKey(run: RestoreRun, opened: OpenedLocation): Promise<{ key: ArtifactKey }> {
  const { restore: r, backup } = run.req;
  let verified: VerifiedStore;
  try {
    verified = await opened.verifiedFor(backup, { refuseUnencrypted: true });
  } catch (err) {
    if (err instanceof UnencryptedBackupError) throw new Error(`${err.message}, so it is not restored`);
    throw err;
  }
  const wrongSchedule = verified.signature === undefined ? undefined : scheduleMismatch(verified.signature.statement, backup.metadata.name, r.spec.scheduleName);
  if (wrongSchedule !== undefined) throw new Error(`${wrongSchedule}, so it is not restored`);
  return { key: verified.store.key };
}

async function restoreEngine(run: RestoreRun, env: RunEnv): Promise<RestoreResult> {
  const { ctx, req, rights, transforms } = run;
  const { restore: r, backup } = req;
  // A Velero location's backup has no manifest (Stowage writes one with every finished backup).
  const velero = isVeleroLocation(run.location);
  env.log.info(rights.logLine);
  if (transforms.logLine !== undefined) env.log.info(transforms.logLine);
  const actions = await resolveRestoreItemActions(env.handle.restoreItemActions().map((a) => ({ name: a.name, action: a })));
  if (velero) env.log.warn(noManifestWarning(backup.metadata.name));
  const result = await runRestore({
    // The requester's impersonating client in trust mode "requester": the API server's RBAC and admission decide each item.
    client: rights.authority.client, source: env.store,
    ...(rights.authorizeTargets !== undefined ? { authorizeTargets: rights.authorizeTargets } : {}),
    ...(rights.authorizeSources !== undefined ? { authorizeSources: rights.authorizeSources } : {}), actions, log: env.log, clock: ctx.clock, signal: env.signal,
    spillDir: spillDirOf(ctx),
    // Stowage writes a manifest with every finished backup, so one missing from its own backup was
    // deleted; Velero writes none.
    requireManifest: !velero,
    maxItemBytes: ctx.config.maxItemBytes,
    onProgress: (p) => env.onProgress({ totalItems: p.totalItems, itemsRestored: p.itemsRestored }),
    mappings: transforms.mappings, ...(transforms.modifiers !== undefined ? { modifiers: transforms.modifiers } : {}),
    podHooks: restoreHooksOf(r, rights.authority.client, env.log, env.signal),
    ...(ctx.timer !== undefined ? { timer: ctx.timer } : {}),
    ...(rights.authority.mode === 'requester' ? { who: rights.authority.describe } : {}),
  }, req);
  if (velero) noteNoManifest(result, backup.metadata.name);
  return result;
}
