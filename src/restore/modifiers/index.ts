// Resource modifiers: Velero's rule format, parsed and applied with Stowage's own patch functions.
export { parseResourceModifiers, patchValue, type ModifierRule, type PatchKind, type ResourceModifiers } from './rules.js';
export { applyResourceModifiers, ruleMatches, type ModifiedItem, type ModifierResult } from './apply.js';
export { applyJsonPatch, PatchError, PatchTestFailed, type JsonValue, type PatchOperation } from './jsonPatch.js';
export { applyMergePatch } from './mergePatch.js';
export { applyStrategicPatch } from './strategicMerge.js';
