// Conditional writes of a run's (or any Stowage object's) state: made at the version the object was
// read at, so a reconcile that decided from a stale cache never overwrites a newer state. When the
// object changed or went meanwhile, the write is dropped and its next event decides again.
import { isConflict, isNotFound, type ResourceRef } from '../../kube/index.js';
import type { ControllerContext } from './context.js';

/** Whether a conditional write failed because the object changed (Conflict) or went (NotFound) meanwhile. */
export function changedMeanwhile(err: unknown): boolean {
  return isConflict(err) || isNotFound(err);
}

/** True once `write` is made; false when the object changed or went meanwhile; any other error is thrown. */
export async function unlessChanged(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (err) {
    if (changedMeanwhile(err)) return false;
    throw err;
  }
}

/** A status patch's body: conditional on `resourceVersion` when one is given, else made whatever the version. */
export function statusPatch(status: Record<string, unknown>, resourceVersion?: string): Record<string, unknown> {
  return resourceVersion === undefined ? { status } : { metadata: { resourceVersion }, status };
}

export interface Versioned {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
}

/** Patches `obj`'s status at the version it was read at; false when it changed or went meanwhile. */
export function patchStatusIfCurrent(
  ctx: Pick<ControllerContext, 'client' | 'namespace'>, resource: ResourceRef, obj: Versioned, status: Record<string, unknown>,
): Promise<boolean> {
  return unlessChanged(ctx.client.patchStatus(resource, obj.metadata.namespace ?? ctx.namespace, obj.metadata.name, statusPatch(status, obj.metadata.resourceVersion)));
}
