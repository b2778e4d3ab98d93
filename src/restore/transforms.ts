// Restore transforms beyond namespace mapping: the resource modifier rules a Restore names, applied
// after every restore item action (so a rule has the last word), to the object about to be
// written. What the mapping actions and the rules did to an item is recorded in its outcome, and a
// dry run keeps the patched object itself (restore describe --details shows it).
import type { KubeObject } from '../plugin/api/index.js';
import type { PlannedItem } from './plan.js';
import { applyResourceModifiers, type ResourceModifiers } from './modifiers/index.js';
import type { ItemOutcome } from './request.js';

/** How many patched objects a dry run keeps in its results (each item's transforms are always kept). */
export const MAX_PATCHED_OBJECTS = 100;

export interface TransformResult {
  item: KubeObject;
  /** What changed the item: mapping actions and resource modifier rules, in order. */
  transforms: string[];
  error?: string;
}

/** Applies the rules to the item about to be written (after the actions), `changes` being what the actions recorded. */
export function applyTransforms(mods: ResourceModifiers | undefined, p: PlannedItem, item: KubeObject, changes: readonly string[]): TransformResult {
  if (mods === undefined) return { item, transforms: [...changes] };
  const r = applyResourceModifiers(mods, { groupResource: p.groupResource, sourceNamespace: p.sourceNamespace, namespaced: p.ref.namespaced !== false }, item);
  const transforms = [...changes, ...r.applied];
  if (r.error !== undefined) return { item, transforms, error: r.error };
  return { item: r.object as KubeObject, transforms };
}

/** A Secret's values replaced, so a patched Secret can be shown. */
export function redactedForDisplay(groupResource: string, obj: KubeObject): KubeObject {
  if (groupResource !== 'secrets') return obj;
  const copy = structuredClone(obj) as KubeObject & { data?: Record<string, unknown>; stringData?: Record<string, unknown> };
  for (const field of ['data', 'stringData'] as const) {
    const d = copy[field];
    if (d !== undefined && d !== null && typeof d === 'object') for (const k of Object.keys(d)) d[k] = '<redacted>';
  }
  return copy;
}

/** Adds what transformed the item to its outcome; a dry run also keeps the object as it would be written (while under the cap). */
export function noteTransforms(outcome: ItemOutcome, groupResource: string, transforms: readonly string[], patched: KubeObject | undefined, kept: { patched: number }): void {
  if (transforms.length === 0) return;
  outcome.transforms = [...transforms];
  if (patched !== undefined && kept.patched < MAX_PATCHED_OBJECTS) {
    kept.patched++;
    outcome.patched = redactedForDisplay(groupResource, patched);
  }
}
