// How a restored item relates to an object that already exists: the JSON merge patch that would
// make the live object match the backup. An empty patch means the object already matches, and is
// skipped silently whatever the policy.
//
// Rules (documented in the README of the restore, and tested):
// - Fields the item sets are set; arrays are replaced whole unless every element of the item's
//   array is contained in the live one (the apiserver adds defaults inside elements).
// - A live field the item does not have is removed only when the backed-up original did not have
//   it either: it was added after the backup. A field the original had but the restore cleared
//   (a Service's clusterIP, a Pod's nodeName) is assigned by the cluster, so the live value stays.
// - Only labels and annotations of metadata are compared; status never (it has its own subresource).
// - Stowage's own backup-name/restore-name labels do not count as a difference.
// - Annotations that hold status or controller state (maintained.ts, CONTROLLER_ANNOTATIONS: an
//   autoscaling/v1 HPA's conditions, a Deployment's revision, ...) are neither compared nor patched,
//   nor are fields a controller writes (maintained.ts, controllerFields: an aggregated ClusterRole's rules).
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME } from '../apis/v1/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { getOwn, setOwn } from '../util/own.js';
import { controllerFields, withoutControllerAnnotations } from './maintained.js';
import { isRecord, type JsonObject } from './objects.js';

const OWN_LABELS = [LABEL_BACKUP_NAME, LABEL_RESTORE_NAME];

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Whether `want` is contained in `have`: equal scalars, records whose keys all match, arrays element by element. */
export function containedIn(want: unknown, have: unknown): boolean {
  if (Array.isArray(want)) return Array.isArray(have) && want.length === have.length && want.every((w, i) => containedIn(w, have[i]));
  if (isRecord(want)) return isRecord(have) && Object.keys(want).every((k) => Object.hasOwn(have, k) && containedIn(want[k], have[k]));
  return deepEqual(want, have);
}

// Keys are data (a ConfigMap may hold `__proto__`): read and written as own properties only.
function diff(have: JsonObject, want: JsonObject, original: JsonObject | undefined): JsonObject {
  const patch: JsonObject = {};
  for (const [k, w] of Object.entries(want)) {
    const h = getOwn(have, k);
    const o = getOwn(original, k);
    if (isRecord(w) && isRecord(h)) {
      const sub = diff(h, w, isRecord(o) ? o : undefined);
      if (Object.keys(sub).length > 0) setOwn(patch, k, sub);
    } else if (!containedIn(w, h)) {
      setOwn(patch, k, w);
    }
  }
  for (const k of Object.keys(have)) {
    if (Object.hasOwn(want, k)) continue;
    if (original !== undefined && Object.hasOwn(original, k)) continue;
    setOwn(patch, k, null);
  }
  return patch;
}

const withoutOwnLabels = (labels: Record<string, string> | undefined): Record<string, string> => {
  const out: Record<string, string> = { ...labels };
  for (const k of OWN_LABELS) delete out[k];
  return out;
};

/**
 * The merge patch that makes `live` match `item` (the item as it would be created), given the
 * backed-up `original`; undefined when `live` already matches. With `withOwnLabels`, a non-empty
 * patch also sets the item's backup-name/restore-name labels.
 */
export function patchToMatch(live: KubeObject, item: KubeObject, original: KubeObject, withOwnLabels = true): JsonObject | undefined {
  const patch: JsonObject = {};
  const skipTop = new Set(['apiVersion', 'kind', 'metadata', 'status', ...controllerFields(item), ...controllerFields(live)]);
  const body = diff(
    Object.fromEntries(Object.entries(live).filter(([k]) => !skipTop.has(k))),
    Object.fromEntries(Object.entries(item).filter(([k]) => !skipTop.has(k))),
    Object.fromEntries(Object.entries(original).filter(([k]) => !skipTop.has(k))),
  );
  for (const [k, v] of Object.entries(body)) setOwn(patch, k, v);
  const md: JsonObject = {};
  const labels = diff(withoutOwnLabels(live.metadata.labels), withoutOwnLabels(item.metadata.labels), original.metadata.labels ?? {});
  const annotations = diff(
    withoutControllerAnnotations(live.metadata.annotations),
    withoutControllerAnnotations(item.metadata.annotations),
    withoutControllerAnnotations(original.metadata.annotations),
  );
  if (Object.keys(labels).length > 0) md.labels = labels;
  if (Object.keys(annotations).length > 0) md.annotations = annotations;
  if (Object.keys(md).length > 0) patch.metadata = md;
  if (Object.keys(patch).length === 0) return undefined;
  if (withOwnLabels) {
    const own: Record<string, string> = {};
    for (const k of OWN_LABELS) {
      const v = item.metadata.labels?.[k];
      if (v !== undefined) own[k] = v;
    }
    const m = (patch.metadata ??= {}) as JsonObject;
    m.labels = { ...(isRecord(m.labels) ? m.labels : {}), ...own };
  }
  return patch;
}
