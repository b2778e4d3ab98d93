// Public surface of restore/: what the Restore controller calls.
export {
  runRestore,
  DEFAULT_RESTORE_CONCURRENCY,
  type RestoreDeps,
  type RestoreResult,
  type RestoreSource,
  type RestoreStats,
} from './restore.js';
export { newRestoreRequest, targetNamespace, type ItemAction, type ItemOutcome, type RestoreRequest, type RestoreRequestOptions } from './request.js';
export { RestoreRefusedError, buildPlan, type PlannedItem, type RestorePlan } from './plan.js';
export { orderTiers, resolvePriorityEntry, type RestoreTier } from './priorities.js';
export { NEVER_RESTORED, neverRestoredReason } from './kinds.js';
export { STRIPPED_METADATA, prepareItem, mapNamespaces, stripMetadata, addRestoreLabels } from './transform.js';
export { patchToMatch, containedIn } from './compare.js';
export { BUILTIN_RESTORE_ITEM_ACTIONS, resolveRestoreItemActions, actionMatcher, type ResolvedRestoreItemAction } from './actions/index.js';
export { checkTargetNamespaces, inStowageForm, sourcesOfPlan, sourcesOfResourceList, targetsOfPlan, targetsOfResourceList, type RightsVerdict, type TargetNamespace } from './rights.js';
export { parseResourceModifiers, type ResourceModifiers } from './modifiers/index.js';
export { mappingConfigOf, PLUGIN_CONFIG_LABELS, type ConfigMapLike } from './actions/mappingConfig.js';
export type { MappingConfig } from './actions/mappings.js';
export { loadRestoreTransforms, type RestoreTransforms, type ServerConfigMaps } from './transformConfig.js';
export type { HookReport, PreparedPod, RestorePodHooks } from './podHooks.js';
export { noManifestWarning, noteNoManifest, veleroRestoreStatus } from './veleroStatus.js';
