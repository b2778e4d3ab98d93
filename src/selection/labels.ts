// Kubernetes label selectors: matching, the string form used in `?labelSelector=`, parsing the
// CLI's `--selector` text, and validation with precise messages.

export type { LabelSelector, LabelSelectorOperator, LabelSelectorRequirement } from '../apis/v1/index.js';
import type { LabelSelector, LabelSelectorRequirement } from '../apis/v1/index.js';

export type Labels = Readonly<Record<string, string>> | undefined | null;

/**
 * Whether labels satisfy the selector. An absent or empty selector matches everything; an
 * unknown operator matches nothing (validation reports it).
 */
export function labelSelectorMatches(selector: LabelSelector | undefined | null, labels: Labels): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (!Object.hasOwn(l, k) || l[k] !== v) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        if (!has || !values.includes(l[req.key] ?? '')) return false;
        break;
      case 'NotIn':
        // As in Kubernetes: a missing label satisfies NotIn.
        if (has && values.includes(l[req.key] ?? '')) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** True when any selector matches (Backup.spec.orLabelSelectors); an empty list matches everything. */
export function anyLabelSelectorMatches(selectors: readonly LabelSelector[] | undefined | null, labels: Labels): boolean {
  if (!selectors || selectors.length === 0) return true;
  return selectors.some((s) => labelSelectorMatches(s, labels));
}

/** The selector in Kubernetes string form (`a=b,c in (x,y),!d`), '' for an empty selector. */
export function labelSelectorToString(selector: LabelSelector | undefined | null): string {
  if (!selector) return '';
  const parts: Array<{ key: string; text: string }> = [];
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) parts.push({ key: k, text: `${k}=${v}` });
  for (const req of selector.matchExpressions ?? []) {
    const values = [...(req.values ?? [])].sort();
    switch (req.operator) {
      case 'In':
        parts.push({ key: req.key, text: `${req.key} in (${values.join(',')})` });
        break;
      case 'NotIn':
        parts.push({ key: req.key, text: `${req.key} notin (${values.join(',')})` });
        break;
      case 'Exists':
        parts.push({ key: req.key, text: req.key });
        break;
      case 'DoesNotExist':
        parts.push({ key: req.key, text: `!${req.key}` });
        break;
      default:
        throw new Error(`label selector operator "${String(req.operator)}" for key "${req.key}" has no string form`);
    }
  }
  // Sorted by key like the apiserver's own rendering; stable for equal keys.
  return parts
    .map((p, i) => ({ ...p, i }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.i - b.i))
    .map((p) => p.text)
    .join(',');
}

export class LabelSelectorParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabelSelectorParseError';
  }
}

/**
 * Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h` into a LabelSelector. Equality goes to matchLabels
 * (a repeated key becomes an `In` expression so the meaning is kept); everything else to
 * matchExpressions. Throws LabelSelectorParseError naming the position.
 */
export function parseLabelSelector(text: string): LabelSelector {
  const sc = scanner(text);
  const parsed: Parsed = { matchLabels: {}, matchExpressions: [] };
  sc.skipSpace();
  if (sc.i >= text.length) return {};
  for (;;) {
    requirement(sc, parsed);
    sc.skipSpace();
    if (sc.i >= text.length) break;
    if (text[sc.i] !== ',') sc.fail(`expected "," between requirements, found "${text[sc.i]}"`);
    sc.i++;
  }
  const out: LabelSelector = {};
  if (Object.keys(parsed.matchLabels).length > 0) out.matchLabels = parsed.matchLabels;
  if (parsed.matchExpressions.length > 0) out.matchExpressions = parsed.matchExpressions;
  return out;
}

interface Parsed {
  matchLabels: Record<string, string>;
  matchExpressions: LabelSelectorRequirement[];
}

/** A position in a selector's text, and the reads the parser makes from there. */
interface Scanner {
  readonly src: string;
  i: number;
  /** Throws LabelSelectorParseError naming the position (`at`, else the current one). */
  fail(reason: string, at?: number): never;
  skipSpace(): void;
  /** A key or an operator; fails naming `what` when there is none. */
  word(what: string): string;
  /** A value, possibly empty. */
  value(): string;
}

const isWordChar = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_.\-/]/.test(c);

function scanner(src: string): Scanner {
  const sc: Scanner = {
    src,
    i: 0,
    fail: (reason, at = sc.i) => {
      throw new LabelSelectorParseError(`label selector "${src}": ${reason} at position ${at + 1}`);
    },
    skipSpace: () => {
      while (sc.i < src.length && /\s/.test(src[sc.i] ?? '')) sc.i++;
    },
    word: (what) => {
      sc.skipSpace();
      const start = sc.i;
      const w = sc.value();
      if (w === '') sc.fail(`expected ${what}${sc.i < src.length ? `, found "${src[sc.i]}"` : ', found the end'}`, start);
      return w;
    },
    value: () => {
      sc.skipSpace();
      const start = sc.i;
      while (isWordChar(src[sc.i])) sc.i++;
      return src.slice(start, sc.i);
    },
  };
  return sc;
}

/** One requirement: `!key`, `key`, `key=v`, `key==v`, `key!=v`, `key in (...)` or `key notin (...)`. */
function requirement(sc: Scanner, out: Parsed): void {
  const { src } = sc;
  sc.skipSpace();
  if (src[sc.i] === '!') {
    sc.i++;
    const key = sc.word('a label key after "!"');
    checkKey(key, sc.fail);
    out.matchExpressions.push({ key, operator: 'DoesNotExist' });
    return;
  }
  const keyStart = sc.i;
  const key = sc.word('a label key');
  checkKey(key, sc.fail, keyStart);
  sc.skipSpace();
  const c = src[sc.i];
  if (c === '=' || (c === '!' && src[sc.i + 1] === '=')) {
    const negate = c === '!';
    sc.i += negate ? 2 : src[sc.i + 1] === '=' ? 2 : 1;
    const valStart = sc.i;
    const v = sc.value();
    checkValue(v, sc.fail, valStart);
    if (negate) out.matchExpressions.push({ key, operator: 'NotIn', values: [v] });
    else if (Object.hasOwn(out.matchLabels, key)) out.matchExpressions.push({ key, operator: 'In', values: [v] });
    else out.matchLabels[key] = v;
  } else if (c !== undefined && c !== ',' && isWordChar(c)) {
    setRequirement(sc, out, key, keyStart);
  } else {
    out.matchExpressions.push({ key, operator: 'Exists' });
  }
}

/** `key in (a,b)` or `key notin (a,b)`, read from the operator on. */
function setRequirement(sc: Scanner, out: Parsed, key: string, keyStart: number): void {
  const { src } = sc;
  const opStart = sc.i;
  const op = sc.word('an operator');
  if (op !== 'in' && op !== 'notin') {
    // `bad key!=v`: a key with a space in it, not an operator; say what is wrong with that key.
    const after = sc.i;
    sc.skipSpace();
    if (src[sc.i] === '=' || (src[sc.i] === '!' && src[sc.i + 1] === '=')) checkKey(src.slice(keyStart, after), sc.fail, keyStart);
    sc.fail(`unknown operator "${op}" (use =, ==, !=, in, notin)`, opStart);
  }
  sc.skipSpace();
  if (src[sc.i] !== '(') sc.fail(`expected "(" after "${op}"`);
  sc.i++;
  const values: string[] = [];
  for (;;) {
    sc.skipSpace();
    const valStart = sc.i;
    const v = sc.value();
    if (v !== '') checkValue(v, sc.fail, valStart);
    values.push(v);
    sc.skipSpace();
    if (src[sc.i] === ',') {
      sc.i++;
      continue;
    }
    if (src[sc.i] === ')') {
      sc.i++;
      break;
    }
    sc.fail(`expected "," or ")" in the values of "${key}"`);
  }
  if (values.length === 1 && values[0] === '') sc.fail(`"${op}" needs at least one value`, opStart);
  out.matchExpressions.push({ key, operator: op === 'in' ? 'In' : 'NotIn', values });
}

function checkKey(key: string, fail: (reason: string, at?: number) => never, at?: number): void {
  const problem = labelKeyProblem(key);
  if (problem) fail(problem, at);
}

function checkValue(v: string, fail: (reason: string, at?: number) => never, at?: number): void {
  const problem = labelValueProblem(v);
  if (problem) fail(problem, at);
}

const NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a label key is invalid, or undefined when it is valid (`[prefix/]name`). */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined) {
    if (prefix === '') return `label key "${key}" has an empty prefix before "/"`;
    if (prefix.length > 253 || !DNS_SUBDOMAIN_RE.test(prefix))
      return `label key "${key}" has prefix "${prefix}", which is not a DNS subdomain`;
  }
  if (name === '') return `label key "${key}" has an empty name`;
  if (name.length > 63) return `label key "${key}" has a name longer than 63 characters`;
  if (!NAME_RE.test(name))
    return `label key "${key}" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric`;
  return undefined;
}

/** Why a label value is invalid, or undefined when it is valid ('' is valid). */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63) return `label value "${value}" is longer than 63 characters`;
  if (!NAME_RE.test(value))
    return `label value "${value}" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric`;
  return undefined;
}

/** Loosely typed input: selectors read from the cluster may hold anything. */
export interface UncheckedLabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] | null }> | null;
}

/** Every problem in a selector, each prefixed with its field path (e.g. `orLabelSelectors[1].matchExpressions[0]`). */
export function validateLabelSelector(selector: UncheckedLabelSelector | undefined | null, path: string): string[] {
  if (!selector) return [];
  const problems: string[] = [];
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    const kp = labelKeyProblem(k);
    if (kp) problems.push(`${path}.matchLabels: ${kp}`);
    if (typeof v !== 'string') problems.push(`${path}.matchLabels["${k}"]: value must be a string`);
    else {
      const vp = labelValueProblem(v);
      if (vp) problems.push(`${path}.matchLabels["${k}"]: ${vp}`);
    }
  }
  (selector.matchExpressions ?? []).forEach((req, idx) => {
    const at = `${path}.matchExpressions[${idx}]`;
    const kp = labelKeyProblem(req.key ?? '');
    if (kp) problems.push(`${at}: ${kp}`);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) problems.push(`${at}: operator ${req.operator} needs at least one value`);
        for (const v of values) {
          const vp = labelValueProblem(v);
          if (vp) problems.push(`${at}: ${vp}`);
        }
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) problems.push(`${at}: operator ${req.operator} must not have values`);
        break;
      default:
        problems.push(`${at}: unknown operator "${String(req.operator)}" (use In, NotIn, Exists or DoesNotExist)`);
    }
  });
  return problems;
}

/** True when the selector selects by nothing (absent, or no labels and no expressions). */
export function isEmptyLabelSelector(selector: LabelSelector | UncheckedLabelSelector | undefined | null): boolean {
  if (!selector) return true;
  return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}
