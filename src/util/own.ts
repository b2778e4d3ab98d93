// Property access that treats every key as data. Kubernetes maps (a ConfigMap's data, labels,
// annotations) may hold any key, `__proto__` included: a plain `obj[key] = value` on that key sets
// the prototype (or does nothing for a string), and `obj[key]` reads Object.prototype when the key
// is absent. These helpers read and write own properties only.

/** Sets `obj[key]` as an own, enumerable data property (also for `__proto__`). */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `obj[key]` when `obj` has it as an own property, else undefined (never an inherited value). */
export function getOwn(obj: Record<string, unknown> | undefined, key: string): unknown {
  return obj !== undefined && Object.hasOwn(obj, key) ? obj[key] : undefined;
}
