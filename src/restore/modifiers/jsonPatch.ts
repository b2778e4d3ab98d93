// JSON Patch (RFC 6902) over plain JSON values, with JSON Pointers (RFC 6901). Pure: the input is
// never changed; a failed patch throws and leaves nothing half-applied. As in the json-patch
// library Velero uses, a negative array index counts from the end.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export type PatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: JsonValue }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

export const PATCH_OPERATIONS = ['add', 'remove', 'replace', 'move', 'copy', 'test'] as const;

/** A patch that cannot apply (a missing path, a bad index). */
export class PatchError extends Error {
  override name = 'PatchError';
}

/** A `test` operation that found another value: the patch is not applied (Velero skips the rule). */
export class PatchTestFailed extends PatchError {
  override name = 'PatchTestFailed';
}

/** The reference tokens of a JSON Pointer; '' is the whole document. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`path "${pointer}" is not a JSON Pointer: it must start with "/"`);
  return pointer.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Problems with a pointer's syntax ('' when fine), for validation. */
export function pointerProblem(pointer: string): string | undefined {
  if (pointer !== '' && !pointer.startsWith('/')) return `"${pointer}" is not a JSON Pointer: it must start with "/"`;
  if (/~[^01]|~$/.test(pointer)) return `"${pointer}" has a "~" not followed by 0 or 1`;
  return undefined;
}

const isObject = (v: unknown): v is { [k: string]: JsonValue } => v !== null && typeof v === 'object' && !Array.isArray(v);

function arrayIndex(arr: readonly unknown[], token: string, path: string, forAdd: boolean): number {
  if (forAdd && token === '-') return arr.length;
  if (!/^-?(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`${path}: "${token}" is not an array index`);
  let i = Number(token);
  if (i < 0) {
    if (-i > arr.length) throw new PatchError(`${path}: index ${i} is out of range (length ${arr.length})`);
    i += arr.length;
  }
  const max = forAdd ? arr.length : arr.length - 1;
  if (i > max) throw new PatchError(`${path}: index ${i} is out of range (length ${arr.length})`);
  return i;
}

/** The container holding the pointer's last token, and that token. */
function parentOf(doc: JsonValue, tokens: string[], path: string): { parent: JsonValue; key: string } {
  let cur: JsonValue = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i] as string;
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, t, path, false)] as JsonValue;
    else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t] as JsonValue;
    else throw new PatchError(`${path}: "${tokens.slice(0, i + 1).join('/')}" does not exist`);
  }
  return { parent: cur, key: tokens[tokens.length - 1] as string };
}

/** The value at a pointer; throws PatchError when it does not exist. */
export function getAt(doc: JsonValue, path: string): JsonValue {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return doc;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, key, path, false)] as JsonValue;
  if (isObject(parent) && Object.hasOwn(parent, key)) return parent[key] as JsonValue;
  throw new PatchError(`${path}: does not exist`);
}

function add(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, true), 0, value);
  else if (isObject(parent)) parent[key] = value;
  else throw new PatchError(`${path}: the parent is not an object or array`);
  return doc;
}

function remove(doc: JsonValue, path: string): { doc: JsonValue; removed: JsonValue } {
  const tokens = parsePointer(path);
  if (tokens.length === 0) throw new PatchError('cannot remove the whole document');
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const [removed] = parent.splice(arrayIndex(parent, key, path, false), 1);
    return { doc, removed: removed as JsonValue };
  }
  if (isObject(parent) && Object.hasOwn(parent, key)) {
    const removed = parent[key] as JsonValue;
    delete parent[key];
    return { doc, removed };
  }
  throw new PatchError(`${path}: does not exist`);
}

function replace(doc: JsonValue, path: string, value: JsonValue): JsonValue {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent[arrayIndex(parent, key, path, false)] = value;
  else if (isObject(parent) && Object.hasOwn(parent, key)) parent[key] = value;
  else throw new PatchError(`${path}: does not exist`);
  return doc;
}

/** Deep equality of JSON values (object key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** Applies the operations in order to a copy of `doc`. Throws PatchTestFailed or PatchError. */
export function applyJsonPatch<T>(doc: T, ops: readonly PatchOperation[]): T {
  let cur = structuredClone(doc) as JsonValue;
  for (const [i, op] of ops.entries()) {
    const at = `operation ${i} (${op.op} ${op.path})`;
    try {
      switch (op.op) {
        case 'add':
          cur = add(cur, op.path, structuredClone(op.value));
          break;
        case 'remove':
          cur = remove(cur, op.path).doc;
          break;
        case 'replace':
          cur = replace(cur, op.path, structuredClone(op.value));
          break;
        case 'move': {
          if (op.path.startsWith(`${op.from}/`)) throw new PatchError(`cannot move "${op.from}" into its own child "${op.path}"`);
          const r = remove(cur, op.from);
          cur = add(r.doc, op.path, r.removed);
          break;
        }
        case 'copy':
          cur = add(cur, op.path, structuredClone(getAt(cur, op.from)));
          break;
        case 'test': {
          let found: JsonValue;
          try {
            found = getAt(cur, op.path);
          } catch (err) {
            if (err instanceof PatchError) throw new PatchTestFailed(`${op.path} does not exist`);
            throw err;
          }
          if (!jsonEqual(found, op.value)) throw new PatchTestFailed(`${op.path} is ${JSON.stringify(found)}, not ${JSON.stringify(op.value)}`);
          break;
        }
      }
    } catch (err) {
      if (err instanceof PatchTestFailed) throw new PatchTestFailed(`${at}: ${err.message}`);
      if (err instanceof PatchError) throw new PatchError(`${at}: ${err.message}`);
      throw err;
    }
  }
  return cur as T;
}
