// Dry-run prediction: what writeItem would do, found with reads and server-side dry runs only
// (`?dryRun=All`), so admission (quotas, webhooks) is consulted and nothing is written.
import { isAlreadyExists, isNotFound, type KubeObject as LooseObject } from '../kube/index.js';
import { itemErrorMessage, type Target } from './outcomes.js';
import type { PlannedItem } from './plan.js';
import type { ItemOutcome } from './request.js';
import { createRetrying, getLive, updateExisting, type Desired, type WriteContext } from './writes.js';

/**
 * `pending`: what would be created first (the item's namespace, its CRD); the API server cannot
 * validate an item before those exist, so the prediction says it was not validated.
 */
export async function predictItem(w: WriteContext, p: PlannedItem, t: Target, d: Desired, pending: readonly string[]): Promise<ItemOutcome> {
  const { client, outcomes } = w;
  if (pending.length > 0) {
    return outcomes.record(p, t, 'created', `would be created; not validated by the API server, as ${pending.join(' and ')} would be created first`, { validated: false });
  }
  let live: LooseObject | undefined;
  try {
    live = await getLive(client, p, t);
  } catch (err) {
    if (!isNotFound(err)) return outcomes.record(p, t, 'failed', itemErrorMessage(p, d.original, err));
  }
  if (live !== undefined && p.groupResource === 'namespaces' && live.metadata?.deletionTimestamp !== undefined) {
    return outcomes.record(p, t, 'created', 'would be created once the namespace being deleted is gone; not validated by the API server', { validated: false });
  }
  if (live === undefined) {
    try {
      await createRetrying(w, p, t, d.createAs ?? d.item, true, { retried: false });
      return outcomes.record(p, t, 'created', 'would be created', { validated: true });
    } catch (err) {
      if (!isAlreadyExists(err)) return outcomes.record(p, t, 'failed', itemErrorMessage(p, d.original, err), { validated: true });
      live = await getLive(client, p, t);
    }
  }
  return updateExisting(w, p, t, d, live, true);
}
