// Resource modifier rules in Velero's format (version v1, resourceModifierRules with conditions and
// one kind of patch each), parsed and validated up front: every problem is reported with the rule's
// index, so a Restore naming a bad rule file fails validation instead of failing items later.
import YAML from 'yaml';
import { namespaceEntryProblem, namespaceFilter, type NamespaceFilter } from '../../selection/filters.js';
import { validateLabelSelector, type LabelSelector } from '../../selection/labels.js';
import { compileGroupResourceGlob } from './glob.js';
import { PATCH_OPERATIONS, pointerProblem, type JsonValue, type PatchOperation } from './jsonPatch.js';

export type PatchKind = 'patches' | 'mergePatches' | 'strategicPatches';

export interface ModifierRule {
  /** Position in resourceModifierRules (0-based), as messages name it. */
  index: number;
  groupResource: string;
  matchesGroupResource: RegExp;
  /** Matched against the source namespace; absent: every namespace. Cluster-scoped items ignore it. */
  namespaces: NamespaceFilter | undefined;
  nameRegex: RegExp | undefined;
  labelSelector: LabelSelector | undefined;
  /** conditions.matches as JSON Patch tests: all must hold. */
  matches: PatchOperation[];
  kind: PatchKind;
  /** The JSON Patch (patches), or the merge or strategic patch documents, in order. */
  jsonPatch: PatchOperation[];
  documents: JsonValue[];
}

export interface ResourceModifiers {
  /** Where the rules came from, for messages: `ConfigMap stowage/mods`. */
  source: string;
  rules: ModifierRule[];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function unknownKeys(v: Record<string, unknown>, allowed: readonly string[], at: string): string[] {
  return Object.keys(v).filter((k) => !allowed.includes(k)).map((k) => `${at}: unknown field "${k}" (allowed: ${allowed.join(', ')})`);
}

/**
 * A patch value as Velero reads it: a string is JSON when it looks like JSON (null, true/false in
 * any case, a number, or text starting with { or [), text in double quotes is that text, anything
 * else is the string itself. YAML numbers, booleans and objects are taken as they are.
 */
export function patchValue(v: unknown, at: string): JsonValue {
  if (typeof v !== 'string') {
    if (v === undefined) return '';
    return v as JsonValue;
  }
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) return v.slice(1, -1);
  if (v === 'null') return null;
  const lower = v.toLowerCase();
  if (lower === 'true' || lower === 'false') return lower === 'true';
  if (v.startsWith('{') || v.startsWith('[')) {
    try {
      return JSON.parse(v) as JsonValue;
    } catch (err) {
      throw new Error(`${at}: the value starts like JSON but is not: ${(err as Error).message}`);
    }
  }
  if (/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(v)) return Number(v);
  return v;
}

/** A resourceNameRegex (Go RE2 syntax) as a JavaScript RegExp; leading `(?flags)` become flags. */
function compileNameRegex(src: string): RegExp {
  // RE2 escapes JavaScript would read as a plain letter without the u flag: refused, not matched differently.
  const foreign = /\\[zCQEpP]/.exec(src.replace(/\\\\/g, ''));
  if (foreign !== null) throw new Error(`${foreign[0]} is RE2 syntax with no JavaScript equivalent here`);
  const m = /^\(\?([imsU]+)\)/.exec(src);
  if (m === null) return new RegExp(src);
  const flags = m[1] as string;
  if (flags.includes('U')) throw new Error('the U (ungreedy) flag has no JavaScript equivalent');
  return new RegExp(src.slice(m[0].length), [...new Set(flags)].join(''));
}

function parsePatch(p: unknown, at: string, errors: string[]): PatchOperation | undefined {
  if (!isObject(p)) {
    errors.push(`${at}: must be an object with operation and path`);
    return undefined;
  }
  errors.push(...unknownKeys(p, ['operation', 'path', 'value', 'from'], at));
  const op = typeof p.operation === 'string' ? p.operation.toLowerCase() : '';
  if (op === '') {
    errors.push(`${at}.operation is required`);
    return undefined;
  }
  if (!(PATCH_OPERATIONS as readonly string[]).includes(op)) {
    errors.push(`${at}.operation: unsupported operation "${String(p.operation)}" (use ${PATCH_OPERATIONS.join(', ')})`);
    return undefined;
  }
  if (typeof p.path !== 'string' || p.path === '') {
    errors.push(`${at}.path is required`);
    return undefined;
  }
  const pp = pointerProblem(p.path);
  if (pp !== undefined) errors.push(`${at}.path: ${pp}`);
  if (op === 'move' || op === 'copy') {
    if (typeof p.from !== 'string' || p.from === '') {
      errors.push(`${at}.from is required for ${op}`);
      return undefined;
    }
    const fp = pointerProblem(p.from);
    if (fp !== undefined) errors.push(`${at}.from: ${fp}`);
    return { op, from: p.from, path: p.path };
  }
  if (op === 'remove') return { op, path: p.path };
  try {
    return { op: op as 'add' | 'replace' | 'test', path: p.path, value: patchValue(p.value, `${at}.value`) };
  } catch (err) {
    errors.push((err as Error).message);
    return undefined;
  }
}

function parseDocument(d: unknown, at: string, errors: string[]): JsonValue | undefined {
  if (!isObject(d)) {
    errors.push(`${at}: must be an object with patchData`);
    return undefined;
  }
  errors.push(...unknownKeys(d, ['patchData'], at));
  if (typeof d.patchData !== 'string' || d.patchData.trim() === '') {
    errors.push(`${at}.patchData is required (a JSON or YAML document)`);
    return undefined;
  }
  let doc: unknown;
  try {
    doc = YAML.parse(d.patchData);
  } catch (err) {
    errors.push(`${at}.patchData is neither JSON nor YAML: ${(err as Error).message.split('\n')[0] ?? ''}`);
    return undefined;
  }
  if (!isObject(doc)) {
    errors.push(`${at}.patchData must be an object`);
    return undefined;
  }
  return doc as JsonValue;
}

function parseConditions(c: unknown, at: string, errors: string[]): Omit<ModifierRule, 'index' | 'kind' | 'jsonPatch' | 'documents'> | undefined {
  if (!isObject(c)) {
    errors.push(`${at} is required, with at least groupResource`);
    return undefined;
  }
  errors.push(...unknownKeys(c, ['groupResource', 'resourceNameRegex', 'namespaces', 'labelSelector', 'matches'], at));
  let glob: RegExp | undefined;
  if (typeof c.groupResource !== 'string' || c.groupResource === '') errors.push(`${at}.groupResource is required`);
  else {
    try {
      glob = compileGroupResourceGlob(c.groupResource);
    } catch (err) {
      errors.push(`${at}.groupResource: ${(err as Error).message}`);
    }
  }
  let nameRegex: RegExp | undefined;
  if (c.resourceNameRegex !== undefined && c.resourceNameRegex !== null && c.resourceNameRegex !== '') {
    if (typeof c.resourceNameRegex !== 'string') errors.push(`${at}.resourceNameRegex must be a string`);
    else {
      try {
        nameRegex = compileNameRegex(c.resourceNameRegex);
      } catch (err) {
        errors.push(`${at}.resourceNameRegex: ${(err as Error).message}`);
      }
    }
  }
  let namespaces: NamespaceFilter | undefined;
  if (c.namespaces !== undefined && c.namespaces !== null) {
    if (!Array.isArray(c.namespaces) || !c.namespaces.every((n) => typeof n === 'string')) errors.push(`${at}.namespaces must be a list of namespace names`);
    else {
      // The same entries as includedNamespaces: a pattern that is not valid would match nothing silently.
      const bad = (c.namespaces as string[]).flatMap((n, i) => {
        const why = namespaceEntryProblem(n);
        return why === undefined ? [] : [`${at}.namespaces[${i}]: "${n}" ${why}`];
      });
      errors.push(...bad);
      if (bad.length === 0 && c.namespaces.length > 0) namespaces = namespaceFilter(c.namespaces as string[], []);
    }
  }
  let labelSelector: LabelSelector | undefined;
  if (c.labelSelector !== undefined && c.labelSelector !== null) {
    if (!isObject(c.labelSelector)) errors.push(`${at}.labelSelector must be an object`);
    else {
      errors.push(...unknownKeys(c.labelSelector, ['matchLabels', 'matchExpressions'], `${at}.labelSelector`));
      errors.push(...validateLabelSelector(c.labelSelector as LabelSelector, `${at}.labelSelector`));
      labelSelector = c.labelSelector as LabelSelector;
    }
  }
  const matches: PatchOperation[] = [];
  if (c.matches !== undefined && c.matches !== null) {
    if (!Array.isArray(c.matches)) errors.push(`${at}.matches must be a list of {path, value}`);
    else {
      c.matches.forEach((m: unknown, j) => {
        const mat = `${at}.matches[${j}]`;
        if (!isObject(m)) return errors.push(`${mat}: must be an object with path and value`);
        errors.push(...unknownKeys(m, ['path', 'value'], mat));
        if (typeof m.path !== 'string' || m.path === '') return errors.push(`${mat}.path is required`);
        const pp = pointerProblem(m.path);
        if (pp !== undefined) return errors.push(`${mat}.path: ${pp}`);
        try {
          matches.push({ op: 'test', path: m.path, value: patchValue(m.value, `${mat}.value`) });
        } catch (err) {
          errors.push((err as Error).message);
        }
        return undefined;
      });
    }
  }
  if (glob === undefined || typeof c.groupResource !== 'string') return undefined;
  return { groupResource: c.groupResource, matchesGroupResource: glob, namespaces, nameRegex, labelSelector, matches };
}

function parseRule(r: unknown, index: number, errors: string[]): ModifierRule | undefined {
  const at = `resourceModifierRules[${index}]`;
  if (!isObject(r)) {
    errors.push(`${at}: must be an object with conditions and patches`);
    return undefined;
  }
  const before = errors.length;
  errors.push(...unknownKeys(r, ['conditions', 'patches', 'mergePatches', 'strategicPatches'], at));
  const conditions = parseConditions(r.conditions, `${at}.conditions`, errors);
  const kinds = (['patches', 'mergePatches', 'strategicPatches'] as const).filter((k) => Array.isArray(r[k]) && (r[k] as unknown[]).length > 0);
  for (const k of ['patches', 'mergePatches', 'strategicPatches'] as const) {
    if (r[k] !== undefined && r[k] !== null && !Array.isArray(r[k])) errors.push(`${at}.${k} must be a list`);
  }
  if (kinds.length === 0) errors.push(`${at}: no patch: give patches, mergePatches or strategicPatches`);
  if (kinds.length > 1) errors.push(`${at}: only one of patches, mergePatches and strategicPatches may be given (it has ${kinds.join(' and ')})`);
  const kind = kinds[0] ?? 'patches';
  const jsonPatch: PatchOperation[] = [];
  const documents: JsonValue[] = [];
  const list = (r[kind] ?? []) as unknown[];
  list.forEach((p, j) => {
    const where = `${at}.${kind}[${j}]`;
    if (kind === 'patches') {
      const op = parsePatch(p, where, errors);
      if (op !== undefined) jsonPatch.push(op);
    } else {
      const doc = parseDocument(p, where, errors);
      if (doc !== undefined) documents.push(doc);
    }
  });
  if (errors.length > before || conditions === undefined) return undefined;
  return { index, ...conditions, kind, jsonPatch, documents };
}

/**
 * Parses a resource modifier ConfigMap's data: exactly one entry (any key), a YAML or JSON document
 * in Velero's format. Returns the rules, or every problem found, each naming where it is.
 */
export function parseResourceModifiers(data: Readonly<Record<string, string>> | undefined, source: string): { modifiers: ResourceModifiers } | { errors: string[] } {
  const entries = Object.entries(data ?? {});
  if (entries.length !== 1) {
    return { errors: [`${source} must hold exactly one data entry, the rules file (it has ${entries.length === 0 ? 'none' : entries.map(([k]) => `"${k}"`).join(', ')})`] };
  }
  const [key, text] = entries[0] as [string, string];
  const at = `${source}, data "${key}"`;
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (err) {
    return { errors: [`${at} is not YAML: ${(err as Error).message.split('\n')[0] ?? ''}`] };
  }
  if (!isObject(doc)) return { errors: [`${at} must be an object with version and resourceModifierRules`] };
  const errors = unknownKeys(doc, ['version', 'resourceModifierRules'], at);
  if (typeof doc.version !== 'string' || doc.version.toLowerCase() !== 'v1') errors.push(`${at}: unsupported version ${JSON.stringify(doc.version ?? null)} (only v1)`);
  const rules: ModifierRule[] = [];
  if (!Array.isArray(doc.resourceModifierRules) || doc.resourceModifierRules.length === 0) errors.push(`${at}: resourceModifierRules must be a non-empty list`);
  else {
    const ruleErrors: string[] = [];
    doc.resourceModifierRules.forEach((r: unknown, i) => {
      const rule = parseRule(r, i, ruleErrors);
      if (rule !== undefined) rules.push(rule);
    });
    errors.push(...ruleErrors.map((e) => `${at}: ${e}`));
  }
  return errors.length > 0 ? { errors } : { modifiers: { source, rules } };
}
