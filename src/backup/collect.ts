// Item collection: paginated LISTs of each selected resource (per namespace, or cluster-wide),
// item actions, the tarball write, and the additional items actions name.
import type winston from 'winston';
import type { TarballWriter } from '../archive/index.js';
import { isApiUnreachable, isNotFound, type ApiResource, type DynamicClient, type KubeObject as ListedObject } from '../kube/index.js';
import { executeItems, type BackupItemActionBatchResult, type KubeObject, type ResourceIdentifier } from '../plugin/api/index.js';
import { sleep } from '../util/backoff.js';
import { errorMessage } from '../util/errors.js';
import { anyLabelSelectorMatches, labelSelectorMatches } from '../selection/labels.js';
import { kindName, type NamedBackupItemAction, type ResolvedBackupItemAction } from './actions/index.js';
import { hooksUnreadable, podHooks, runPodHooks, type HookContext } from './hooks.js';
import { isBackupable } from './resources.js';
import type { Access } from './rights.js';
import type { BackupScope } from './scope.js';
import { GR_VOLUME_SNAPSHOT_CONTENTS, GR_VOLUME_SNAPSHOTS, LABEL_SNAPSHOT_BACKUP_UID, type SnapshotOutcome, type SnapshotTaker } from '../volumes/index.js';
import { mapLimit } from '../util/concurrency.js';
import { itemKey, LABEL_EXCLUDE_FROM_BACKUP, listsInFull, otherVersionsOf, recordOf, recordProblem, recordResourceError, type BackupProgress, type BackupRequest, type ItemRef, writtenNamesOf } from './request.js';

export interface CollectContext {
  req: BackupRequest;
  client: DynamicClient;
  writer: TarballWriter;
  actions: readonly ResolvedBackupItemAction[];
  /** Every discovered resource by group-resource, to resolve additional items. */
  byGroupResource: ReadonlyMap<string, ApiResource>;
  log: winston.Logger;
  pageSize: number;
  signal: AbortSignal;
  onProgress?: ((p: BackupProgress) => void) | undefined;
  /** Trust mode requester: what the requester may read beyond the LISTs the scope allowed. */
  rights?: DependencyRights;
  /** Backup hooks (hooks.ts): pods with any are backed up one by one, inside their bracket (backupBracketed). */
  hooks?: HookContext | undefined;
  /** Takes the CSI snapshot of each bound claim as it is backed up; absent with snapshotVolumes: false. */
  volumes?: SnapshotTaker;
}

/** Claims of one page snapshotted at once: each waits on its own watch, so a page of claims is not serial. */
const SNAPSHOTS_AT_ONCE = 8;

/** The requester's rights as the collection needs them (from scope.ts). */
export interface DependencyRights {
  who: string;
  /** groupResource -> where its LISTs were allowed. */
  access: ReadonlyMap<string, Access>;
  /** Whether the requester may get the item: every one in its namespace (or cluster-wide), else this one by name. Cached. */
  mayGet(res: ApiResource, namespace: string, name: string): Promise<boolean>;
}

export function dependencyRights(scope: Pick<BackupScope, 'who' | 'access' | 'reviewer'>): DependencyRights {
  return {
    who: scope.who,
    access: scope.access,
    async mayGet(res, namespace, name) {
      const a = { verb: 'get', group: res.group, resource: res.resource, namespace };
      return (await scope.reviewer.review(a)).allowed || (await scope.reviewer.review({ ...a, name })).allowed;
    },
  };
}

/** The run cannot go on (the tarball stream failed, or the run was stopped). */
export class FatalBackupError extends Error {
  override readonly name = 'FatalBackupError';
}

/**
 * Why an aborted run ended, worded once for every place that notices: "stopped", not "cancelled",
 * since a server shutdown ends the run Failed and only spec.cancel ends it Canceled (the reason says which).
 */
export function stoppedMessage(signal: AbortSignal): string {
  return `the backup was stopped: ${errorMessage(signal.reason)}`;
}

/** One LIST to run: a resource, in one namespace or all of them, with one label selector. */
/**
 * Above this many namespaces named literally a backup lists each resource once, cluster-wide, and
 * filters locally (inNamespaceScope): one paged LIST instead of one per namespace, which for 1,000
 * names (the cap of includedNamespaces) and 60 resources would be 60,000 calls at the client's QPS.
 * Below it the per-namespace LISTs read only what is taken, which wins when the names are a few
 * of many namespaces.
 */
export const MAX_PER_NAMESPACE_LISTS = 32;

export interface ListUnit {
  res: ApiResource;
  /** undefined: every namespace (filtered client-side), or a cluster-scoped resource. */
  namespace: string | undefined;
  selector: string;
}

export function describeItem(ref: ItemRef): string {
  return ref.namespace === '' ? `${ref.groupResource} "${ref.name}"` : `${ref.groupResource} "${ref.namespace}/${ref.name}"`;
}

/** How long a LIST that answered 404 for a resource discovery still lists waits before it is tried again. */
const NOT_FOUND_RETRY_MS = 1000;

/** Lists one unit page by page and backs up each item. Only fatal errors escape. */
export async function collectUnit(ctx: CollectContext, unit: ListUnit, retried = false): Promise<void> {
  const { req, res } = { req: ctx.req, res: unit.res };
  const where = unit.namespace === undefined ? '' : ` in namespace "${unit.namespace}"`;
  const ordered = req.orderedResources.get(res.groupResource) ?? req.orderedResources.get(res.resource);
  const record = recordOf(req, res);
  const held: ListedObject[] = [];
  let count = 0;
  let listedHere = 0;
  try {
    const pages = prefetched(ctx.client.listPages(res, {
      namespace: unit.namespace,
      labelSelector: unit.selector === '' ? undefined : unit.selector,
      pageSize: ctx.pageSize,
      signal: ctx.signal,
    }));
    for await (const page of pages) {
      const inScope = page.items.filter((o) => inListScope(ctx, res, o) && !madeByRun(ctx.req.backup.metadata.uid, res, o));
      record.listed += inScope.length;
      listedHere += inScope.length;
      const fresh = inScope.filter((o) => !alreadySeen(ctx, res, o));
      req.progress.totalItems += fresh.length;
      if (ordered !== undefined) {
        held.push(...fresh);
        continue;
      }
      count += await backupItems(ctx, res, fresh);
    }
    count += await backupItems(ctx, res, orderItems(held, ordered));
  } catch (err) {
    if (err instanceof FatalBackupError) throw err;
    if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
    // An outage that outlasted --api-outage-timeout ends the run: every other LIST would wait it out again.
    if (isApiUnreachable(err)) throw new FatalBackupError(errorMessage(err), { cause: err });
    if (isNotFound(err) && count === 0) {
      const served = await stillServed(ctx, res);
      // A CRD being created or deleted answers 404 while discovery still lists it: look again once, a
      // moment later (only when nothing was listed yet, so no item is counted twice).
      if (served === true && !retried && listedHere === 0) {
        await sleep(NOT_FOUND_RETRY_MS, ctx.signal).catch(() => undefined);
        if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
        return collectUnit(ctx, unit, true);
      }
      notFound(ctx, unit, err, served);
      return;
    }
    listFailed(ctx, unit, `listing ${res.groupResource}${where} at ${res.apiVersion} failed: ${errorMessage(err)}`);
    return;
  }
  if (count > 0) ctx.log.info(`backed up ${count} ${res.groupResource}${where}`, { resource: res.groupResource, namespace: unit.namespace, count });
}

/** Whether discovery (read now) still lists the resource; the error message when it cannot say. */
async function stillServed(ctx: CollectContext, res: ApiResource): Promise<boolean | string> {
  try {
    return await ctx.client.serves(res);
  } catch (e) {
    return errorMessage(e);
  }
}

/**
 * A LIST that answered 404 before any item: the resource may have gone since discovery (its CRD or
 * API service was removed). Only when a fresh look at its group version confirms that is it a
 * warning; a 404 for a resource still served leaves items out, which is an error.
 */
function notFound(ctx: CollectContext, unit: ListUnit, err: unknown, served: boolean | string): void {
  const res = unit.res;
  const where = unit.namespace === undefined ? '' : ` in namespace "${unit.namespace}"`;
  if (served === false) {
    const msg = recordProblem(ctx.req, 'warnings', unit.namespace ?? '', `${res.groupResource} is no longer served (removed after discovery); none backed up${where}`);
    ctx.log.warn(msg, { resource: res.groupResource, namespace: unit.namespace });
    return;
  }
  listFailed(ctx, unit, `listing ${res.groupResource}${where} at ${res.apiVersion} failed: ${errorMessage(err)}, ` +
    (served === true ? `though discovery still lists ${res.groupResource} at ${res.apiVersion}` : `and checking whether it is still served failed: ${served}`));
}

/** A LIST that left items out (403, 5xx, a conversion webhook down, ...): an error naming the resource and why. */
function listFailed(ctx: CollectContext, unit: ListUnit, why: string): void {
  recordResourceError(ctx.req, unit.res, why);
  ctx.log.error(recordProblem(ctx.req, 'errors', unit.namespace ?? '', why), { resource: unit.res.groupResource, namespace: unit.namespace });
}

/** Yields what `source` yields, fetching the next element while the caller works on the current one. */
export async function* prefetched<T>(source: AsyncIterator<T>): AsyncGenerator<T> {
  let next = source.next();
  try {
    for (;;) {
      const r = await next;
      if (r.done === true) return;
      next = source.next();
      // The caller may stop early; the request already in flight must not become an unhandled rejection.
      next.catch(() => undefined);
      yield r.value;
    }
  } finally {
    await source.return?.(undefined);
  }
}

/** The namespace filter (for cluster-wide lists) and the name filter. */
function inListScope(ctx: CollectContext, res: ApiResource, o: ListedObject): boolean {
  if (res.namespaced && !ctx.req.namespaces.shouldInclude(o.metadata?.namespace ?? '')) return false;
  return ctx.req.names.isEmpty || ctx.req.names.shouldInclude(res, o.metadata?.name ?? '');
}

/**
 * A VolumeSnapshot (or content) this very backup is making for a claim: the claim's snapshot step
 * stores it once it is ready (backupExtra). The VolumeSnapshots' own LIST, running beside that step,
 * would otherwise store it half made, and being first, keep the ready copy out.
 */
export function madeByRun(backupUid: string | undefined, res: Pick<ApiResource, 'groupResource'>, o: ListedObject): boolean {
  if (backupUid === undefined || backupUid === '') return false;
  if (res.groupResource !== GR_VOLUME_SNAPSHOTS && res.groupResource !== GR_VOLUME_SNAPSHOT_CONTENTS) return false;
  return o.metadata?.labels?.[LABEL_SNAPSHOT_BACKUP_UID] === backupUid;
}

/** Whether a LIST of the backup takes the cluster-scoped item anyway. */
function takenByList(req: BackupRequest, res: ApiResource, name: string): boolean {
  return listsInFull(req, res) && req.names.shouldInclude(res, name);
}

/** Items already handled (another selector, an action). */
function alreadySeen(ctx: CollectContext, res: ApiResource, o: ListedObject): boolean {
  const ns = res.namespaced ? (o.metadata?.namespace ?? '') : '';
  return ctx.req.seen.has({ groupResource: res.groupResource, namespace: ns, name: o.metadata?.name ?? '' });
}

/** Items named in orderedResources first, in that order; the rest after, in list order. */
export function orderItems(items: ListedObject[], ordered: readonly string[] | undefined): ListedObject[] {
  if (ordered === undefined || items.length === 0) return items;
  const rank = new Map(ordered.map((n, i) => [n, i]));
  const key = (o: ListedObject): string => (o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name ?? ''}` : (o.metadata?.name ?? ''));
  // Array.prototype.sort is stable: unnamed items keep their list order, after the named ones.
  return [...items].sort((a, b) => (rank.get(key(a)) ?? Infinity) - (rank.get(key(b)) ?? Infinity));
}

/** Backs up one item (see backupItems). Returns whether it was written. */
export async function backupItem(ctx: CollectContext, res: ApiResource, obj: ListedObject): Promise<boolean> {
  return (await backupItems(ctx, res, [obj])) === 1;
}

/** An item on its way through the actions. */
interface Pending {
  ref: ItemRef;
  /** Its resource-list entry (request.ts ItemTable). */
  entry: string;
  what: string;
  item: KubeObject;
  additional: AdditionalItem[];
  failed: boolean;
  /** Objects stored right after the item: a claim's VolumeSnapshot and its content. */
  extra?: { groupResource: string; object: ListedObject }[];
}

/** An item an action named for `parent` (the item as that action got it). */
interface AdditionalItem {
  from: string;
  id: ResourceIdentifier;
  parent: KubeObject;
  explain: NamedBackupItemAction['explain'];
}

/**
 * Backs up items of one resource, in order: item actions, the tarball entries, then the additional
 * items the actions named. Each action sees all of its items in one batch (one plugin round trip
 * per page rather than one per item); an item that fails an action is not backed up and goes to no
 * later action. Returns how many items were written. Item-level problems are logged and counted.
 */
export async function backupItems(ctx: CollectContext, res: ApiResource, objs: readonly ListedObject[]): Promise<number> {
  if (ctx.hooks === undefined || res.groupResource !== 'pods') return backupBatch(ctx, res, objs);
  // Pods with hooks go one by one, each inside its own bracket (so none stays frozen while others
  // run their hooks); the rest keep their batches. List order is kept.
  let written = 0;
  let batch: ListedObject[] = [];
  for (const o of objs) {
    const hooks = podHooks(ctx.hooks.plan, asPod(res, o));
    if ('pre' in hooks && hooks.pre.length === 0 && hooks.post.length === 0) {
      batch.push(o);
      continue;
    }
    written += await backupBatch(ctx, res, batch);
    batch = [];
    written += await backupBracketed(ctx, res, o, hooks);
  }
  return written + await backupBatch(ctx, res, batch);
}

/** The pod as the hooks see it (a listed item lacks apiVersion and kind). */
function asPod(res: ApiResource, o: ListedObject): KubeObject {
  return { ...o, apiVersion: o.apiVersion ?? res.apiVersion, kind: o.kind ?? res.kind, metadata: { ...o.metadata, name: o.metadata?.name ?? '' } };
}

/** A batch of items: every action over all of them, then their tarball entries, then their additional items. */
async function backupBatch(ctx: CollectContext, res: ApiResource, objs: readonly ListedObject[]): Promise<number> {
  if (objs.length === 0) return 0;
  const pending = objs.map((o) => admit(ctx, res, o)).filter((p): p is Pending => p !== undefined);
  for (const a of ctx.actions) {
    const mine = pending.filter((p) => !p.failed && a.matches(res, p.ref.namespace, p.item.metadata.labels));
    if (mine.length > 0) await runAction(ctx, a, mine);
  }
  // The snapshot is taken where the claim is taken: after the item actions, before the claim is
  // written; a pod's claims are its additional items, so this falls between the pod's hooks.
  if (ctx.volumes !== undefined && res.groupResource === 'persistentvolumeclaims') await snapshotClaims(ctx, ctx.volumes, pending.filter((p) => !p.failed));
  let written = 0;
  for (const p of pending) {
    if (p.failed) continue;
    await writeItem(ctx, res, p);
    written++;
  }
  for (const p of pending) {
    if (p.failed) continue;
    for (const x of p.extra ?? []) await backupExtra(ctx, x.groupResource, x.object, p.what);
    for (const add of p.additional) await backupAdditional(ctx, add, p.what);
  }
  return written;
}

/**
 * One pod with hooks, in Velero's order: its pre hooks; the item actions and the items they name
 * (its PersistentVolumeClaims and their volumes); its post hooks; then the pod's own entry, so a
 * post hook that fails with onError Fail leaves it out. Post hooks run once the pre hooks were
 * tried, even when one failed or the run was canceled meanwhile: what they thaw must not stay frozen.
 */
async function backupBracketed(ctx: CollectContext, res: ApiResource, obj: ListedObject, hooks: ReturnType<typeof podHooks>): Promise<number> {
  const h = ctx.hooks as HookContext;
  const p = admit(ctx, res, obj);
  if (p === undefined) return 0;
  if ('error' in hooks) {
    hooksUnreadable(ctx.req, ctx.log, p.item, hooks.error);
    return 0;
  }
  if (!(await runPodHooks(h, ctx.req, ctx.log, p.item, 'pre', hooks.pre, ctx.signal))) p.failed = true;
  try {
    if (!p.failed) {
      for (const a of ctx.actions) if (!p.failed && a.matches(res, p.ref.namespace, p.item.metadata.labels)) await runAction(ctx, a, [p]);
    }
    if (!p.failed) for (const add of p.additional) await backupAdditional(ctx, add, p.what);
    // Inside the bracket: whatever is taken of the pod's volumes (its claims, their volumes above,
    // and snapshots of their data) must be taken here, between its pre and its post hooks.
  } finally {
    if (!(await runPodHooks(h, ctx.req, ctx.log, p.item, 'post', hooks.post, undefined))) p.failed = true;
  }
  if (p.failed) return 0;
  await writeItem(ctx, res, p);
  return 1;
}

/** The item's tarball entry and its records. */
async function writeItem(ctx: CollectContext, res: ApiResource, p: Pending): Promise<void> {
  try {
    await ctx.writer.addItem(p.ref, p.item, { preferred: true });
  } catch (err) {
    throw new FatalBackupError(`writing the tarball failed: ${errorMessage(err)}`, { cause: err });
  }
  recordOf(ctx.req, res).written++;
  if (otherVersionsOf(ctx.req, res).length > 0) writtenNamesOf(ctx.req, res).add(p.entry);
  ctx.req.seen.wrote(p.ref.groupResource, p.entry);
  if (p.ref.namespace !== '') ctx.req.namespacesWithItems.add(p.ref.namespace);
  ctx.req.progress.itemsBackedUp++;
  ctx.onProgress?.({ ...ctx.req.progress });
  // Guarded: at info level winston would still format and route a line per item for nothing.
  if (ctx.log.isDebugEnabled()) ctx.log.debug(`backed up ${p.what}`, meta(p.ref));
}

/** Takes the claims' snapshots: a failed one fails its claim; a claim without one is stored as it is, with a warning when its data is left out. */
async function snapshotClaims(ctx: CollectContext, volumes: SnapshotTaker, claims: readonly Pending[]): Promise<void> {
  await mapLimit(claims, SNAPSHOTS_AT_ONCE, async (p) => {
    let r: SnapshotOutcome;
    try {
      r = await volumes.snapshot(p.item);
    } catch (err) {
      if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
      r = { kind: 'failed', error: `${p.what}: taking its snapshot failed: ${errorMessage(err)}` };
    }
    switch (r.kind) {
      case 'failed':
        fail(ctx, p, r.error);
        return;
      case 'skipped':
        if (r.warning !== undefined) ctx.log.warn(recordProblem(ctx.req, 'warnings', p.ref.namespace, r.warning), meta(p.ref));
        if (r.info !== undefined) ctx.log.debug(r.info, meta(p.ref));
        return;
      case 'taken':
        p.item = r.item as KubeObject;
        p.extra = [
          { groupResource: GR_VOLUME_SNAPSHOTS, object: r.objects.volumeSnapshot },
          { groupResource: GR_VOLUME_SNAPSHOT_CONTENTS, object: r.objects.content },
        ];
        ctx.log.info(`${p.what}: snapshot ${r.record.snapshotHandle} of ${r.record.restoreSize ?? 'unknown size'} ready (VolumeSnapshotContent ${r.record.volumeSnapshotContent}, class ${r.record.volumeSnapshotClass})`, meta(p.ref));
        if (r.warning !== undefined) ctx.log.warn(recordProblem(ctx.req, 'warnings', p.ref.namespace, r.warning), meta(p.ref));
    }
  }, { signal: ctx.signal });
}

/** A claim's VolumeSnapshot or content, stored as the snapshot step read it (the VolumeSnapshot is deleted by then). */
async function backupExtra(ctx: CollectContext, groupResource: string, obj: ListedObject, parent: string): Promise<void> {
  const res = ctx.byGroupResource.get(groupResource);
  if (res === undefined) {
    ctx.log.error(recordProblem(ctx.req, 'errors', obj.metadata?.namespace ?? '', `${groupResource} "${obj.metadata?.name ?? ''}" of ${parent} is not stored: discovery did not list ${groupResource} when the backup began`));
    return;
  }
  ctx.req.progress.totalItems++;
  if (!(await backupItem(ctx, res, obj))) ctx.req.progress.totalItems--;
}

/** The item to back up, or undefined when it has no name, was handled already, or is labelled out. */
function admit(ctx: CollectContext, res: ApiResource, obj: ListedObject): Pending | undefined {
  const { req } = ctx;
  const name = obj.metadata?.name;
  if (name === undefined || name === '') {
    const msg = recordProblem(req, 'warnings', '', `skipped a ${res.groupResource} item without a name`);
    ctx.log.warn(msg, { resource: res.groupResource });
    return undefined;
  }
  const ref: ItemRef = { groupResource: res.groupResource, namespace: res.namespaced ? (obj.metadata?.namespace ?? '') : '', name };
  const entry = req.seen.add(ref);
  if (entry === undefined) return undefined;
  const what = describeItem(ref);
  if (obj.metadata?.labels?.[LABEL_EXCLUDE_FROM_BACKUP] === 'true') {
    ctx.log.info(`skipped ${what}: it is labelled ${LABEL_EXCLUDE_FROM_BACKUP}=true`, meta(ref));
    return undefined;
  }
  const item: KubeObject = { ...obj, apiVersion: obj.apiVersion ?? res.apiVersion, kind: obj.kind ?? res.kind, metadata: { ...obj.metadata, name } };
  return { ref, entry, what, item, additional: [], failed: false };
}

/** One action over its items: a batch when the action takes batches (plugins), else item by item. */
async function runAction(ctx: CollectContext, a: ResolvedBackupItemAction, items: Pending[]): Promise<void> {
  const input = { items: items.map((p) => p.item), backup: ctx.req.backup };
  let results: BackupItemActionBatchResult[];
  try {
    results = await executeItems(a.action, input);
  } catch (err) {
    if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
    const reason = errorMessage(err);
    results = items.map(() => ({ ok: false, error: reason }));
  }
  items.forEach((p, i) => {
    const r = results[i];
    if (r === undefined || !r.ok) {
      fail(ctx, p, `backup item action ${a.name} failed on ${p.what}: ${r?.error ?? 'it returned no result for the item'}`);
      return;
    }
    const changed = identityChange(p.item, r.output.item);
    if (changed !== undefined) {
      fail(ctx, p, `backup item action ${a.name} changed the ${changed} of ${p.what}; the item is not backed up`);
      return;
    }
    const parent = p.item;
    p.item = r.output.item;
    for (const id of r.output.additionalItems) p.additional.push({ from: a.name, id, parent, explain: a.explain });
  });
}

function identityChange(before: KubeObject, after: KubeObject): string | undefined {
  if (after.apiVersion !== before.apiVersion) return 'apiVersion';
  if (after.kind !== before.kind) return 'kind';
  if (after.metadata.name !== before.metadata.name) return 'name';
  if ((after.metadata.namespace ?? '') !== (before.metadata.namespace ?? '')) return 'namespace';
  return undefined;
}

function meta(ref: ItemRef): Record<string, string> {
  return ref.namespace === '' ? { resource: ref.groupResource, name: ref.name } : { resource: ref.groupResource, namespace: ref.namespace, name: ref.name };
}

function fail(ctx: CollectContext, p: Pending, message: string): void {
  p.failed = true;
  recordProblem(ctx.req, 'errors', p.ref.namespace, message);
  ctx.log.error(message, meta(p.ref));
}

/**
 * An item an action asked for: fetched with GET and backed up once, if the filters allow it. A
 * cluster-scoped item taken this way by a backup that does not list cluster resources in full is
 * "pulled in": recorded in results.pulledIn and logged with the reason.
 */
async function backupAdditional(ctx: CollectContext, add: AdditionalItem, parent: string): Promise<void> {
  const { req } = ctx;
  const { id, from } = add;
  const res = ctx.byGroupResource.get(id.groupResource);
  if (res === undefined) {
    const msg = recordProblem(req, 'warnings', id.namespace, `${from} named ${id.groupResource} "${id.name}" for ${parent}, a resource the cluster does not serve`);
    ctx.log.warn(msg);
    return;
  }
  const ref: ItemRef = { groupResource: res.groupResource, namespace: res.namespaced ? id.namespace : '', name: id.name };
  const key = itemKey(ref);
  if (req.seen.has(ref)) return;
  const dep = add.explain?.(add.parent, id);
  const skip = whyNotAdditional(req, res, ref);
  if (skip !== undefined) {
    // A cluster-scoped dependency filtered out is said once at info, so an operator sees what the
    // backup lacks; namespaced ones (includedResources: [pods] leaving out every claim) stay at debug.
    if (skip.never || res.namespaced || req.notTaken.has(key)) ctx.log.debug(`not backing up ${describeItem(ref)} (named by ${from} for ${parent}): ${skip.reason}`, meta(ref));
    else {
      req.notTaken.add(key);
      const why = dep === undefined ? `named by ${from} for ${parent}` : dep.reason;
      ctx.log.info(`not backing up ${describeItem(ref)}, needed by ${parent} (${why}): ${skip.reason}`, meta(ref));
    }
    return;
  }
  // Cluster resources listed in full, with no label selector: their LIST takes the item, a GET now would only repeat it.
  if (takenByList(req, res, ref.name) && !req.selectsByLabel && listedInFull(ctx, res)) return;
  if (ctx.rights !== undefined && !(await mayGetDependency(ctx, ctx.rights, res, ref))) {
    if (!req.notTaken.has(key)) {
      req.notTaken.add(key);
      const why = dep === undefined ? `named by ${from} for ${parent}` : dep.reason;
      ctx.log.warn(recordProblem(req, 'warnings', ref.namespace, `not backing up ${describeItem(ref)}, needed by ${parent} (${why}): ${ctx.rights.who} may not get it`), meta(ref));
    }
    return;
  }
  const obj = await getAdditional(ctx, res, ref, parent, dep?.mayBeAbsent === true);
  if (obj === undefined) return;
  req.progress.totalItems++;
  const pulledIn = ref.namespace === '' && res.groupResource !== 'namespaces' && !takenByList(req, res, ref.name) ? (req.results.pulledIn ??= []) : undefined;
  // Its own dependencies are recorded while it is backed up: it goes before them.
  const at = pulledIn?.length ?? 0;
  if (!(await backupItem(ctx, res, obj)) || pulledIn === undefined) return;
  const reason = dep?.reason ?? `named by plugin action ${from} for ${kindName(add.parent.kind, add.parent.metadata.namespace, add.parent.metadata.name)}`;
  pulledIn.splice(at, 0, { groupResource: ref.groupResource, name: ref.name, requiredBy: parent, reason });
  ctx.log.info(`pulled in ${describeItem(ref)}: ${reason}`, meta(ref));
}

/**
 * GETs an additional item; undefined when it is gone or the GET failed (recorded, unless the action
 * said it `mayBeAbsent`). A stopped run or an unreachable API ends the backup.
 */
async function getAdditional(ctx: CollectContext, res: ApiResource, ref: ItemRef, parent: string, mayBeAbsent: boolean): Promise<ListedObject | undefined> {
  const { req } = ctx;
  try {
    return await ctx.client.get(res, ref.namespace === '' ? undefined : ref.namespace, ref.name, { signal: ctx.signal });
  } catch (err) {
    if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
    if (isApiUnreachable(err)) throw new FatalBackupError(errorMessage(err), { cause: err });
    const missing = isNotFound(err);
    if (missing && mayBeAbsent) {
      const key = itemKey(ref);
      if (!req.notTaken.has(key)) ctx.log.info(`${describeItem(ref)}, named by ${parent}, does not exist; nothing to back up`, meta(ref));
      req.notTaken.add(key);
      return undefined;
    }
    const msg = missing
      ? `${describeItem(ref)}, needed by ${parent}, does not exist`
      : `getting ${describeItem(ref)}, needed by ${parent}, failed: ${errorMessage(err)}`;
    recordProblem(req, missing ? 'warnings' : 'errors', ref.namespace, msg);
    if (missing) ctx.log.warn(msg, meta(ref));
    else ctx.log.error(msg, meta(ref));
    return undefined;
  }
}

/** Whether the cluster-scoped resource's full LIST ran (the requester may list it). */
function listedInFull(ctx: CollectContext, res: ApiResource): boolean {
  const a = ctx.rights?.access.get(res.groupResource);
  return a === undefined || a.everywhere;
}

/** Whether the requester may get an item an action named; a review that fails is an outage (fatal) or an error. */
async function mayGetDependency(ctx: CollectContext, rights: DependencyRights, res: ApiResource, ref: ItemRef): Promise<boolean> {
  try {
    return await rights.mayGet(res, ref.namespace, ref.name);
  } catch (err) {
    if (ctx.signal.aborted) throw new FatalBackupError(stoppedMessage(ctx.signal));
    if (isApiUnreachable(err)) throw new FatalBackupError(errorMessage(err), { cause: err });
    ctx.log.error(recordProblem(ctx.req, 'errors', ref.namespace, `checking whether ${rights.who} may get ${describeItem(ref)} failed, so it is not backed up: ${errorMessage(err)}`), meta(ref));
    return false;
  }
}

/** Why the filters leave out an item an action named; `never` for resources no backup takes. */
function whyNotAdditional(req: BackupRequest, res: ApiResource, ref: ItemRef): { reason: string; never?: boolean } | undefined {
  if (!isBackupable(res)) return { reason: 'this resource is never backed up', never: true };
  if (!req.resources.admitsDependency(res)) return { reason: 'the resource filter excludes it' };
  // includedNames narrows what is listed; only excludedNames keeps a needed item out.
  if (req.names.excludes(res, ref.name)) return { reason: 'excludedNames excludes it' };
  if (res.groupResource === 'namespaces') return req.namespaces.shouldInclude(ref.name) ? undefined : { reason: 'the namespace filter excludes it' };
  if (res.namespaced) return req.namespaces.shouldInclude(ref.namespace) ? undefined : { reason: 'the namespace filter excludes it' };
  return req.includeClusterResources === false ? { reason: 'includeClusterResources is false' } : undefined;
}

/** Whether a Namespace object is backed up: it is included and, under a label selector, matches or holds backed-up items. */
export function wantNamespace(req: BackupRequest, ns: ListedObject): boolean {
  const name = ns.metadata?.name ?? '';
  if (!req.namespaces.shouldInclude(name)) return false;
  if (req.namespacesWithItems.has(name)) return true;
  // Names that narrow every resource select like a label selector: only namespaces holding items.
  if (req.names.narrowsEveryResource) return false;
  if (!req.selectsByLabel) return true;
  const labels = ns.metadata?.labels;
  const spec = req.backup.spec;
  return (spec.orLabelSelectors ?? []).length > 0 ? anyLabelSelectorMatches(spec.orLabelSelectors, labels) : labelSelectorMatches(spec.labelSelector, labels);
}
