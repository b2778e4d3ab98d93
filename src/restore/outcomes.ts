// Outcomes: what became of each item, recorded in one place. The outcome list, the summary and
// progress counters, the results (warnings and errors by namespace) and the run log all hear of an
// item from record(), so they can never disagree.
import type winston from 'winston';
import type { RestoreProgress } from '../apis/v1/index.js';
import { addResult } from '../persistence/results.js';
import type { KubeObject } from '../plugin/api/index.js';
import { createRedactor, errorMessage, sanitizeMessage } from '../util/errors.js';
import { displayName, isRecord } from './objects.js';
import type { ItemAction, ItemOutcome, RestoreRequest } from './request.js';

/** Where an item goes in the cluster. */
export interface Target {
  namespace: string;
  name: string;
}

/** What record() needs of an item: its resource and where the plan put it. */
export interface ItemRef {
  groupResource: string;
  namespace: string;
  name: string;
  /** A record made beforehand for its outcome (outcomeSlot), used once. */
  slot?: ItemOutcome;
}

/** Marks a slot not written yet: no outcome has this reason (it is compared by identity). */
const UNSET = '\u0000unset';

/**
 * An empty outcome record for a planned item, made with the plan so the outcomes of a long run are
 * not small objects promoted one by one among its garbage (see PlannedItem.slot). The same keys in
 * the same order as record()'s literal: one hidden class.
 */
export function outcomeSlot(p: Pick<ItemRef, 'groupResource' | 'namespace' | 'name'>): ItemOutcome {
  return { groupResource: p.groupResource, namespace: p.namespace, name: p.name, action: 'failed', reason: UNSET };
}

export interface RecordOptions {
  /** Also a warning in the results (a skip that differs, a status that could not be restored). */
  warn?: boolean;
  /** Dry run only: whether the apiserver validated the prediction. */
  validated?: boolean;
}

export interface Outcomes {
  record(p: ItemRef, target: Target, action: ItemAction, reason: string, opts?: RecordOptions): ItemOutcome;
  /** A warning that is not an item's outcome (an action naming an item the backup lacks). */
  warn(namespace: string, message: string): void;
}

/**
 * Records into `req`. `totalItems` is read at each record: the plan grows when actions name
 * additional items.
 */
export function newOutcomes(
  req: RestoreRequest, log: winston.Logger, totalItems: () => number, onProgress?: (progress: RestoreProgress) => void,
): Outcomes {
  const report = (namespace: string, what: string, action: ItemAction, reason: string, opts: RecordOptions, fields: object): void => {
    if (action === 'failed' && req.dryRun) {
      // Predicted: a real restore would fail here; the dry run itself did not.
      addResult(req.results, 'warnings', namespace, `${what}: would fail: ${reason}`);
      log.warn(`${what}: would fail: ${reason}`, fields);
    } else if (action === 'failed') {
      addResult(req.results, 'errors', namespace, `${what}: ${reason}`);
      log.error(`${what}: ${reason}`, fields);
    } else if (opts.warn === true) {
      addResult(req.results, 'warnings', namespace, `${what}: ${reason}`);
      log.warn(`${what}: ${reason}`, fields);
    } else {
      log.info(`${what}: ${reason}`, fields);
    }
  };
  return {
    record(p, target, action, reason, opts = {}) {
      // The plan's strings where they are equal: the target's come from the loaded object, one copy per item.
      const namespace = target.namespace === p.namespace ? p.namespace : target.namespace;
      const name = target.name === p.name ? p.name : target.name;
      const slot = p.slot;
      let outcome: ItemOutcome;
      if (slot !== undefined && slot.reason === UNSET) {
        outcome = slot;
        outcome.namespace = namespace;
        outcome.name = name;
        outcome.action = action;
        outcome.reason = reason;
      } else {
        outcome = { groupResource: p.groupResource, namespace, name, action, reason };
      }
      if (opts.validated !== undefined) outcome.validated = opts.validated;
      req.outcomes.push(outcome);
      req.summary[action]++;
      req.progress.itemsRestored++;
      req.progress.totalItems = totalItems();
      const what = `${p.groupResource} ${displayName(target.namespace, target.name)}`;
      report(target.namespace, what, action, reason, opts, { resource: p.groupResource, namespace: target.namespace, name: target.name, action });
      onProgress?.({ ...req.progress });
      return outcome;
    },
    warn(namespace, message) {
      addResult(req.results, 'warnings', namespace, message);
      log.warn(message);
    },
  };
}

/** Error text for an item; a Secret's values (in any encoding) are scrubbed first. */
export function itemErrorMessage(p: Pick<ItemRef, 'groupResource'>, original: KubeObject | undefined, err: unknown): string {
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
}
