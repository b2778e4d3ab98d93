// A strategic-merge-like patch (kubectl patch --type strategic) without Kubernetes' Go schemas:
// maps merge as in a merge patch, and the lists Kubernetes merges by key (containers by name,
// volumeMounts by mountPath, ports by containerPort or port, ...) merge element by element instead
// of being replaced. Lists not in the table are replaced, as Kubernetes does for atomic lists. The
// directives `$patch` (replace, delete, merge), `$retainKeys`, `$setElementOrder/<list>` and
// `$deleteFromPrimitiveList/<list>` are honoured. Pure: returns a new value.
import { jsonEqual, PatchError, type JsonValue } from './jsonPatch.js';

type JsonMap = { [k: string]: JsonValue };
const isObject = (v: unknown): v is JsonMap => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The merge key of a list field, from the Kubernetes API types' patchMergeKey tags. */
function mergeKeyOf(field: string, parentField: string | undefined): string | undefined {
  switch (field) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'volumes':
    case 'env':
    case 'imagePullSecrets':
    case 'schedulingGates':
    case 'resourceClaims':
      return 'name';
    case 'volumeMounts':
      return 'mountPath';
    case 'volumeDevices':
      return 'devicePath';
    case 'hostAliases':
      return 'ip';
    case 'topologySpreadConstraints':
      return 'topologyKey';
    case 'conditions':
      return 'type';
    case 'ownerReferences':
      return 'uid';
    case 'ports':
      // A container's ports merge by containerPort, a Service's by port.
      return parentField === 'containers' || parentField === 'initContainers' || parentField === 'ephemeralContainers' ? 'containerPort' : 'port';
    default:
      return undefined;
  }
}

/** Primitive lists Kubernetes merges as sets (patchStrategy merge). */
const MERGED_PRIMITIVE_LISTS = new Set(['finalizers']);

const SET_ORDER = '$setElementOrder/';
const DELETE_FROM = '$deleteFromPrimitiveList/';

/** Applies `patch` to `original`; throws PatchError for a malformed directive or list element. */
export function applyStrategicPatch(original: JsonValue | undefined, patch: JsonValue): JsonValue {
  return mergeValue(original, patch, []);
}

function mergeValue(original: JsonValue | undefined, patch: JsonValue, fields: string[]): JsonValue {
  if (!isObject(patch)) return structuredClone(patch);
  return mergeMap(isObject(original) ? original : undefined, patch, fields);
}

function mergeMap(original: JsonMap | undefined, patch: JsonMap, fields: string[]): JsonMap {
  const where = fields.length === 0 ? 'the object' : fields.join('.');
  const directive = patch.$patch;
  if (directive === 'replace') {
    const { $patch: _drop, ...rest } = patch;
    return mergeMap(undefined, rest, fields);
  }
  if (directive !== undefined && directive !== 'merge') throw new PatchError(`${where}: $patch "${String(directive)}" is not allowed here (use replace or merge, or delete in a list element)`);
  const out: JsonMap = original === undefined ? {} : { ...original };
  const retain = patch.$retainKeys;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith(SET_ORDER)) continue;
    if (k.startsWith(DELETE_FROM)) {
      const field = k.slice(DELETE_FROM.length);
      if (!Array.isArray(v)) throw new PatchError(`${where}: ${k} must be a list`);
      const cur = out[field];
      if (Array.isArray(cur)) out[field] = cur.filter((x) => !v.some((d) => jsonEqual(d, x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    if (Array.isArray(v)) out[k] = mergeList(out[k], v, k, [...fields, k]);
    else out[k] = mergeValue(out[k], v, [...fields, k]);
  }
  for (const [k, order] of Object.entries(patch)) {
    if (!k.startsWith(SET_ORDER)) continue;
    const field = k.slice(SET_ORDER.length);
    const list = out[field];
    if (!Array.isArray(order)) throw new PatchError(`${where}: ${k} must be a list`);
    if (Array.isArray(list)) out[field] = orderList(list, order, mergeKeyOf(field, fields[fields.length - 1]));
  }
  if (retain !== undefined) {
    if (!Array.isArray(retain) || !retain.every((x) => typeof x === 'string')) throw new PatchError(`${where}: $retainKeys must be a list of field names`);
    for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  }
  return out;
}

function mergeList(original: JsonValue | undefined, patch: JsonValue[], field: string, fields: string[]): JsonValue[] {
  const cur = Array.isArray(original) ? original : [];
  const parentField = fields.length >= 2 ? fields[fields.length - 2] : undefined;
  const key = mergeKeyOf(field, parentField);
  if (patch.some((e) => isObject(e) && e.$patch === 'replace')) {
    return patch.filter((e) => !(isObject(e) && e.$patch === 'replace')).map((e) => stripDirectives(e));
  }
  if (key === undefined) {
    if (MERGED_PRIMITIVE_LISTS.has(field)) return [...cur, ...patch.filter((p) => !cur.some((c) => jsonEqual(c, p)))];
    return patch.map((e) => stripDirectives(e));
  }
  const out = [...cur];
  for (const [i, el] of patch.entries()) {
    if (!isObject(el) || !Object.hasOwn(el, key)) throw new PatchError(`${fields.join('.')}[${i}]: an element of ${field} must be an object with its merge key "${key}"`);
    const at = out.findIndex((c) => isObject(c) && jsonEqual(c[key], el[key]));
    if (el.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    if (at >= 0) out[at] = mergeMap(out[at] as JsonMap, el, fields);
    else out.push(mergeMap(undefined, el, fields));
  }
  return out;
}

function stripDirectives(v: JsonValue): JsonValue {
  if (!isObject(v)) return structuredClone(v);
  return mergeMap(undefined, v, []);
}

/** Puts the list in the order `$setElementOrder` gives; elements it does not name keep their place after. */
function orderList(list: JsonValue[], order: JsonValue[], key: string | undefined): JsonValue[] {
  const keyOf = (e: JsonValue): JsonValue => (key !== undefined && isObject(e) ? (e[key] ?? null) : e);
  const wanted = order.map((o) => (key !== undefined && isObject(o) ? (o[key] ?? null) : o));
  const placed: JsonValue[] = [];
  for (const w of wanted) {
    const found = list.find((e) => jsonEqual(keyOf(e), w));
    if (found !== undefined && !placed.includes(found)) placed.push(found);
  }
  return [...placed, ...list.filter((e) => !placed.includes(e))];
}
