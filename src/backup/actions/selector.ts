// Helpers for writing item actions: a ResourceSelector with defaults, and reading fields safely.
import type { ResourceSelector } from '../../plugin/api/index.js';

export function selector(partial: Partial<ResourceSelector>): ResourceSelector {
  return {
    includedNamespaces: [],
    excludedNamespaces: [],
    includedResources: [],
    excludedResources: [],
    labelSelector: '',
    ...partial,
  };
}

/** obj[k1][k2]... when every step is an object, else undefined. */
export function field(obj: unknown, ...path: string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

export function stringField(obj: unknown, ...path: string[]): string | undefined {
  const v = field(obj, ...path);
  return typeof v === 'string' && v !== '' ? v : undefined;
}
