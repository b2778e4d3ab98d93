// The plugin's logic, as plain functions over Kubernetes objects (JSON), so it is easy to test
// without a server. Types come from the SDK via JSDoc.

/** @typedef {import('stowage/plugin-sdk').KubeObject} KubeObject */
/** @typedef {import('stowage/plugin-sdk').BackupItemAction} BackupItemAction */
/** @typedef {import('stowage/plugin-sdk').RestoreItemAction} RestoreItemAction */
/** @typedef {import('stowage/plugin-sdk').ResourceSelector} ResourceSelector */

export const BACKED_UP_BY = 'example.com/backed-up-by';
export const DATA_KEYS = 'example.com/data-keys';
export const RESTORED_BY = 'example.com/restored-by';
export const SKIP_RESTORE = 'example.com/skip-restore';

/** Only ConfigMaps, in every namespace. @type {ResourceSelector} */
export const CONFIGMAPS = {
  includedNamespaces: [],
  excludedNamespaces: [],
  includedResources: ['configmaps'],
  excludedResources: [],
  labelSelector: '',
};

/**
 * @param {KubeObject} item
 * @param {Record<string, string>} extra
 * @returns {KubeObject}
 */
function withAnnotations(item, extra) {
  return { ...item, metadata: { ...item.metadata, annotations: { ...(item.metadata.annotations ?? {}), ...extra } } };
}

/**
 * Backup: records which backup saved the ConfigMap and how many data keys it had.
 * @param {{ item: KubeObject; backup: KubeObject }} input
 */
export function annotateOnBackup({ item, backup }) {
  const data = /** @type {Record<string, unknown> | undefined} */ (item.data);
  const keys = Object.keys(data ?? {}).length;
  return {
    item: withAnnotations(item, { [BACKED_UP_BY]: backup.metadata.name, [DATA_KEYS]: String(keys) }),
    additionalItems: [],
  };
}

/**
 * Restore: skips ConfigMaps annotated `example.com/skip-restore: "true"`, and marks the others with
 * the restore that brought them back.
 * @param {{ item: KubeObject; itemFromBackup: KubeObject; restore: KubeObject }} input
 */
export function markOnRestore({ item, restore }) {
  if (item.metadata.annotations?.[SKIP_RESTORE] === 'true') {
    return { item, additionalItems: [], skipRestore: true };
  }
  return { item: withAnnotations(item, { [RESTORED_BY]: restore.metadata.name }), additionalItems: [], skipRestore: false };
}
