/**
 * Deterministic JSON: object keys sorted (by UTF-16 code unit, like Array.prototype.sort), no
 * whitespace. The same object always gives the same bytes, so item checksums are reproducible.
 *
 * Keys that are array indices ("0", "17") come first in numeric order, then the others sorted:
 * JavaScript lists an object's index keys first, and the first version serialized sorted copies.
 */
export function canonicalJson(value: unknown): string {
  const text = JSON.stringify(sortedKeys(value)) as string | undefined;
  if (text === undefined) throw new TypeError(`a ${typeof value} has no JSON form`);
  return text;
}

/**
 * The value with every object's keys in order, copying only the objects that are not: maps such as
 * data, labels and annotations come from the apiserver sorted already, and copying every object
 * (into prototype-less objects, which V8 keeps as hash tables) was most of a backup's garbage.
 */
function sortedKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const s = sortedKeys(v);
      if (s !== v) (out ??= value.slice())[i] = s;
    }
    return out ?? value;
  }
  const src = value as Record<string, unknown>;
  const keys = Object.keys(src);
  let indices = 0;
  while (indices < keys.length && isArrayIndex(keys[indices] as string)) indices++;
  // An inherited toJSON (a Date's) would replace the object: the canonical form is its own keys.
  let copy = typeof src.toJSON === 'function';
  for (let i = indices + 1; i < keys.length && !copy; i++) if ((keys[i - 1] as string) > (keys[i] as string)) copy = true;
  let copied: Map<string, unknown> | undefined;
  for (const k of keys) {
    const v = src[k];
    const s = sortedKeys(v);
    if (s !== v) (copied ??= new Map()).set(k, s);
  }
  if (!copy && copied === undefined) return value;
  const out: Record<string, unknown> = {};
  for (const k of [...keys.slice(0, indices), ...keys.slice(indices).sort()]) {
    const v = copied?.has(k) === true ? copied.get(k) : src[k];
    if (v === undefined) continue;
    // "__proto__" is data here; plain assignment would set the copy's prototype instead.
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

const MAX_ARRAY_INDEX = 4294967294;

function isArrayIndex(k: string): boolean {
  if (k.length === 0) return false;
  const c = k.charCodeAt(0);
  if (c < 0x30 || c > 0x39 || (c === 0x30 && k.length > 1) || k.length > 10) return false;
  for (let i = 1; i < k.length; i++) {
    const d = k.charCodeAt(i);
    if (d < 0x30 || d > 0x39) return false;
  }
  return Number(k) <= MAX_ARRAY_INDEX;
}
