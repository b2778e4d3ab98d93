// Which fields of a run's spec Stowage refuses: fields kinds.ts declares as not supported yet
// (Velero's hooks, volume snapshots, ...), and fields no schema declares at all (a typo, a newer
// Velero field), which the apiserver keeps (preserveUnknownFields) so that they are refused here
// by name instead of being dropped. Nothing in a Backup, Restore or Schedule spec is accepted and
// then ignored.
import { KINDS } from './kinds.js';
import type { Schema } from './schema.js';

export interface FieldProblem {
  /** e.g. `spec.hooks`, `spec.orLabelSelectors[1].matchLables`. */
  path: string;
  problem: 'unsupported' | 'unknown';
  message: string;
}

/** Asks for nothing: null, false, '', [] or an object of only such values (Velero writes `hooks: {}`). */
export function isUnset(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value).every(isUnset);
  return false;
}

function walk(schema: Schema, value: unknown, path: string, kind: string, out: FieldProblem[]): void {
  if (value === undefined || value === null) return;
  switch (schema.kind) {
    case 'named':
      walk(schema.schema, value, path, kind, out);
      return;
    case 'array':
      if (Array.isArray(value)) value.forEach((v, i) => walk(schema.items, v, `${path}[${i}]`, kind, out));
      return;
    case 'map':
      if (typeof value === 'object' && !Array.isArray(value)) {
        for (const [k, v] of Object.entries(value)) walk(schema.values, v, `${path}[${JSON.stringify(k)}]`, kind, out);
      }
      return;
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return;
      const obj = value as Record<string, unknown>;
      // Declared fields in schema order, then the unknown ones sorted: the same messages whatever
      // order the apiserver returns the keys in.
      // Own keys only: `constructor` or `toString` in a spec is an unknown field, not Object's.
      const isDeclared = (k: string): boolean => Object.hasOwn(schema.properties, k);
      const declared = Object.keys(schema.properties).filter((k) => Object.hasOwn(obj, k));
      const unknown = Object.keys(obj).filter((k) => !isDeclared(k)).sort();
      for (const k of [...declared, ...unknown]) {
        const v = obj[k];
        const at = `${path}.${k}`;
        const field = isDeclared(k) ? schema.properties[k] : undefined;
        if (field === undefined) {
          out.push({ path: at, problem: 'unknown', message: `${at}: unknown field (${path === 'spec' ? `the ${kind} spec` : path} has no such field); fix its spelling or remove it` });
        } else if (field.unsupported !== undefined && !isUnset(v)) {
          const fix = field.kind === 'boolean' ? 'remove the field or set it to false' : 'remove the field';
          out.push({ path: at, problem: 'unsupported', message: `${at}: ${field.unsupported}; ${fix}` });
        } else {
          walk(field, v, at, kind, out);
        }
      }
      return;
    }
    default:
      return;
  }
}

/**
 * Every field of `spec` that Stowage refuses, as paths under `spec` (`spec.template.hooks` for a
 * Schedule's template). Empty when every field set is one Stowage honours.
 */
export function specFieldProblems(kind: 'Backup' | 'Restore' | 'Schedule', spec: unknown): FieldProblem[] {
  const def = KINDS.find((k) => k.kind === kind);
  if (def === undefined) throw new Error(`unknown kind ${kind}`);
  const out: FieldProblem[] = [];
  walk(def.spec, spec, 'spec', kind, out);
  return out;
}

/** specFieldProblems as validation error lines. */
export function specFieldErrors(kind: 'Backup' | 'Restore' | 'Schedule', spec: unknown): string[] {
  return specFieldProblems(kind, spec).map((p) => p.message);
}
