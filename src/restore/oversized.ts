// Oversized items: archive entries over the per-item cap (the server's --max-item-bytes), whose
// bytes the reader skipped without holding them. Each object the restore's filters would take fails
// alone, named with its size and the cap; the rest of the restore goes on.
import { splitGroupResource, type OversizedEntry } from '../archive/index.js';
import type { ApiResource } from '../kube/index.js';
import { displayName } from './objects.js';
import { neverRestoredReason } from './kinds.js';
import type { ItemRef } from './outcomes.js';
import { itemKey, type ArchivedItem } from './plan.js';
import { targetNamespace, type RestoreRequest } from './request.js';

/** The server flag that sets the cap, named in every message about it. */
export const MAX_ITEM_BYTES_FLAG = '--max-item-bytes';

/** An object of the restore that cannot be read: where it would have gone, and why not. */
export interface OversizedItem extends ItemRef {
  reason: string;
}

export interface OversizedVerdict {
  /** Objects the restore takes and cannot read, one per object: each fails. */
  failed: OversizedItem[];
  /** Warnings: copies at other versions of restored objects, over the cap and not used. */
  unusedCopies: string[];
}

/**
 * Sorts the reader's oversized entries: an object with no copy within the cap fails when the
 * restore's filters take it (by resource, namespace and scope; its labels are unknown, so a label
 * selector cannot leave it out); a copy of an object read within the cap is only a warning.
 */
export function oversizedVerdict(
  oversized: readonly OversizedEntry[], items: readonly ArchivedItem[], req: RestoreRequest, discovered: readonly ApiResource[],
): OversizedVerdict {
  const verdict: OversizedVerdict = { failed: [], unusedCopies: [] };
  if (oversized.length === 0) return verdict;
  const read = new Set(items.map((it) => itemKey(it.groupResource, it.namespace ?? '', it.name)));
  const byGr = new Map(discovered.map((r) => [r.groupResource, r]));
  const failed = new Set<string>();
  for (const o of oversized) {
    if (!selected(o, req, byGr)) continue;
    const key = itemKey(o.groupResource, o.namespace ?? '', o.name);
    const what = `${o.groupResource} ${displayName(o.namespace, o.name)}`;
    const size = `${o.bytes} bytes, over the ${o.cap}-byte per-item cap`;
    if (read.has(key)) {
      verdict.unusedCopies.push(`${what}: its copy ${o.path} is ${size}; restored from another copy (raise the server's ${MAX_ITEM_BYTES_FLAG} to read it)`);
      continue;
    }
    // An object's classic and version copies are one object: it fails once. Copies at other versions alone do not make it.
    if (o.alternate || failed.has(key)) continue;
    failed.add(key);
    const labels = req.selectors.length > 0 ? ' (unread, so whether it matches the label selector is unknown)' : '';
    const namespace = o.namespace === undefined ? '' : targetNamespace(req, o.namespace);
    verdict.failed.push({
      groupResource: o.groupResource,
      namespace,
      name: o.groupResource === 'namespaces' ? targetNamespace(req, o.name) : o.name,
      reason: `its copy in the backup is ${size}; not restored${labels}. Raise the server's ${MAX_ITEM_BYTES_FLAG} to restore it`,
    });
  }
  return verdict;
}

/** Whether the restore's filters take the entry's object, as buildPlan selects items (labels aside). */
function selected(o: OversizedEntry, req: RestoreRequest, byGr: ReadonlyMap<string, ApiResource>): boolean {
  if (neverRestoredReason(o.groupResource) !== undefined) return false;
  const res = byGr.get(o.groupResource) ?? { ...splitGroupResource(o.groupResource), namespaced: o.namespace !== undefined };
  if (!req.resources.shouldInclude(res)) return false;
  if (o.groupResource === 'namespaces') return req.namespaces.shouldInclude(o.name);
  if (!req.names.shouldInclude(res, o.name)) return false;
  return o.namespace !== undefined ? req.namespaces.shouldInclude(o.namespace) : req.includeClusterScoped;
}
