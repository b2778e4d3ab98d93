// The spec fields that say what a run takes. Backup, Restore and a Schedule's template declare them
// once in apis/v1 (kinds.ts); the type here is picked from there, so no copy of the fields can
// drift from what the apiserver stores.
import type { BackupSpec, RestoreSpec } from '../apis/v1/index.js';

/** Velero's scope-specific resource lists (the alternative to includedResources/excludedResources/includeClusterResources). */
export type ScopedResourceField =
  | 'includedClusterScopedResources'
  | 'excludedClusterScopedResources'
  | 'includedNamespaceScopedResources'
  | 'excludedNamespaceScopedResources';

export type SelectionField =
  | 'includedNamespaces'
  | 'excludedNamespaces'
  | 'includedResources'
  | 'excludedResources'
  | 'includeClusterResources'
  | 'labelSelector'
  | 'orLabelSelectors'
  | ScopedResourceField
  | 'includedNames'
  | 'excludedNames';

/** What a Backup, a Restore or a Schedule's template selects; a Restore's restoreStatus is capped and checked with them. */
export type SelectionSpec = Pick<BackupSpec, SelectionField> & Pick<RestoreSpec, 'restoreStatus'>;

export type ScopedResourceFields = Pick<SelectionSpec, ScopedResourceField>;

// A Restore selects by the same fields as a Backup: this fails to compile if kinds.ts ever lets them differ.
const sameFields: Pick<RestoreSpec, SelectionField> = {} as Pick<BackupSpec, SelectionField>;
void sameFields;
