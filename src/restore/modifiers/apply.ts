// Applying resource modifier rules to one item, in order, as Velero does: every rule is matched
// against the item as it was before any rule changed it, and each matching rule patches the
// result of the previous one. A JSON Patch whose `test` fails leaves that rule unapplied; any other
// failure is the item's error.
import { labelSelectorMatches } from '../../selection/labels.js';
import { applyJsonPatch, PatchError, PatchTestFailed, type JsonValue } from './jsonPatch.js';
import { applyMergePatch } from './mergePatch.js';
import type { ModifierRule, ResourceModifiers } from './rules.js';
import { applyStrategicPatch } from './strategicMerge.js';

export interface ModifiedItem {
  groupResource: string;
  /** The namespace the item was backed up from ('' when cluster-scoped): rules name source namespaces. */
  sourceNamespace: string;
  namespaced: boolean;
}

export interface ModifierResult {
  /** The patched object (the input when no rule applied). */
  object: Record<string, unknown>;
  /** One line per rule that patched it. */
  applied: string[];
  /** Set when a rule failed: the item is not restored. */
  error?: string;
}

const KIND_TEXT = { patches: 'JSON patch', mergePatches: 'merge patch', strategicPatches: 'strategic merge patch' } as const;

function describeRule(mods: ResourceModifiers, r: ModifierRule): string {
  return `resource modifier rule ${r.index} (${mods.source}, groupResource ${r.groupResource}, ${KIND_TEXT[r.kind]})`;
}

export function ruleMatches(r: ModifierRule, item: ModifiedItem, obj: Record<string, unknown>): boolean {
  if (!r.matchesGroupResource.test(item.groupResource)) return false;
  if (item.namespaced && r.namespaces !== undefined && !r.namespaces.shouldInclude(item.sourceNamespace)) return false;
  const md = (obj.metadata ?? {}) as { name?: string; labels?: Record<string, string> };
  if (r.nameRegex !== undefined && !r.nameRegex.test(md.name ?? '')) return false;
  if (r.labelSelector !== undefined && !labelSelectorMatches(r.labelSelector, md.labels)) return false;
  if (r.matches.length > 0) {
    try {
      applyJsonPatch(obj, r.matches);
    } catch (err) {
      if (err instanceof PatchError) return false;
      throw err;
    }
  }
  return true;
}

function patchWith(r: ModifierRule, obj: JsonValue): JsonValue {
  switch (r.kind) {
    case 'patches':
      return applyJsonPatch(obj, r.jsonPatch);
    case 'mergePatches':
      return r.documents.reduce<JsonValue>((cur, d) => applyMergePatch(cur, d), obj);
    case 'strategicPatches':
      return r.documents.reduce<JsonValue>((cur, d) => applyStrategicPatch(cur, d), obj);
  }
}

/** Applies every matching rule to a copy of `obj`. */
export function applyResourceModifiers(mods: ResourceModifiers, item: ModifiedItem, obj: Record<string, unknown>): ModifierResult {
  const original = obj;
  let cur = obj as JsonValue;
  const applied: string[] = [];
  for (const r of mods.rules) {
    if (!ruleMatches(r, item, original)) continue;
    const what = describeRule(mods, r);
    try {
      cur = patchWith(r, cur);
      applied.push(what);
    } catch (err) {
      if (err instanceof PatchTestFailed) {
        applied.push(`${what}: not applied, its test failed (${err.message})`);
        continue;
      }
      return { object: obj, applied, error: `${what} failed: ${(err as Error).message}` };
    }
  }
  const out = cur as Record<string, unknown>;
  if (out === null || typeof out !== 'object' || Array.isArray(out)) return { object: obj, applied, error: 'the resource modifiers left no object' };
  return { object: out, applied };
}
