// JSON Merge Patch (RFC 7386): objects merge key by key, null removes a key, anything else
// (arrays included) replaces. Pure: returns a new value.
import type { JsonValue } from './jsonPatch.js';

const isObject = (v: unknown): v is { [k: string]: JsonValue } => v !== null && typeof v === 'object' && !Array.isArray(v);

export function applyMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return structuredClone(patch);
  const out: { [k: string]: JsonValue } = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}
