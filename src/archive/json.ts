/**
 * Deterministic JSON: object keys sorted (by UTF-16 code unit, like Array.prototype.sort), no
 * whitespace. The same object always gives the same bytes, so item checksums are reproducible.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const src = value as Record<string, unknown>;
    // No prototype, so a "__proto__" key stays an ordinary key.
    const out = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(src).sort()) {
      const v = src[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}
