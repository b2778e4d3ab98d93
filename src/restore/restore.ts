// runRestore: reads a backup's tarball defensively, plans the restore (filters, mapping, order),
// then creates the items tier by tier, in parallel within a tier, through the built-in and plugin
// restore item actions. Every reason to refuse the archive is found before anything is created.
import type winston from 'winston';
import { LABEL_RESTORE_NAME, labelValue, type RestoreProgress, type RestoreSummary } from '../apis/v1/index.js';
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
  type ReadLimits,
  type SpillFile,
} from '../archive/index.js';
import {
  CORE,
  CUSTOM_RESOURCE_DEFINITIONS,
  KubeError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  isTransient,
  type ApiResource,
  type DynamicClient,
  type KubeObject as LooseObject,
} from '../kube/index.js';
import { addResult, countResults, resourceListOf, type ResourceList, type RunResults } from '../persistence/results.js';
import type { KubeObject } from '../plugin/api/index.js';
import { backoff, sleep } from '../util/backoff.js';
import { systemClock, type Clock } from '../util/clock.js';
import { mapLimitSettled } from '../util/concurrency.js';
import { createRedactor, errorMessage, sanitizeMessage } from '../util/errors.js';
import { actionMatcher, resolveRestoreItemActions, type ActionMatcher, type ResolvedRestoreItemAction } from './actions/selector.js';
import { BUILTIN_RESTORE_ITEM_ACTIONS } from './actions/index.js';
import { patchToMatch } from './compare.js';
import { hasSelector, maintainedBy } from './maintained.js';
import { cloneObject, displayName, isRecord, type JsonObject } from './objects.js';
import { ownedSkipReason, ownerFate, type OwnerFate } from './ownership.js';
import { bareNamespace, buildPlan, itemFacts, itemKey, RestoreRefusedError, type ArchivedItem, type PlannedItem, type RestorePlan } from './plan.js';
import { targetNamespace, type ItemAction, type ItemOutcome, type RestoreRequest } from './request.js';
import { prepareItem } from './transform.js';

/** Where the backup's tarball (and its manifest, when there is one) come from. A BackupStore is one. */
export interface RestoreSource {
  getTarball(backupName: string): Promise<AsyncIterable<Uint8Array>>;
  /** The manifest written at backup time; undefined when the backup has none (a Velero backup). */
  getManifest?(backupName: string): Promise<BackupManifest | undefined>;
  /** The same manifest as inflated JSON bytes, read as the tarball is: preferred over getManifest (see ManifestStream). */
  getManifestStream?(backupName: string): Promise<AsyncIterable<Uint8Array> | undefined>;
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
  signal?: AbortSignal;
  /** Discovery results, when the caller already has them. */
  discovered?: readonly ApiResource[];
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
}

export const DEFAULT_RESTORE_CONCURRENCY = 16;
const DEFAULT_WAIT_TIMEOUT_MS = 60_000;
const POLL_MS = 250;

/** Restores `request.backup` as `request.restore` asks. Never throws for a failed restore: the result says why. */
export async function runRestore(deps: RestoreDeps, req: RestoreRequest): Promise<RestoreResult> {
  const clock = deps.clock ?? systemClock;
  const started = clock.now();
  const t0 = performance.now();
  const concurrency = deps.concurrency ?? DEFAULT_RESTORE_CONCURRENCY;
  const log = deps.log;
  const stats: RestoreStats = { durationMs: 0, itemsPerSecond: 0, concurrency, maxInFlight: 0, tiers: 0 };
  const finish = (failureReason?: string): RestoreResult => {
    const durationMs = performance.now() - t0;
    stats.durationMs = Math.round(durationMs);
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
      startTimestamp: started.toISOString(),
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
  };

  const backupName = req.backup.metadata.name;
  log.info(`restoring backup ${backupName}${req.dryRun ? ' as a dry run: nothing will be written to the cluster' : ''}`, {
    existingResourcePolicy: req.existingResourcePolicy,
    concurrency,
  });

  let spill: SpillFile | undefined;
  try {
    let discovered: readonly ApiResource[];
    let plan: RestorePlan;
    let matchers: ActionMatcher[];
    try {
      discovered =
        deps.discovered ??
        (await deps.client.discover({ onGroupError: (gv, err) => log.warn(`discovery of ${gv} failed; its resources are treated as not served: ${err.message}`) }));
      spill = await createSpillFile(deps.spillDir);
      const withLabels = req.selectors.length > 0;
      const { items, alternates } = await readBackup(deps, spill, backupName, discovered, (obj, id) => itemFacts(obj, id, withLabels));
      plan = buildPlan(items, req, discovered, alternates);
      const builtins = await resolveRestoreItemActions(BUILTIN_RESTORE_ITEM_ACTIONS);
      matchers = [...builtins, ...(deps.actions ?? [])].map(actionMatcher);
    } catch (err) {
      return finish(describeFatal(err));
    }
    for (const [gr, n] of plan.neverRestored) log.info(`${n.count} ${gr} left out: never restored (${n.reason})`);
    for (const message of versionChangeMessages(plan)) {
      addResult(req.results, 'warnings', undefined, message);
      log.warn(message);
    }
    req.progress.totalItems = plan.items.size;
    deps.onProgress?.({ ...req.progress });
    log.info(`plan: ${plan.items.size} items in ${plan.tiers.length} tiers`, { order: plan.tiers.map((t) => t.tier.label) });

    const from = spill;
    const load = (p: PlannedItem): Promise<KubeObject> => (p.archived === undefined ? Promise.resolve(bareNamespace(p.sourceName)) : loadSpilled(from, p.archived));
    const exec = newExecutor(deps, req, plan, matchers, load, new Set(discovered.map((r) => r.groupResource)), stats);
    const tExec = performance.now();
    for (const { tier, items } of plan.tiers) {
      if (items.length === 0) continue;
      stats.tiers++;
      log.info(`restoring ${items.length} items of ${tier.groupResources.join(', ')}`);
      try {
        await mapLimitSettled(items, concurrency, (p) => exec.restoreItem(p), deps.signal === undefined ? {} : { signal: deps.signal });
      } catch (err) {
        return finish(`the restore was stopped: ${errorMessage(err)}`);
      }
    }
    const execSeconds = (performance.now() - tExec) / 1000;
    stats.itemsPerSecond = execSeconds > 0 ? Math.round((req.progress.itemsRestored / execSeconds) * 10) / 10 : 0;
    return finish();
  } finally {
    await spill?.close().catch((err: unknown) => log.warn(`could not remove the restore's spill file: ${errorMessage(err)}`));
  }
}

/**
 * Reads the tarball whole and checks it against the manifest, spilling the items to `spill`. Returns
 * the index of the items; the file entries and the manifest are not kept past this point.
 */
async function readBackup(
  deps: RestoreDeps, spill: SpillFile, backupName: string, discovered: readonly ApiResource[], pick: (obj: ArchiveObject, id: ItemIdentity) => ArchivedItem['picked'],
): Promise<{ items: ArchivedItem[]; alternates: ArchivedItem[] }> {
  // Checked entry by entry while reading: neither a table of the tarball's entries nor the whole manifest is held.
  const check = await manifestCheckOf(deps.source, backupName);
  try {
    let tarball: AsyncIterable<Uint8Array>;
    try {
      tarball = await deps.source.getTarball(backupName);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'NotFound') throw new Error(`the tarball of backup ${backupName} is not in object storage`, { cause: err });
      throw new Error(`cannot read the tarball of backup ${backupName}: ${errorMessage(err)}`, { cause: err });
    }
    const knownKinds = new Map(discovered.map((r) => [r.groupResource, r.kind]));
    const contents = await spillArchive(tarball, spill, {
      knownKinds,
      pick,
      keepEntries: false,
      ...(check === undefined ? {} : { onEntry: (path: string, sha256: string) => check.entry(path, sha256) }),
      ...(deps.readLimits === undefined ? {} : { limits: deps.readLimits }),
    });
    const problems = (await check?.finish(contents.tarball)) ?? [];
    if (problems.length > 0) {
      throw new RestoreRefusedError('manifest-mismatch', `the tarball does not match the manifest written at backup time: ${problems.join('; ')}`);
    }
    const alt = contents.alternateVersions.length > 0 ? ` (and ${contents.alternateVersions.length} copies at other API versions)` : '';
    deps.log.info(`read the backup archive: format ${contents.formatVersion}, ${contents.items.length} items${alt}, ${contents.tarball.bytes} bytes`);
    return { items: contents.items, alternates: contents.alternateVersions };
  } finally {
    await check?.close?.();
  }
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

interface Target {
  namespace: string;
  name: string;
}

/** An item's desired state: what is created, or what an existing object is compared with. */
interface Desired {
  item: KubeObject;
  keepStatus: boolean;
  /** The object as backed up. */
  original: KubeObject;
}

interface Executor {
  restoreItem(p: PlannedItem): Promise<ItemOutcome>;
}

function newExecutor(
  deps: RestoreDeps,
  req: RestoreRequest,
  plan: RestorePlan,
  matchers: readonly ActionMatcher[],
  /** Reads an item's backed-up object (from the spill file), only when it is about to be restored. */
  load: (p: PlannedItem) => Promise<KubeObject>,
  servedNow: ReadonlySet<string>,
  stats: RestoreStats,
): Executor {
  const { client, log } = deps;
  const waitTimeoutMs = deps.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
  const restoreName = req.restore.metadata.name;
  const restoreLabel = labelValue(restoreName);
  const served = new Map<string, Promise<{ pending: boolean }>>();
  // item key -> the item key it is waiting for (its namespace, an additional item): to refuse cycles.
  const waitingOn = new Map<string, string>();
  // What owned items need to know of their owners, kept for owners only (most items own nothing):
  // which exist in the cluster (found by a create or a read), and which were left to their own
  // controller (a ReplicaSet whose Deployment is recreated), with that controller's fate.
  const ownerKeys = new Set<string>();
  for (const p of plan.items.values()) if (p.owner !== undefined) ownerKeys.add(p.owner.owner.key);
  const existsLive = new Set<string>();
  const leftToController = new Map<string, OwnerFate>();
  let inFlight = 0;

  const warn = (namespace: string, message: string): void => {
    addResult(req.results, 'warnings', namespace, message);
    log.warn(message);
  };

  const record = (p: PlannedItem, target: Target, action: ItemAction, reason: string, opts: { warn?: boolean; validated?: boolean } = {}): ItemOutcome => {
    // The plan's strings where they are equal: the target's come from the loaded object, one copy per item.
    const namespace = target.namespace === p.namespace ? p.namespace : target.namespace;
    const name = target.name === p.name ? p.name : target.name;
    const outcome: ItemOutcome = { groupResource: p.groupResource, namespace, name, action, reason };
    if (opts.validated !== undefined) outcome.validated = opts.validated;
    req.outcomes.push(outcome);
    req.summary[action]++;
    req.progress.itemsRestored++;
    req.progress.totalItems = plan.items.size;
    const what = `${p.groupResource} ${displayName(target.namespace, target.name)}`;
    const fields = { resource: p.groupResource, namespace: target.namespace, name: target.name, action };
    if (action === 'failed' && req.dryRun) {
      // Predicted: a real restore would fail here; the dry run itself did not.
      addResult(req.results, 'warnings', target.namespace, `${what}: would fail: ${reason}`);
      log.warn(`${what}: would fail: ${reason}`, fields);
    } else if (action === 'failed') {
      addResult(req.results, 'errors', target.namespace, `${what}: ${reason}`);
      log.error(`${what}: ${reason}`, fields);
    } else if (opts.warn === true) {
      addResult(req.results, 'warnings', target.namespace, `${what}: ${reason}`);
      log.warn(`${what}: ${reason}`, fields);
    } else {
      log.info(`${what}: ${reason}`, fields);
    }
    deps.onProgress?.({ ...req.progress });
    return outcome;
  };

  /** Error text for an item; a Secret's values (in any encoding) are scrubbed first. */
  const messageFor = (p: PlannedItem, original: KubeObject | undefined, err: unknown): string => {
    const text = sanitizeMessage(errorMessage(err));
    if (p.groupResource !== 'secrets' || original === undefined) return text;
    const values: string[] = [];
    for (const field of ['data', 'stringData']) {
      const d = original[field];
      if (!isRecord(d)) continue;
      for (const v of Object.values(d)) {
        if (typeof v !== 'string' || v === '') continue;
        values.push(v);
        if (field === 'data') values.push(Buffer.from(v, 'base64').toString('utf8'));
      }
    }
    return createRedactor(values.filter((v) => v.length >= 4))(text);
  };

  const restoreItem = (p: PlannedItem): Promise<ItemOutcome> => {
    const have = p.restored;
    if (have !== undefined) return have instanceof Promise ? have : Promise.resolve(have);
    const run = (async () => {
      const at = { namespace: p.namespace, name: p.name };
      if (p.skip !== undefined) return record(p, at, 'skipped', p.skip);
      if (p.owner !== undefined) {
        // Decided on the owner's outcome, not on the plan: its controller must really be in the cluster.
        const fate = await fateOf(p, p.owner.owner);
        const reason = ownedSkipReason(p.owner.label, fate, req.dryRun);
        if (reason !== undefined) {
          if (ownerKeys.has(p.key)) leftToController.set(p.key, fate);
          return record(p, at, 'skipped', reason);
        }
      }
      inFlight++;
      stats.maxInFlight = Math.max(stats.maxInFlight, inFlight);
      // Held only while this item is restored: memory follows the concurrency, not the backup's size.
      let original: KubeObject | undefined;
      try {
        original = await load(p);
        return await restoreOne(p, original);
      } catch (err) {
        return record(p, at, 'failed', messageFor(p, original, err));
      } finally {
        inFlight--;
      }
    })();
    // Kept on the item rather than in a table by key, and once settled as the outcome alone, which
    // the outcomes hold anyway: a table of 50,000 promises was ~4 MB.
    p.restored = run;
    void run.then((o) => {
      p.restored = o;
    }, () => undefined);
    return run;
  };

  /**
   * Restores `to` before `from` goes on, unless `to` is (transitively) waiting for `from`: then
   * undefined, as waiting would deadlock (actions naming each other as additional items).
   */
  async function restoreFirst(from: PlannedItem, to: PlannedItem): Promise<ItemOutcome | undefined> {
    for (let k: string | undefined = to.key; k !== undefined; k = waitingOn.get(k)) if (k === from.key) return undefined;
    waitingOn.set(from.key, to.key);
    try {
      return await restoreItem(to);
    } finally {
      waitingOn.delete(from.key);
    }
  }

  /** What became of `owner`, restored first (see ownership.ts). */
  async function fateOf(p: PlannedItem, owner: PlannedItem): Promise<OwnerFate> {
    const out = await restoreFirst(p, owner);
    return ownerFate(out, leftToController.get(owner.key), existsLive.has(owner.key));
  }

  /** Whether the Service an Endpoints item belongs to has a selector: the restored one, or else the live one. */
  async function serviceSelects(p: PlannedItem): Promise<boolean> {
    const svc = plan.items.get(itemKey('services', p.sourceNamespace, p.sourceName));
    if (svc?.archived !== undefined && svc.skip === undefined) return hasSelector(await load(svc));
    try {
      return hasSelector(await client.get<KubeObject>(CORE.services, p.namespace, p.name));
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  async function restoreOne(p: PlannedItem, original: KubeObject): Promise<ItemOutcome> {
    const at = { namespace: p.namespace, name: p.name };
    const maintained = await maintainedBy(p.groupResource, original, p.namespace, () => serviceSelects(p));
    if (maintained !== undefined) return record(p, at, 'skipped', maintained);
    const keepStatus = req.restoreStatus?.shouldInclude(p.resource) ?? false;
    let item = prepareItem(p.groupResource, original, {
      keepStatus,
      mapNamespace: (ns) => targetNamespace(req, ns),
      backupName: req.backup.metadata.name,
      restoreName,
    });
    // No copy at a version the cluster serves: the stored object is offered at the one it prefers.
    if (p.versionChange !== undefined && !p.versionChange.copy) item = { ...item, apiVersion: p.versionChange.used };

    for (const m of matchers) {
      if (!m.applies({ resource: p.resource, namespace: p.namespace, labels: item.metadata.labels })) continue;
      let out: Awaited<ReturnType<typeof m.action.execute>>;
      try {
        // Copies: an in-process action must not change the backed-up object or the Restore.
        out = await m.action.execute({ item, itemFromBackup: cloneObject(original), restore: cloneObject(req.restore) });
      } catch (err) {
        return record(p, at, 'failed', `restore item action ${m.name} failed: ${messageFor(p, original, err)}`);
      }
      if (out.skipRestore) return record(p, at, 'skipped', `skipped by restore item action ${m.name}`);
      for (const extra of out.additionalItems) {
        const ap = plan.planAdditional(extra.groupResource, extra.namespace, extra.name);
        const what = `${extra.groupResource} ${displayName(extra.namespace, extra.name)}`;
        if (ap === undefined) {
          warn(p.namespace, `${p.groupResource} ${displayName(p.namespace, p.name)}: restore item action ${m.name} asked for ${what} first, which the backup does not hold or which is never restored`);
          continue;
        }
        if (ap.key !== p.key) await restoreFirst(p, ap);
      }
      item = out.item;
    }
    if (!isRecord(item.metadata) || typeof item.metadata.name !== 'string' || item.metadata.name === '') {
      return record(p, at, 'failed', 'a restore item action returned an object without metadata.name');
    }
    const target = { namespace: p.ref.namespaced === false ? '' : (item.metadata.namespace ?? p.namespace), name: item.metadata.name };

    // In a dry run, what does not exist yet: the item's namespace or CRD would be created first.
    const pending: string[] = [];
    if (target.namespace !== '') {
      const nsItem = plan.namespaces.get(target.namespace);
      if (nsItem !== undefined && nsItem.key !== p.key) {
        const ns = await restoreFirst(p, nsItem);
        if (ns?.action === 'failed') return record(p, target, 'failed', `its namespace ${target.namespace} could not be restored: ${ns.reason}`);
        if (req.dryRun && ns?.action === 'created') pending.push(`namespace ${target.namespace}`);
      }
    }
    const servedState = await ensureServed(p);
    if (typeof servedState === 'string') return record(p, target, 'failed', servedState);
    if (servedState.pending) pending.push(`CustomResourceDefinition ${plan.crds.get(p.groupResource)?.name ?? p.groupResource}`);

    const desired: Desired = { item, keepStatus, original };
    if (req.dryRun) return predict(p, target, desired, pending);
    return write(p, target, desired, 0);
  }

  /**
   * Makes sure the cluster serves the item's resource: a CRD restored in this run is restored first,
   * then waited for until Established and served. Returns the failure as a string. In a dry run a
   * CRD that would be created is "pending": its custom resources cannot be validated.
   */
  function ensureServed(p: PlannedItem): Promise<{ pending: boolean } | string> {
    const crd = plan.crds.get(p.groupResource);
    if (crd === undefined) {
      if (!servedNow.has(p.groupResource)) {
        return Promise.resolve(`${p.groupResource} is not served by this cluster, and the restore holds no CustomResourceDefinition for it`);
      }
      return Promise.resolve({ pending: false });
    }
    let s = served.get(p.groupResource);
    if (s === undefined) {
      s = (async () => {
        const out = await restoreItem(crd);
        if (out.action === 'failed') throw new Error(`its CustomResourceDefinition ${crd.name} could not be restored: ${out.reason}`);
        if (req.dryRun) return { pending: out.action === 'created' };
        await waitEstablished(crd.name);
        await waitServed(p);
        return { pending: false };
      })();
      served.set(p.groupResource, s);
    }
    return s.catch((err: unknown) => errorMessage(err));
  }

  async function waitEstablished(name: string): Promise<void> {
    const deadline = Date.now() + waitTimeoutMs;
    for (;;) {
      const crd = await client.get<{ status?: { conditions?: { type?: string; status?: string; message?: string }[] } }>(CUSTOM_RESOURCE_DEFINITIONS, undefined, name);
      const conds = crd.status?.conditions ?? [];
      if (conds.some((c) => c.type === 'Established' && c.status === 'True')) return;
      const rejected = conds.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
      if (rejected !== undefined) throw new Error(`CustomResourceDefinition ${name} was not accepted: ${rejected.message ?? 'its names conflict'}`);
      if (Date.now() > deadline) throw new Error(`CustomResourceDefinition ${name} is not Established after ${Math.round(waitTimeoutMs / 1000)} s`);
      await sleep(POLL_MS, deps.signal);
    }
  }

  /** After Established, the apiserver may take a moment to serve the new resource; discovery says when. */
  async function waitServed(p: PlannedItem): Promise<void> {
    const deadline = Date.now() + waitTimeoutMs;
    const path = `/apis/${p.ref.group}/${p.ref.version}`;
    for (;;) {
      try {
        const list = await client.request<{ resources?: { name?: string }[] }>({ method: 'GET', path, target: { verb: 'discover', resource: path } });
        if ((list.resources ?? []).some((r) => r.name === p.ref.resource)) return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (Date.now() > deadline) throw new Error(`${p.groupResource} version ${p.ref.version} is not served ${Math.round(waitTimeoutMs / 1000)} s after its CRD was Established`);
      await sleep(POLL_MS, deps.signal);
    }
  }

  /**
   * Creates with a few retries on transient failures (no response, 5xx); the client already retries
   * 429. `retried` is set once a retry happened: the first attempt may have succeeded unseen.
   */
  async function createRetrying(p: PlannedItem, ns: string, item: KubeObject, dryRun: boolean, state: { retried: boolean }): Promise<LooseObject> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await client.create(p.ref, ns === '' ? undefined : ns, item, dryRun ? { dryRun: true } : {});
      } catch (err) {
        if (!isTransient(err) || attempt >= 2) throw err;
        state.retried = true;
        await sleep(backoff(attempt, { baseMs: 200, maxMs: 2000 }), deps.signal);
      }
    }
  }

  const getLive = (p: PlannedItem, t: Target): Promise<LooseObject> => client.get(p.ref, t.namespace === '' ? undefined : t.namespace, t.name);

  async function write(p: PlannedItem, t: Target, d: Desired, attempt: number): Promise<ItemOutcome> {
    const state = { retried: false };
    try {
      const created = await createRetrying(p, t.namespace, d.item, false, state);
      const statusProblem = await restoreStatus(p, t, d, created);
      return statusProblem === undefined ? record(p, t, 'created', 'created') : record(p, t, 'created', `created, but ${statusProblem}`, { warn: true });
    } catch (err) {
      if (!isAlreadyExists(err)) {
        // Admission (a quota, a webhook) may refuse the create of an object that exists anyway;
        // then it is an existing object like any other, as a dry run (which reads first) sees it.
        const live = await getLive(p, t).catch(() => undefined);
        if (live === undefined) return record(p, t, 'failed', messageFor(p, d.original, err));
        return existing(p, t, d, live, false);
      }
    }
    const live = await getLive(p, t);
    if (p.groupResource === 'namespaces' && live.metadata?.deletionTimestamp !== undefined && attempt === 0) {
      log.info(`namespace ${t.name} is being deleted; waiting until it is gone before restoring it`);
      await waitGone(p, t);
      return write(p, t, d, attempt + 1);
    }
    // A retried create whose first attempt went through unseen: the object carries this restore's label.
    if (state.retried && live.metadata?.labels?.[LABEL_RESTORE_NAME] === restoreLabel) return record(p, t, 'created', 'created');
    return existing(p, t, d, live, false);
  }

  async function waitGone(p: PlannedItem, t: Target): Promise<void> {
    const deadline = Date.now() + waitTimeoutMs;
    for (;;) {
      try {
        await getLive(p, t);
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      if (Date.now() > deadline) throw new Error(`namespace ${t.name} is still being deleted after ${Math.round(waitTimeoutMs / 1000)} s`);
      await sleep(500, deps.signal);
    }
  }

  /** An object with the item's name exists: skip it, or (policy update) patch it to match the backup. */
  async function existing(p: PlannedItem, t: Target, d: Desired, live0: LooseObject, dryRun: boolean): Promise<ItemOutcome> {
    if (ownerKeys.has(p.key)) existsLive.add(p.key);
    let live = live0;
    for (let attempt = 0; ; attempt++) {
      const patch = patchToMatch(live as KubeObject, d.item, d.original);
      if (patch === undefined) return record(p, t, 'skipped', 'already exists and matches the backup', dryRun ? { validated: true } : {});
      if (req.existingResourcePolicy !== 'update') {
        return record(p, t, 'skipped', 'already exists and differs from the backup; left unchanged (existingResourcePolicy is none)', {
          warn: true,
          ...(dryRun ? { validated: true } : {}),
        });
      }
      const md = (patch.metadata ??= {}) as JsonObject;
      md.resourceVersion = live.metadata?.resourceVersion;
      let updated: LooseObject;
      try {
        updated = await client.patch(p.ref, t.namespace === '' ? undefined : t.namespace, t.name, patch, 'merge', dryRun ? { dryRun: true } : {});
      } catch (err) {
        if (!isConflict(err) || attempt >= 3) return record(p, t, 'failed', `could not update the existing object: ${messageFor(p, d.original, err)}`);
        live = await getLive(p, t);
        continue;
      }
      if (dryRun) return record(p, t, 'updated', 'exists and would be updated to match the backup', { validated: true });
      const statusProblem = await restoreStatus(p, t, d, updated);
      if (statusProblem !== undefined) return record(p, t, 'updated', `existed and was updated to match the backup, but ${statusProblem}`, { warn: true });
      return record(p, t, 'updated', 'existed and was updated to match the backup');
    }
  }

  /**
   * restoreStatus: the status subresource is written after the create or update (without a status
   * subresource, the write kept the status already). Returns what went wrong, for a warning.
   */
  async function restoreStatus(p: PlannedItem, t: Target, d: Desired, written: LooseObject): Promise<string | undefined> {
    if (!d.keepStatus || d.item.status === undefined) return undefined;
    try {
      await client.patchStatus(p.ref, t.namespace === '' ? undefined : t.namespace, t.name, {
        metadata: { resourceVersion: written.metadata?.resourceVersion },
        status: d.item.status,
      });
    } catch (err) {
      if (!(err instanceof KubeError && err.status === 404)) return `its status could not be restored: ${messageFor(p, d.original, err)}`;
    }
    return undefined;
  }

  /** Dry run: what write() would do, with reads and server-side dry runs only. */
  async function predict(p: PlannedItem, t: Target, d: Desired, pending: readonly string[]): Promise<ItemOutcome> {
    if (pending.length > 0) {
      return record(p, t, 'created', `would be created; not validated by the API server, as ${pending.join(' and ')} would be created first`, { validated: false });
    }
    let live: LooseObject | undefined;
    try {
      live = await getLive(p, t);
    } catch (err) {
      if (!isNotFound(err)) return record(p, t, 'failed', messageFor(p, d.original, err));
    }
    if (live !== undefined && p.groupResource === 'namespaces' && live.metadata?.deletionTimestamp !== undefined) {
      return record(p, t, 'created', 'would be created once the namespace being deleted is gone; not validated by the API server', { validated: false });
    }
    if (live === undefined) {
      try {
        await createRetrying(p, t.namespace, d.item, true, { retried: false });
        return record(p, t, 'created', 'would be created', { validated: true });
      } catch (err) {
        if (!isAlreadyExists(err)) return record(p, t, 'failed', messageFor(p, d.original, err), { validated: true });
        live = await getLive(p, t);
      }
    }
    return existing(p, t, d, live, true);
  }

  return { restoreItem };
}
