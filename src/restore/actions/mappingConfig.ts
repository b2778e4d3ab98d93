// Reading the mapping ConfigMaps, the Velero way: a ConfigMap in the server's namespace labelled
// `stowage.dev/plugin-config` and `stowage.dev/<action>: RestoreItemAction` (or Velero's
// `velero.io/plugin-config` and `velero.io/change-storage-class` / `velero.io/change-image-name`,
// so an existing Velero install's mappings keep working). Pure: the caller lists the ConfigMaps.
import type { MappingConfig } from './mappings.js';
import type { ImageRule } from './images.js';
import { parseNodeLabelRule, type NodeLabelRule } from './nodeLabels.js';

export const PLUGIN_CONFIG_LABELS = ['stowage.dev/plugin-config', 'velero.io/plugin-config'] as const;
export const RESTORE_ITEM_ACTION = 'RestoreItemAction';

type Action = 'change-storage-class' | 'change-image-name' | 'change-node-selector';
const ACTIONS: Record<string, Action> = {
  'stowage.dev/change-storage-class': 'change-storage-class',
  'velero.io/change-storage-class': 'change-storage-class',
  'stowage.dev/change-image-name': 'change-image-name',
  'velero.io/change-image-name': 'change-image-name',
  'stowage.dev/change-node-selector': 'change-node-selector',
};

export interface ConfigMapLike {
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
}

const STORAGE_CLASS_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The mapping configuration of the ConfigMaps given (any labels), or every reason it is unusable. */
export function mappingConfigOf(configMaps: readonly ConfigMapLike[]): { config: MappingConfig } | { errors: string[] } {
  const errors: string[] = [];
  const byAction = new Map<Action, { cm: ConfigMapLike; label: string }[]>();
  for (const cm of configMaps) {
    const labels = cm.metadata.labels ?? {};
    for (const [label, act] of Object.entries(ACTIONS)) {
      const domain = label.split('/')[0] as string;
      if (labels[label] !== RESTORE_ITEM_ACTION || !Object.hasOwn(labels, `${domain}/plugin-config`)) continue;
      byAction.set(act, [...(byAction.get(act) ?? []), { cm, label }]);
    }
  }
  const config: MappingConfig = {};
  for (const [act, found] of byAction) {
    if (found.length > 1) {
      errors.push(`more than one ConfigMap configures ${act}: ${found.map((f) => `${f.cm.metadata.name} (${f.label})`).join(', ')}; keep one`);
      continue;
    }
    const { cm, label } = found[0] as { cm: ConfigMapLike; label: string };
    const source = `ConfigMap ${cm.metadata.namespace ?? ''}/${cm.metadata.name}`.replace(' /', ' ');
    const entries = Object.entries(cm.data ?? {}).sort(([a], [b]) => a.localeCompare(b));
    const bad = (k: string, why: string): void => void errors.push(`${source} (${act}): data "${k}": ${why}`);
    if (act === 'change-storage-class') {
      const map = new Map<string, string>();
      for (const [k, v] of entries) {
        if (!STORAGE_CLASS_NAME.test(v.trim())) bad(k, `"${v}" is not a storage class name`);
        else map.set(k, v.trim());
      }
      config.storageClasses = { source, map };
    } else if (act === 'change-image-name') {
      const rules: ImageRule[] = [];
      for (const [k, v] of entries) {
        const comma = v.indexOf(',');
        const from = comma < 0 ? '' : v.slice(0, comma).trim();
        const to = comma < 0 ? '' : v.slice(comma + 1).trim();
        if (from === '' || to === '') bad(k, `"${v}" is not "old,new"`);
        else rules.push({ key: k, from, to });
      }
      config.images = { source, mode: label.startsWith('velero.io/') ? 'substring' : 'prefix', rules };
    } else {
      const rules: NodeLabelRule[] = [];
      for (const [k, v] of entries) {
        try {
          rules.push(parseNodeLabelRule(k, v));
        } catch (err) {
          bad(k, (err as Error).message);
        }
      }
      config.nodeLabels = { source, rules };
    }
  }
  return errors.length > 0 ? { errors } : { config };
}
