import type { KubeObject, ResourceIdentifier, ResourceSelector } from './items.js';

/** Runs on each item during a backup; may change it and name more items to back up. */
export interface BackupItemAction {
  appliesTo(): Promise<ResourceSelector>;
  execute(input: { item: KubeObject; backup: KubeObject }): Promise<{
    item: KubeObject;
    additionalItems: ResourceIdentifier[];
  }>;
}

/** Runs on each item during a restore; may change it, skip it, or name items to restore first. */
export interface RestoreItemAction {
  appliesTo(): Promise<ResourceSelector>;
  execute(input: { item: KubeObject; itemFromBackup: KubeObject; restore: KubeObject }): Promise<{
    item: KubeObject;
    additionalItems: ResourceIdentifier[];
    skipRestore: boolean;
  }>;
}

/** Runs on each backed-up item when its backup is deleted (to clean up external state). */
export interface DeleteItemAction {
  appliesTo(): Promise<ResourceSelector>;
  execute(input: { item: KubeObject; backup: KubeObject }): Promise<void>;
}
