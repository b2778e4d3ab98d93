// runRestore: reads a backup's tarball defensively, plans the restore (filters, mapping, order),
// then creates the items tier by tier, in parallel within a tier, through the built-in and plugin
// restore item actions. Every reason to refuse the archive is found before anything is created.
import type winston from 'winston';
import type { RestoreProgress, RestoreSummary } from '../apis/v1/index.js';
import {
  createSpillFile,
  isArchiveError,
  loadSpilled,
  spillArchive,
  manifestCheck,
  ManifestStream,
  streamingManifestCheck,
  type AsyncManifestCheck,
  type ArchiveObject,
  type BackupManifest,
  type ItemIdentity,
  type OversizedEntry,
  type ReadLimits,
  type SpillFile,
} from '../archive/index.js';
import { isApiUnreachable, type ApiResource, type DynamicClient } from '../kube/index.js';
import { addResult, countResults, resourceListOf, type ResourceList, type RunResults } from '../persistence/results.js';
import { pathDigest, type PathDigest } from '../persistence/pathDigest.js';
import { agreementByDigest, checkAgreement, isCheckedPath } from '../persistence/verify.js';
import type { KubeObject } from '../plugin/api/index.js';
import { systemClock, type Clock, type TimerClock } from '../util/clock.js';
import { eachLimit } from '../util/concurrency.js';
import { errorMessage, sanitizeMessage } from '../util/errors.js';
import { selectionLogFields } from '../selection/validate.js';
import { actionMatcher, resolveRestoreItemActions, type ActionMatcher, type ResolvedRestoreItemAction } from './actions/selector.js';
import { BUILTIN_RESTORE_ITEM_ACTIONS } from './actions/index.js';
import { mappingActions, type MappingConfig } from './actions/mappings.js';
import { csiRestoreActions } from './actions/csi.js';
import { DEFAULT_CSI_SNAPSHOT_TIMEOUT_MS } from '../volumes/index.js';
import type { ResourceModifiers } from './modifiers/index.js';
import type { RestorePodHooks } from './podHooks.js';
import { newExecutor, type Executor } from './executor.js';
import { newOutcomes } from './outcomes.js';
import { displayName } from './objects.js';
import { oversizedVerdict, type OversizedVerdict } from './oversized.js';
import { bareNamespace, buildPlan, itemFacts, RestoreRefusedError, type ArchivedItem, type PlannedItem, type RestorePlan } from './plan.js';
import type { ItemOutcome, RestoreRequest } from './request.js';
import { sourcesOfPlan, targetsOfPlan, type TargetNamespace } from './rights.js';
import type { HeldResources } from '../auth/index.js';

/** Where the backup's tarball (and its manifest, when there is one) come from. A BackupStore is one. */
export interface RestoreSource {
  getTarball(backupName: string): Promise<AsyncIterable<Uint8Array>>;
  /** The manifest written at backup time; undefined when the backup has none (a Velero backup). */
  getManifest?(backupName: string): Promise<BackupManifest | undefined>;
  /** The same manifest as inflated JSON bytes, read as the tarball is: preferred over getManifest (see ManifestStream). */
  getManifestStream?(backupName: string): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** The resource list written at backup time (undefined when there is none): checked against the tarball before anything is written. */
  getResourceList?(backupName: string): Promise<ResourceList | undefined>;
  /** The results written at backup time, for their completeness record (undefined when there are none). */
  getResults?(backupName: string): Promise<RunResults | undefined>;
}

export interface RestoreDeps {
  client: DynamicClient;
  source: RestoreSource;
  /** Plugin restore item actions, run after the built-in ones. */
  actions?: readonly ResolvedRestoreItemAction[];
  /** The restore's own logger (RunLog.logger). */
  log: winston.Logger;
  /** Items created at the same time within a tier. Default 16. The client's QPS/burst limit applies on top. */
  concurrency?: number;
  clock?: Clock;
  /**
   * Largest item read from the archive, in bytes (the server's --max-item-bytes; default 8 MiB).
   * A bigger item fails alone, named; the rest of the restore goes on.
   */
  maxItemBytes?: number;
  /** The reader's other caps (total size, entries), for tests; maxItemBytes wins over its maxEntryBytes. */
  readLimits?: Partial<ReadLimits>;
  /**
   * Directory for the restore's spill file, which holds the archive's items while the restore runs
   * (created 0700 when missing; the file is private and deleted when the restore ends).
   */
  spillDir: string;
  /** How long to wait for a restored CRD to be Established and served, or a terminating namespace to go. Default 60 s. */
  waitTimeoutMs?: number;
  /** Called after every item with the counts so far. */
  onProgress?: (progress: RestoreProgress) => void;
  /**
   * Refuse a backup without a manifest. Stowage writes one with every finished backup, so for one
   * of its own backups a missing manifest means it was deleted, and the tarball is unchecked.
   */
  requireManifest?: boolean;
  signal?: AbortSignal;
  /** Discovery results, when the caller already has them. */
  discovered?: readonly ApiResource[];
  /**
   * Asked after planning, before anything is written, with the plan's target namespaces: the
   * refusals it returns (rights.ts) fail the restore. The controller passes it in trust mode
   * "requester" when validation could not check the namespaces from the backup's resource list.
   */
  authorizeTargets?: (targets: TargetNamespace[]) => Promise<string[]>;
  /**
   * Asked after planning, before authorizeTargets, with what the plan reads from the backup
   * (sourcesOfPlan): the refusals it returns fail the restore. Passed with authorizeTargets, for
   * the requester's right to read what they would bring back.
   */
  authorizeSources?: (held: HeldResources) => Promise<string[]>;
  /** The mapping ConfigMaps' configuration (storage class, images, node labels): built-in actions run after the other built-ins. */
  mappings?: MappingConfig;
  /** The Restore's resource modifier rules (spec.resourceModifier), applied to each item after every action. */
  modifiers?: ResourceModifiers;
  /** Restore hooks (spec.hooks, the pods' hook annotations): waited for after the last tier, counted in hookStatus. */
  podHooks?: RestorePodHooks;
  /** Times the wait for a restored CSI VolumeSnapshot to become ready; the system clock when absent. */
  timer?: TimerClock;
  /** How long a restored VolumeSnapshot may take to become ready. Default 10 min (Velero's csiSnapshotTimeout). */
  volumeSnapshotTimeoutMs?: number;
  /** Whose rights the run uses, for refusals (`user "alice"`). */
  who?: string;
}

export interface RestoreStats {
  durationMs: number;
  /** Items handled (any outcome) per second while creating. */
  itemsPerSecond: number;
  concurrency: number;
  /** Most items in flight at once. */
  maxInFlight: number;
  tiers: number;
}

export interface RestoreResult {
  phase: 'Completed' | 'PartiallyFailed' | 'Failed';
  /** Why the restore failed as a whole (an archive refused, the backup unreadable, ...). */
  failureReason?: string;
  dryRun: boolean;
  startTimestamp: string;
  completionTimestamp: string;
  progress: RestoreProgress;
  summary: RestoreSummary;
  warnings: number;
  errors: number;
  /** Warnings and errors by cluster and namespace (the restore-<r>-results.gz file). */
  results: RunResults;
  /** What was created or updated (for a dry run: would be), groupResource -> ["ns/name"]. */
  resourceList: ResourceList;
  /** Every item's outcome and why. */
  outcomes: ItemOutcome[];
  stats: RestoreStats;
  /** Restore hooks run, and failed (set when the restore had hooks to run). */
  hookStatus?: { hooksAttempted: number; hooksFailed: number };
}

export const DEFAULT_RESTORE_CONCURRENCY = 16;
const DEFAULT_WAIT_TIMEOUT_MS = 60_000;

/** Restores `request.backup` as `request.restore` asks. Never throws for a failed restore: the result says why. */
export async function runRestore(deps: RestoreDeps, req: RestoreRequest): Promise<RestoreResult> {
  const clock = deps.clock ?? systemClock;
  const began = { at: clock.now(), t0: performance.now() };
  const concurrency = deps.concurrency ?? DEFAULT_RESTORE_CONCURRENCY;
  const log = deps.log;
  const stats: RestoreStats = { durationMs: 0, itemsPerSecond: 0, concurrency, maxInFlight: 0, tiers: 0 };
  const finish = (failureReason?: string): RestoreResult => finishRestore(req, log, clock, began, stats, failureReason);

  const backupName = req.backup.metadata.name;
  log.info(`restoring backup ${backupName}${req.dryRun ? ' as a dry run: nothing will be written to the cluster' : ''}`, {
    existingResourcePolicy: req.existingResourcePolicy,
    concurrency,
    ...selectionLogFields(req.restore.spec),
  });

  // The run's own stop: the caller's signal, or an item that found the API gone for good.
  const stop = new AbortController();
  const onOuterAbort = (): void => stop.abort(deps.signal?.reason);
  if (deps.signal?.aborted === true) onOuterAbort();
  deps.signal?.addEventListener('abort', onOuterAbort, { once: true });
  let spill: SpillFile | undefined;
  try {
    let ready: Ready;
    try {
      // A group the API gave up on for an outage is not "not served": the whole API is gone, so the run fails.
      let unreachable: unknown;
      const discovered =
        deps.discovered ??
        (await deps.client.discover({
          onGroupError: (gv, err) => {
            if (isApiUnreachable(err)) unreachable ??= err;
            else log.warn(`discovery of ${gv} failed; its resources are treated as not served: ${err.message}`);
          },
        }));
      if (unreachable !== undefined) throw unreachable;
      spill = await createSpillFile(deps.spillDir);
      ready = await readAndPlan(deps, req, spill, discovered, stop.signal);
    } catch (err) {
      return finish(describeFatal(err));
    }
    announcePlan(deps, req, ready);
    const outcomes = newOutcomes(req, log, () => ready.plan.items.size + ready.oversized.failed.length, deps.onProgress);
    // Before any tier: nothing waits for an item that is not restored, and the log names them first.
    for (const o of ready.oversized.failed) outcomes.record(o, o, 'failed', o.reason);
    const from = spill;
    const load = (p: PlannedItem): Promise<KubeObject> => (p.archived === undefined ? Promise.resolve(bareNamespace(p.sourceName)) : loadSpilled(from, p.archived));
    const exec = newExecutor({
      client: deps.client, log, req, plan: ready.plan, matchers: ready.matchers, load,
      outcomes,
      servedNow: new Set(ready.discovered.map((r) => r.groupResource)),
      waitTimeoutMs: deps.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS,
      signal: stop.signal,
      stop: (reason) => stop.abort(reason),
      onInFlight: (n) => {
        stats.maxInFlight = Math.max(stats.maxInFlight, n);
      },
      ...(deps.modifiers !== undefined ? { modifiers: deps.modifiers } : {}),
      ...(deps.podHooks !== undefined ? {
        podHooks: deps.podHooks,
        reportHook: (kind: 'warnings' | 'errors', namespace: string, message: string) => addResult(req.results, kind, namespace === '' ? undefined : namespace, message),
      } : {}),
    });
    const stopped = await runTiers(deps, ready.plan, exec, concurrency, stats, req, stop.signal);
    // Hooks started as their pods were created; the restore ends when the last one has.
    const hookStatus = await deps.podHooks?.settle();
    const result = finish(stopped);
    if (hookStatus !== undefined && hookStatus.hooksAttempted > 0) result.hookStatus = hookStatus;
    return result;
  } finally {
    deps.signal?.removeEventListener('abort', onOuterAbort);
    await spill?.close().catch((err: unknown) => log.warn(`could not remove the restore's spill file: ${errorMessage(err)}`));
  }
}

/** What the restore knows once the archive is read and planned, before anything is created. */
interface Ready {
  discovered: readonly ApiResource[];
  plan: RestorePlan;
  matchers: ActionMatcher[];
  /** Items over the per-item cap: those that fail, and copies not used. */
  oversized: OversizedVerdict;
}

async function readAndPlan(deps: RestoreDeps, req: RestoreRequest, spill: SpillFile, discovered: readonly ApiResource[], signal: AbortSignal): Promise<Ready> {
  const withLabels = req.selectors.length > 0;
  const { items, alternates, oversized } = await readBackup(deps, spill, req.backup.metadata.name, discovered, (obj, id) => itemFacts(obj, id, withLabels));
  const plan = buildPlan(items, req, discovered, alternates);
  const refused = [
    ...(deps.authorizeSources !== undefined ? await deps.authorizeSources(sourcesOfPlan(plan.items.values())) : []),
    ...(deps.authorizeTargets !== undefined ? await deps.authorizeTargets(targetsOfPlan(plan.items.values(), req)) : []),
  ];
  if (refused.length > 0) throw new RestoreRefusedError('not-allowed', refused.join('; '));
  const csi = csiRestoreActions({
    client: deps.client, restore: req.restore, dryRun: req.dryRun, clock: deps.timer ?? systemClock,
    timeoutMs: deps.volumeSnapshotTimeoutMs ?? DEFAULT_CSI_SNAPSHOT_TIMEOUT_MS, signal, who: deps.who,
    claimInPlan: async (ns, name) => {
      const p = plan.items.get('persistentvolumeclaims', ns, name);
      return p?.archived === undefined || p.skip !== undefined ? undefined : loadSpilled(spill, p.archived);
    },
    warn: (ns, message) => {
      addResult(req.results, 'warnings', ns, message);
      deps.log.warn(message);
    },
  });
  // The CSI actions run before the mapping actions: a storage-class mapping applies to the claim they restore from a snapshot.
  const builtins = await resolveRestoreItemActions([...BUILTIN_RESTORE_ITEM_ACTIONS, ...csi, ...mappingActions(deps.mappings ?? {})]);
  const matchers = [...builtins, ...(deps.actions ?? [])].map(actionMatcher);
  return { discovered, plan, matchers, oversized: oversizedVerdict(oversized, items, req, discovered) };
}

/** Logs what the plan leaves out and its version changes (also warnings in the results), and its size. */
function announcePlan(deps: RestoreDeps, req: RestoreRequest, { plan, oversized }: Ready): void {
  const log = deps.log;
  for (const [gr, n] of plan.neverRestored) log.info(`${n.count} ${gr} left out: never restored (${n.reason})`);
  for (const message of [...versionChangeMessages(plan), ...oversized.unusedCopies]) {
    addResult(req.results, 'warnings', undefined, message);
    log.warn(message);
  }
  req.progress.totalItems = plan.items.size + oversized.failed.length;
  deps.onProgress?.({ ...req.progress });
  log.info(`plan: ${plan.items.size} items in ${plan.tiers.length} tiers`, { order: plan.tiers.map((t) => t.tier.label) });
}

/** Runs the tiers one after another, `concurrency` items at a time within a tier. Returns why the restore was stopped, if it was. */
async function runTiers(
  deps: RestoreDeps, plan: RestorePlan, exec: Executor, concurrency: number, stats: RestoreStats, req: RestoreRequest, signal: AbortSignal,
): Promise<string | undefined> {
  const tExec = performance.now();
  for (const { tier, items } of plan.tiers) {
    if (items.length === 0) continue;
    stats.tiers++;
    deps.log.info(`restoring ${items.length} items of ${tier.groupResources.join(', ')}`);
    try {
      // The executor records every item's outcome itself, so no per-item result is kept here; a
      // rejection it did not record (it catches the item's own errors) is still named, not dropped.
      await eachLimit(items, concurrency, (p) => exec.restoreItem(p), {
        signal,
        onRejected: (err, p) => deps.log.error(`restoring ${p.groupResource} ${displayName(p.sourceNamespace, p.sourceName)} failed outside its own error handling: ${errorMessage(err)}`, {
          resource: p.groupResource, namespace: p.sourceNamespace, name: p.sourceName,
        }),
      });
    } catch (err) {
      return `the restore was stopped: ${errorMessage(err)}`;
    }
  }
  const execSeconds = (performance.now() - tExec) / 1000;
  stats.itemsPerSecond = execSeconds > 0 ? Math.round((req.progress.itemsRestored / execSeconds) * 10) / 10 : 0;
  return undefined;
}

/** The result of the run: Failed with `failureReason`, else as the items and results say. */
function finishRestore(
  req: RestoreRequest, log: winston.Logger, clock: Clock, began: { at: Date; t0: number }, stats: RestoreStats, failureReason?: string,
): RestoreResult {
  stats.durationMs = Math.round(performance.now() - began.t0);
  // The run's end line (with the reason) is the controller's: the run can still fail after this.
  if (failureReason !== undefined) addResult(req.results, 'errors', undefined, failureReason);
  const { warnings, errors } = countResults(req.results);
  // A dry run's failed items are predictions (warnings): nothing failed, so it completes.
  const failedItems = req.dryRun ? 0 : req.summary.failed;
  const phase = failureReason !== undefined ? 'Failed' : failedItems > 0 || errors > 0 ? 'PartiallyFailed' : 'Completed';
  const changed = req.outcomes.filter((o) => o.action === 'created' || o.action === 'updated');
  const result: RestoreResult = {
    phase,
    dryRun: req.dryRun,
    startTimestamp: began.at.toISOString(),
    completionTimestamp: clock.now().toISOString(),
    progress: { ...req.progress },
    summary: { ...req.summary },
    warnings,
    errors,
    results: req.results,
    resourceList: resourceListOf(changed),
    outcomes: req.outcomes,
    stats,
  };
  if (failureReason !== undefined) result.failureReason = failureReason;
  log.debug(`restore engine finished in ${stats.durationMs} ms`, { maxInFlight: stats.maxInFlight, tiers: stats.tiers });
  return result;
}

/**
 * Reads the tarball whole and checks it against the manifest, spilling the items to `spill`. Returns
 * the index of the items; the file entries and the manifest are not kept past this point.
 */
async function readBackup(
  deps: RestoreDeps, spill: SpillFile, backupName: string, discovered: readonly ApiResource[], pick: (obj: ArchiveObject, id: ItemIdentity) => ArchivedItem['picked'],
): Promise<{ items: ArchivedItem[]; alternates: ArchivedItem[]; oversized: OversizedEntry[] }> {
  // Checked entry by entry while reading: neither a table of the tarball's entries nor the whole manifest is held.
  const check = await manifestCheckOf(deps.source, backupName);
  if (check === undefined && deps.requireManifest === true) {
    throw new RestoreRefusedError('manifest-missing', `backup ${backupName} has no manifest in object storage, though Stowage writes one with every finished backup: it was deleted, so the tarball cannot be checked and is not restored`);
  }
  // The tarball's item paths, as a digest: once they match the manifest's, the records are compared with it (checkRecords).
  const paths = pathDigest();
  try {
    let tarball: AsyncIterable<Uint8Array>;
    try {
      tarball = await deps.source.getTarball(backupName);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'NotFound') throw new Error(`the tarball of backup ${backupName} is not in object storage`, { cause: err });
      throw new Error(`cannot read the tarball of backup ${backupName}: ${errorMessage(err)}`, { cause: err });
    }
    const knownKinds = new Map(discovered.map((r) => [r.groupResource, r.kind]));
    const limits = { ...deps.readLimits, ...(deps.maxItemBytes === undefined ? {} : { maxEntryBytes: deps.maxItemBytes }) };
    const contents = await spillArchive(tarball, spill, {
      knownKinds,
      pick,
      keepEntries: false,
      // An item over the cap fails alone (oversized.ts); the archive's other checks still refuse it whole.
      oversized: 'report',
      limits,
      ...(check === undefined ? {} : {
        onEntry: (path: string, sha256: string) => {
          if (isCheckedPath(path)) paths.add(path);
          // Returned: the check reads the manifest as the tarball is read, and the reader waits for it.
          return check.entry(path, sha256);
        },
      }),
    });
    const problems = (await check?.finish(contents.tarball)) ?? [];
    if (problems.length > 0) {
      throw new RestoreRefusedError('manifest-mismatch', `the tarball does not match the manifest written at backup time: ${problems.join('; ')}`);
    }
    // The tarball is the manifest's, entry for entry; the manifest must also agree with the resource
    // list and the completeness record, as `stowage backup verify` checks (a swapped tarball with a
    // manifest forged to match it is caught only here).
    if (check !== undefined) await checkRecords(deps.source, backupName, paths);
    const alt = contents.alternateVersions.length > 0 ? ` (and ${contents.alternateVersions.length} copies at other API versions)` : '';
    const over = contents.oversized[0];
    const n = contents.oversized.length;
    const big = over === undefined ? '' : `, ${n} ${n === 1 ? 'entry' : 'entries'} over the ${over.cap}-byte per-item cap skipped`;
    deps.log.info(`read the backup archive: format ${contents.formatVersion}, ${contents.items.length} items${alt}${big}, ${contents.tarball.bytes} bytes`);
    return { items: contents.items, alternates: contents.alternateVersions, oversized: contents.oversized };
  } finally {
    await check?.close?.();
  }
}

/**
 * Refuses the restore unless the manifest, the resource list and the completeness record describe
 * the same items (persistence/verify.ts, the check `backup verify` makes). A source that cannot
 * read the records (a test's) is not asked; one that can must have the resource list.
 */
async function checkRecords(source: RestoreSource, backupName: string, manifestPaths: PathDigest): Promise<void> {
  if (source.getResourceList === undefined) return;
  const unreadable = (what: string) => (err: unknown): never => {
    throw new RestoreRefusedError('records-unreadable', `the ${what} of backup ${backupName} cannot be read, so the backup cannot be checked and is not restored: ${errorMessage(err)}`);
  };
  const list = await source.getResourceList(backupName).catch(unreadable('resource list'));
  if (list === undefined) {
    throw new RestoreRefusedError('records-missing', `backup ${backupName} has no resource list in object storage, though Stowage writes one with every finished backup: it was deleted, so the backup cannot be checked and is not restored`);
  }
  const results = await source.getResults?.(backupName).catch(unreadable('results'));
  // The tarball, which is the manifest's entry for entry, was read as a digest of its paths; only when
  // that cannot settle it is the manifest read again, for checkAgreement's findings.
  const problems = agreementByDigest(manifestPaths, list, results?.resources)
    ?? checkAgreement({ entries: await manifestEntries(source, backupName).catch(unreadable('manifest')) }, list, results?.resources);
  if (problems.length > 0) {
    throw new RestoreRefusedError('records-disagree', `the backup's manifest, resource list and completeness record disagree (as \`stowage backup verify\` reports), so it is not restored: ${problems.join('; ')}`);
  }
}

/** The manifest's entries, read again (checkRecords). */
async function manifestEntries(source: RestoreSource, backupName: string): Promise<Record<string, string>> {
  if (source.getManifestStream === undefined) {
    const manifest = await source.getManifest?.(backupName);
    if (manifest === undefined) throw new Error('it is gone');
    return manifest.entries;
  }
  const bytes = await source.getManifestStream(backupName);
  if (bytes === undefined) throw new Error('it is gone');
  const stream = new ManifestStream(bytes);
  const entries = Object.create(null) as Record<string, string>;
  try {
    for (let e = await stream.next(); e !== undefined; e = await stream.next()) entries[e[0]] = e[1];
  } finally {
    await stream.close();
  }
  return entries;
}

/** The manifest's check, or undefined when the backup has no manifest (a Velero backup). */
async function manifestCheckOf(source: RestoreSource, backupName: string): Promise<AsyncManifestCheck | undefined> {
  const what = `the manifest of backup ${backupName}`;
  const failed = (err: unknown): never => {
    throw new Error(`cannot read ${what}: ${errorMessage(err)}`, { cause: err });
  };
  if (source.getManifestStream !== undefined) {
    const bytes = await source.getManifestStream(backupName).catch(failed);
    return bytes === undefined ? undefined : streamingManifestCheck(new ManifestStream(bytes), what);
  }
  const manifest = await source.getManifest?.(backupName).catch(failed);
  return manifest === undefined ? undefined : manifestCheck(manifest);
}

/** One sentence per resource and version change of the plan: the results say whenever a version changed. */
export function versionChangeMessages(plan: Pick<RestorePlan, 'items'>): string[] {
  const counts = new Map<string, { gr: string; change: NonNullable<PlannedItem['versionChange']>; n: number }>();
  for (const p of plan.items.values()) {
    const c = p.versionChange;
    if (c === undefined) continue;
    const k = [p.groupResource, c.stored, c.used, String(c.copy), String(c.storedServed)].join('\u0000');
    const have = counts.get(k);
    if (have !== undefined) have.n++;
    else counts.set(k, { gr: p.groupResource, change: c, n: 1 });
  }
  return [...counts.values()].map(({ gr, change: c, n }) => {
    const items = `${n} ${gr} item${n === 1 ? '' : 's'}`;
    if (c.copy && c.storedServed) return `${items} backed up at ${c.stored} restored from the backup's copies at ${c.used}, the version this cluster prefers`;
    if (c.copy) return `${items} backed up at ${c.stored}, which this cluster does not serve, restored from the backup's copies at ${c.used}`;
    return `${items} backed up at ${c.stored}, which this cluster does not serve, and the backup holds no copy at a version it serves: ` +
      `sent as ${c.used} with only the apiVersion changed, which the apiserver accepts only where both versions share a schema`;
  });
}

function describeFatal(err: unknown): string {
  if (isArchiveError(err)) return `the backup archive was refused (${err.reason}): ${err.message}`;
  if (err instanceof RestoreRefusedError) return `the restore was refused (${err.reason}): ${err.message}`;
  return sanitizeMessage(errorMessage(err));
}
