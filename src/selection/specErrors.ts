// What is wrong with a Backup's or a Restore's spec on its own, before any cluster or storage state
// is consulted: the one check both the server's validation and the CLI's `create` commands run, so
// the CLI refuses with the very messages the server would put in status.validationErrors.
import { specFieldErrors, type BackupSpec, type RestoreSpec } from '../apis/v1/index.js';
import { validateTimeout, validateTtl } from '../util/duration.js';
import { validateNamespaceMapping } from './filters.js';
import { backupHookSpecErrors } from './hooks.js';
import { validateSelection } from './validate.js';

export function backupSpecErrors(spec: BackupSpec): string[] {
  return [
    ...specFieldErrors('Backup', spec), ...validateSelection(spec), ...(spec.ttl !== undefined ? validateTtl(spec.ttl, 'spec.ttl') : []),
    ...backupHookSpecErrors(spec.hooks, 'spec.hooks'),
    ...validateTimeout(spec.csiSnapshotTimeout, 'spec.csiSnapshotTimeout'),
  ];
}

export function restoreSpecErrors(spec: RestoreSpec): string[] {
  return [...specFieldErrors('Restore', spec), ...validateSelection(spec), ...validateNamespaceMapping(spec.namespaceMapping, spec), ...resourceModifierRefErrors(spec)];
}

/** Problems with spec.resourceModifier itself (it must name a ConfigMap). */
export function resourceModifierRefErrors(spec: RestoreSpec): string[] {
  const ref = spec.resourceModifier;
  if (ref === undefined) return [];
  const errors: string[] = [];
  if ((ref.kind ?? '').toLowerCase() !== 'configmap') errors.push(`spec.resourceModifier.kind must be ConfigMap, not "${ref.kind ?? ''}"`);
  if ((ref.apiGroup ?? '') !== '') errors.push(`spec.resourceModifier.apiGroup must be empty (ConfigMaps are core objects), not "${ref.apiGroup ?? ''}"`);
  if ((ref.name ?? '') === '') errors.push('spec.resourceModifier.name is required');
  return errors;
}
