// Item patches for ExecuteBatch: a plugin sends what its action changed in an item, not the whole
// item, and the host applies that to the object it sent. Most actions change a few fields (an
// annotation, a label); the host is spared parsing each returned item and the garbage of a second
// copy of every page, and the unchanged parts stay the objects it listed.
//
// Wire form (item_actions.proto, BackupItemActionBatchResult.item_patch): a JSON array of
// operations, [path, value] to set and [path] to delete a key, where a path is a non-empty array of
// object keys. Arrays are compared and replaced whole. Applying the patch to the item as sent gives
// what JSON.stringify of the action's output would have given.

/** One operation: set `path` to a value, or delete `path` when there is no value. */
export type PatchOp = [path: string[], value?: unknown];

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Values JSON.stringify leaves out of an object. */
const omitted = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';
/** An object JSON.stringify writes through its toJSON (a Date): compared as a leaf, not key by key. */
const hasToJSON = (v: Obj): boolean => typeof v.toJSON === 'function';

/**
 * The operations that turn `before` into `after`. `before` must be a pristine copy of the item as
 * sent (an action may have changed its own input in place); parts of `after` that are the very
 * objects of `before` are skipped without a walk.
 */
export function diffItem(before: Obj, after: Obj): PatchOp[] {
  const ops: PatchOp[] = [];
  diffObjects(before, after, [], ops);
  return ops;
}

function diffObjects(before: Obj, after: Obj, path: string[], ops: PatchOp[]): void {
  for (const k of Object.keys(after)) {
    const a = after[k];
    if (omitted(a)) continue;
    if (!Object.hasOwn(before, k)) {
      ops.push([[...path, k], a]);
      continue;
    }
    const b = before[k];
    if (a === b) continue;
    if (isObject(a) && isObject(b) && !hasToJSON(a)) diffObjects(b, a, [...path, k], ops);
    else if (!jsonEqual(b, a)) ops.push([[...path, k], a]);
  }
  for (const k of Object.keys(before)) {
    if (!Object.hasOwn(after, k) || omitted(after[k])) ops.push([[...path, k]]);
  }
}

/** Whether `after` stringifies to the JSON that `before` (parsed JSON) came from; false when unsure. */
function jsonEqual(before: unknown, after: unknown): boolean {
  if (before === after) return true;
  if (typeof after !== 'object' || after === null || typeof before !== 'object' || before === null) return false;
  if (Array.isArray(after)) {
    if (!Array.isArray(before) || before.length !== after.length) return false;
    for (let i = 0; i < after.length; i++) if (!jsonEqual(before[i], after[i])) return false;
    return true;
  }
  if (Array.isArray(before) || hasToJSON(after as Obj)) return false;
  const a = after as Obj;
  const b = before as Obj;
  let n = 0;
  for (const k of Object.keys(a)) {
    if (omitted(a[k])) continue;
    if (!Object.hasOwn(b, k) || !jsonEqual(b[k], a[k])) return false;
    n++;
  }
  return n === Object.keys(b).length;
}

/** A patch that cannot be applied; the message says which operation and why. */
export class PatchError extends Error {}

/**
 * `base` with `patch` (the wire JSON) applied. `base` is not changed: the objects on each changed
 * path are copied, everything else is shared with it.
 */
export function applyItemPatch<T extends object>(base: T, patch: unknown): T {
  if (!Array.isArray(patch)) throw new PatchError('the patch is not a JSON array');
  if (patch.length === 0) return base;
  const copies = new Set<Obj>();
  const own = (o: Obj): Obj => {
    if (copies.has(o)) return o;
    const c = { ...o };
    copies.add(c);
    return c;
  };
  const root = own(base as Obj);
  patch.forEach((op: unknown, i) => {
    const path = pathOf(op, i);
    let parent = root;
    for (let d = 0; d < path.length - 1; d++) {
      const key = path[d] as string;
      const child = Object.hasOwn(parent, key) ? parent[key] : undefined;
      if (!isObject(child)) throw new PatchError(`operation ${i}: ${JSON.stringify(path.slice(0, d + 1))} is not an object in the item`);
      const c = own(child);
      setOwn(parent, key, c);
      parent = c;
    }
    const last = path[path.length - 1] as string;
    if ((op as unknown[]).length === 2) setOwn(parent, last, (op as unknown[])[1]);
    else delete parent[last];
  });
  return root as T;
}

function pathOf(op: unknown, i: number): string[] {
  if (!Array.isArray(op) || (op.length !== 1 && op.length !== 2)) throw new PatchError(`operation ${i} is not [path] or [path, value]`);
  const path: unknown = op[0];
  if (!Array.isArray(path) || path.length === 0 || !path.every((k) => typeof k === 'string')) {
    throw new PatchError(`operation ${i}: the path is not a non-empty array of keys`);
  }
  return path as string[];
}

/** Sets an own data property, so a "__proto__" key stays an ordinary key (as JSON.parse makes it). */
function setOwn(o: Obj, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
  else o[key] = value;
}
