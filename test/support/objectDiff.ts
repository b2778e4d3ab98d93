// Field-by-field comparison of two Kubernetes objects, for tests that check a round trip
// (backup, delete, restore) leaves objects as they were. Pure functions.
import crypto from 'node:crypto';
import type { KubeObject } from '../../src/kube/index.js';

/** Metadata the apiserver sets on every write; never part of what a user (or a backup) decides. */
const SERVER_SET_METADATA = ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'generation', 'selfLink'] as const;

/** A copy without server-set metadata and without status (the controllers' report, not the object). */
export function normalise(obj: KubeObject): KubeObject {
  const copy = structuredClone(obj);
  delete copy.status;
  if (copy.metadata !== undefined) for (const k of SERVER_SET_METADATA) delete copy.metadata[k];
  return copy;
}

function segment(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Leaf values by path (`spec.ports[0].port`, `metadata.labels["app.kubernetes.io/name"]`); empty objects and arrays are leaves. */
export function flatten(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(value)) {
    if (value.length === 0) out.set(prefix, []);
    value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  } else if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) out.set(prefix, {});
    for (const [k, v] of entries) flatten(v, prefix === '' ? k : `${prefix}${segment(k)}`, out);
  } else {
    out.set(prefix, value);
  }
  return out;
}

export interface FieldDiff {
  path: string;
  /** undefined: the field is absent on that side. */
  before: unknown;
  after: unknown;
}

/** Every leaf path whose value differs between the two objects (after normalise). */
export function diffObjects(before: KubeObject, after: KubeObject): FieldDiff[] {
  const a = flatten(normalise(before));
  const b = flatten(normalise(after));
  const out: FieldDiff[] = [];
  for (const path of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(path);
    const y = b.get(path);
    if (JSON.stringify(x) !== JSON.stringify(y)) out.push({ path, before: x, after: y });
  }
  return out.sort((p, q) => p.path.localeCompare(q.path));
}

/** A value for a report: Secret data is shown by length and digest, never as is. */
export function shown(value: unknown, secret: boolean): string {
  if (value === undefined) return '(absent)';
  if (secret && typeof value === 'string') return `<${value.length} chars, sha256 ${crypto.createHash('sha256').update(value).digest('hex').slice(0, 12)}>`;
  const s = JSON.stringify(value);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}
