// The executor: restores one planned item at a time, as the tiers ask. It prepares the item (left
// to a controller? stripped, mapped, moved to a served version), runs the restore item actions, sees
// to what must exist first (its namespace, its CRD), then writes it or, in a dry run, predicts the
// write. Outcomes, ordering, serving checks, writes and predictions live in modules of their own.
import type winston from 'winston';
import { CORE, isApiUnreachable, isNotFound, type DynamicClient, type KubeObject as LiveObject } from '../kube/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { takeChanges } from './actions/mappings.js';
import type { ActionMatcher } from './actions/selector.js';
import { predictItem } from './dryRun.js';
import { hasSelector, maintainedBy } from './maintained.js';
import { cloneObject, displayName, isRecord } from './objects.js';
import { newOrder, type Order } from './order.js';
import { itemErrorMessage, type Outcomes, type Target } from './outcomes.js';
import type { PlannedItem, RestorePlan } from './plan.js';
import { targetNamespace, type ItemOutcome, type RestoreRequest } from './request.js';
import { newServing, type Serving } from './serving.js';
import type { ResourceModifiers } from './modifiers/index.js';
import type { HookReport, RestorePodHooks } from './podHooks.js';
import { prepareItem } from './transform.js';
import { applyTransforms, noteTransforms } from './transforms.js';
import { writeItem, type Desired, type WriteContext } from './writes.js';

export interface ExecutorContext {
  client: DynamicClient;
  log: winston.Logger;
  req: RestoreRequest;
  plan: RestorePlan;
  outcomes: Outcomes;
  matchers: readonly ActionMatcher[];
  /** Reads an item's backed-up object (from the spill file), only when it is about to be restored. */
  load(p: PlannedItem): Promise<KubeObject>;
  /** Group-resources the cluster served when the restore began. */
  servedNow: ReadonlySet<string>;
  /** How long to wait for a restored CRD to be served, or a terminating namespace to go. */
  waitTimeoutMs: number;
  signal: AbortSignal | undefined;
  /** Stops the whole run (the API gave up on an outage: every other item would wait it out again). */
  stop(reason: unknown): void;
  /** Told how many items are being restored at once, after each start. */
  onInFlight(n: number): void;
  /** The Restore's resource modifier rules, applied after the actions. */
  modifiers?: ResourceModifiers;
  /** Restore hooks: init containers added to pods as they are created, exec hooks started once they are. */
  podHooks?: RestorePodHooks;
  /** Where the hooks' failures and warnings go. */
  reportHook?: HookReport;
}

export interface Executor {
  restoreItem(p: PlannedItem): Promise<ItemOutcome>;
}

/** The pieces one item's restore uses, wired once per run. */
interface Parts {
  ctx: ExecutorContext;
  order: Order;
  serving: Serving;
  writes: WriteContext;
  /** Patched objects a dry run has kept so far (transforms.ts caps them). */
  kept: { patched: number };
}

export function newExecutor(ctx: ExecutorContext): Executor {
  const order = newOrder({
    plan: ctx.plan,
    dryRun: ctx.req.dryRun,
    outcomes: ctx.outcomes,
    load: ctx.load,
    // Called only once the tiers run, when `parts` is set.
    restoreOne: (p, original) => restoreOne(parts, p, original).catch((err: unknown) => {
      // The API gave up on an outage (not this item's fault): end the run rather than let every item wait it out.
      if (isApiUnreachable(err)) ctx.stop(err);
      throw err;
    }),
    onInFlight: ctx.onInFlight,
  });
  const serving = newServing({
    client: ctx.client, plan: ctx.plan, dryRun: ctx.req.dryRun, servedNow: ctx.servedNow,
    waitTimeoutMs: ctx.waitTimeoutMs, signal: ctx.signal, restoreItem: order.restoreItem,
  });
  const writes: WriteContext = {
    client: ctx.client, log: ctx.log, req: ctx.req, outcomes: ctx.outcomes, waitTimeoutMs: ctx.waitTimeoutMs, signal: ctx.signal,
    stop: ctx.stop, onExisting: (p) => order.noteExisting(p),
  };
  const parts: Parts = { ctx, order, serving, writes, kept: { patched: 0 } };
  return { restoreItem: order.restoreItem };
}

async function restoreOne(parts: Parts, p: PlannedItem, original: KubeObject): Promise<ItemOutcome> {
  const { ctx } = parts;
  const at = { namespace: p.namespace, name: p.name };
  const maintained = await maintainedBy(p.groupResource, original, p.namespace, () => serviceSelects(ctx, p));
  if (maintained !== undefined) return ctx.outcomes.record(p, at, 'skipped', maintained);
  const keepStatus = ctx.req.restoreStatus?.shouldInclude(p.resource) ?? false;
  const prepared = prepareItem(p.groupResource, original, {
    keepStatus,
    mapNamespace: (ns) => targetNamespace(ctx.req, ns),
    backupName: ctx.req.backup.metadata.name,
    restoreName: ctx.req.restore.metadata.name,
  });
  // No copy at a version the cluster serves: the stored object is offered at the one it prefers.
  const offered = p.versionChange !== undefined && !p.versionChange.copy ? { ...prepared, apiVersion: p.versionChange.used } : prepared;
  const acted = await runActions(parts, p, original, offered);
  if ('outcome' in acted) return acted.outcome;
  const transformed = applyTransforms(ctx.modifiers, p, acted.item, acted.changes);
  // Rule text may quote a Secret's values (a failed test): scrubbed like any item error.
  const transforms = transformed.transforms.map((t) => itemErrorMessage(p, original, t));
  if (transformed.error !== undefined) {
    const failed = ctx.outcomes.record(p, at, 'failed', itemErrorMessage(p, original, transformed.error));
    noteTransforms(failed, p.groupResource, transforms, undefined, parts.kept);
    return failed;
  }
  const { item } = transformed;
  if (transforms.length > 0) ctx.log.info(`${p.groupResource} ${displayName(p.namespace, p.name)}: transformed: ${transforms.join('; ')}`);
  if (!isRecord(item.metadata) || typeof item.metadata.name !== 'string' || item.metadata.name === '') {
    return ctx.outcomes.record(p, at, 'failed', 'a restore item action returned an object without metadata.name');
  }
  const target = { namespace: p.ref.namespaced === false ? '' : (item.metadata.namespace ?? p.namespace), name: item.metadata.name };
  const pending = await prerequisites(parts, p, target);
  if (!Array.isArray(pending)) return pending;
  const hooked = withPodHooks(ctx, p, target, item);
  if (typeof hooked === 'string') return ctx.outcomes.record(p, target, 'failed', hooked);
  const desired = { item, keepStatus, original, ...hooked.desired };
  const outcome = await (ctx.req.dryRun ? predictItem(parts.writes, p, target, desired, pending) : writeItem(parts.writes, p, target, desired));
  noteTransforms(outcome, p.groupResource, transforms, ctx.req.dryRun ? item : undefined, parts.kept);
  // Hooks act only on pods this restore creates: an existing pod is neither given init containers nor exec'd into.
  if (hooked.notes.length > 0 && outcome.action === 'created') outcome.hooks = hooked.notes;
  return outcome;
}

/** A pod's restore hooks: what to create instead of the item, and its start once created. A string: why the pod is not restored. */
function withPodHooks(ctx: ExecutorContext, p: PlannedItem, target: Target, item: KubeObject): { desired: Pick<Desired, 'createAs' | 'onCreated'>; notes: string[] } | string {
  const hooks = ctx.podHooks;
  if (hooks === undefined || p.groupResource !== 'pods') return { desired: {}, notes: [] };
  const prepared = hooks.prepare(item, ctx.req.dryRun);
  if (typeof prepared === 'string') return prepared;
  for (const w of prepared.warnings) ctx.outcomes.warn(target.namespace, `pod ${displayName(target.namespace, target.name)}: ${w}`);
  const report = ctx.reportHook;
  const onCreated = ctx.req.dryRun || report === undefined ? undefined : (created: LiveObject): void => hooks.created(created, report);
  return { desired: { createAs: prepared.create, ...(onCreated !== undefined ? { onCreated } : {}) }, notes: prepared.notes };
}

/**
 * Runs the restore item actions that apply, built-in ones first, each on the previous one's output;
 * restores the additional items they name first. Returns the item to write, or the outcome when an
 * action failed or skipped it.
 */
async function runActions(parts: Parts, p: PlannedItem, original: KubeObject, offered: KubeObject): Promise<{ item: KubeObject; changes: string[] } | { outcome: ItemOutcome }> {
  const { ctx, order } = parts;
  const at = { namespace: p.namespace, name: p.name };
  let item = offered;
  const changes: string[] = [];
  for (const m of ctx.matchers) {
    if (!m.applies({ resource: p.resource, namespace: p.namespace, labels: item.metadata.labels })) continue;
    let out: Awaited<ReturnType<typeof m.action.execute>>;
    try {
      // Copies: an in-process action must not change the backed-up object or the Restore.
      out = await m.action.execute({ item, itemFromBackup: cloneObject(original), restore: cloneObject(ctx.req.restore) });
    } catch (err) {
      return { outcome: ctx.outcomes.record(p, at, 'failed', `restore item action ${m.name} failed: ${itemErrorMessage(p, original, err)}`) };
    }
    if (out.skipRestore) return { outcome: ctx.outcomes.record(p, at, 'skipped', `skipped by restore item action ${m.name}`) };
    for (const extra of out.additionalItems) {
      const ap = ctx.plan.planAdditional(extra.groupResource, extra.namespace, extra.name);
      if (ap === undefined) {
        const what = `${extra.groupResource} ${displayName(extra.namespace, extra.name)}`;
        ctx.outcomes.warn(p.namespace, `${p.groupResource} ${displayName(p.namespace, p.name)}: restore item action ${m.name} asked for ${what} first, which the backup does not hold or which is never restored`);
        continue;
      }
      if (ap !== p) await order.restoreFirst(p, ap);
    }
    item = out.item;
    changes.push(...takeChanges(item));
  }
  return { item, changes };
}

/**
 * Restores what must exist before the item: its namespace, and the CRD of its resource (served).
 * Returns what a dry run cannot validate against because it would be created first, or the outcome
 * when a prerequisite failed.
 */
async function prerequisites(parts: Parts, p: PlannedItem, target: Target): Promise<string[] | ItemOutcome> {
  const { ctx } = parts;
  const pending: string[] = [];
  if (target.namespace !== '') {
    const nsItem = ctx.plan.namespaces.get(target.namespace);
    if (nsItem !== undefined && nsItem !== p) {
      const ns = await parts.order.restoreFirst(p, nsItem);
      if (ns?.action === 'failed') return ctx.outcomes.record(p, target, 'failed', `its namespace ${target.namespace} could not be restored: ${ns.reason}`);
      if (ctx.req.dryRun && ns?.action === 'created') pending.push(`namespace ${target.namespace}`);
    }
  }
  const servedState = await parts.serving.ensureServed(p);
  if (typeof servedState === 'string') return ctx.outcomes.record(p, target, 'failed', servedState);
  if (servedState.pending) pending.push(`CustomResourceDefinition ${ctx.plan.crds.get(p.groupResource)?.name ?? p.groupResource}`);
  return pending;
}

/** Whether the Service an Endpoints item belongs to has a selector: the restored one, or else the live one. */
async function serviceSelects(ctx: ExecutorContext, p: PlannedItem): Promise<boolean> {
  const svc = ctx.plan.items.get('services', p.sourceNamespace, p.sourceName);
  if (svc?.archived !== undefined && svc.skip === undefined) return hasSelector(await ctx.load(svc));
  try {
    return hasSelector(await ctx.client.get<KubeObject>(CORE.services, p.namespace, p.name));
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
