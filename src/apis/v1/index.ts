// Public surface of the stowage.dev/v1 API. Types come from types.gen.ts (generated from kinds.ts).
export * from './constants.js';
export type * from './types.gen.js';
export { RESOURCES } from './types.gen.js';
export type { ObjectMeta, ListMeta, OwnerReference } from './meta.js';
export * from './helpers.js';
export { KINDS } from './kinds.js';
export { buildCrd, crdName, type CustomResourceDefinition } from './crd.js';
export type { KindDef, PrinterColumn, Schema } from './schema.js';
export { isUnset, specFieldErrors, specFieldProblems, type FieldProblem } from './fields.js';
