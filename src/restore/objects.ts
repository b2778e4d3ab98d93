// Small helpers over Kubernetes objects as plain JSON.
import type { KubeObject } from '../plugin/api/index.js';

export type JsonObject = Record<string, unknown>;

export function isRecord(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A deep copy (objects from the archive are JSON, so structuredClone is exact). */
export function cloneObject<T>(obj: T): T {
  return structuredClone(obj);
}

/** The record at `obj[key]`, or undefined when it is absent or not an object. */
export function recordAt(obj: JsonObject, key: string): JsonObject | undefined {
  const v = obj[key];
  return isRecord(v) ? v : undefined;
}

/** The array at `obj[key]`, or undefined. */
export function arrayAt(obj: JsonObject, key: string): unknown[] | undefined {
  const v = obj[key];
  return Array.isArray(v) ? v : undefined;
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** `ns/name`, or `name` for cluster-scoped objects. */
export function displayName(namespace: string | undefined, name: string): string {
  return namespace === undefined || namespace === '' ? name : `${namespace}/${name}`;
}

/** The object's spec, creating it when asked. */
export function specOf(obj: KubeObject): JsonObject | undefined {
  return recordAt(obj, 'spec');
}

/** Deletes `obj[key]` when it is an empty object or array, so cleared fields do not linger as `{}`. */
export function dropIfEmpty(obj: JsonObject, key: string): void {
  const v = obj[key];
  if ((Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.keys(v).length === 0)) delete obj[key];
}
