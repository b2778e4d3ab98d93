import type { KubeObject, ResourceIdentifier, ResourceSelector } from './items.js';

/** What a BackupItemAction returns for one item. */
export interface BackupItemActionOutput {
  item: KubeObject;
  additionalItems: ResourceIdentifier[];
}

/** One item's result in a batch: the output, or why the action failed on that item. */
export type BackupItemActionBatchResult = { ok: true; output: BackupItemActionOutput } | { ok: false; error: string };

/** Runs on each item during a backup; may change it and name more items to back up. */
export interface BackupItemAction {
  appliesTo(): Promise<ResourceSelector>;
  execute(input: { item: KubeObject; backup: KubeObject }): Promise<BackupItemActionOutput>;
  /**
   * Optional: several items in one call, one result per item in order. Remote actions have it, so
   * a page of items costs one round trip to the plugin instead of one per item. Rejects only when
   * the call as a whole failed (the plugin process is gone).
   */
  executeBatch?(input: { items: readonly KubeObject[]; backup: KubeObject }): Promise<BackupItemActionBatchResult[]>;
}

/** Runs `action` over `items`: its own executeBatch when it has one, else executeEachItem. */
export function executeItems(action: BackupItemAction, input: { items: readonly KubeObject[]; backup: KubeObject }): Promise<BackupItemActionBatchResult[]> {
  return action.executeBatch !== undefined ? action.executeBatch(input) : executeEachItem((x) => action.execute(x), input.items, input.backup);
}

/**
 * Runs `execute` on each item in turn (never concurrently: an action's author need not expect
 * that), turning each item's failure into its result. What a batch is without ExecuteBatch.
 */
export async function executeEachItem(
  execute: BackupItemAction['execute'],
  items: readonly KubeObject[],
  backup: KubeObject,
): Promise<BackupItemActionBatchResult[]> {
  const out: BackupItemActionBatchResult[] = [];
  for (const item of items) {
    try {
      out.push({ ok: true, output: await execute({ item, backup }) });
    } catch (err) {
      out.push({ ok: false, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return out;
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
