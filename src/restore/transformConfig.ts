// What a Restore's transforms need from the cluster, read once when it is validated: the resource
// modifier ConfigMap it names (spec.resourceModifier), read with the requester's rights, since the
// requester chose it and must not reach a ConfigMap they may not read through Stowage; and the
// mapping ConfigMaps (storage class, image, node labels), which are the server's configuration like
// its locations, set by whoever runs it in its namespace, so they are listed with the server's own
// client and apply to every restore whatever its requester may read. A bad rule or mapping fails
// validation; the rules validated are the very ones the run applies.
import type { Restore } from '../apis/v1/index.js';
import type { Authority } from '../auth/index.js';
import { CORE, isForbidden, isNotFound, type DynamicClient } from '../kube/index.js';
import { mappingConfigOf, PLUGIN_CONFIG_LABELS, type ConfigMapLike } from './actions/mappingConfig.js';
import type { MappingConfig } from './actions/mappings.js';
import { parseResourceModifiers, type ResourceModifiers } from './modifiers/index.js';
import { safeErrorMessage } from '../util/errors.js';
import { resourceModifierRefErrors } from '../selection/specErrors.js';

/** The server's client and namespace: the mapping ConfigMaps are its configuration, read with its rights. */
export interface ServerConfigMaps {
  client: DynamicClient;
  namespace: string;
}

export interface RestoreTransforms {
  modifiers?: ResourceModifiers;
  mappings: MappingConfig;
  /** For the run log: what the restore will apply. */
  logLine: string | undefined;
}

async function readModifiers(r: Restore, namespace: string, authority: Authority): Promise<{ modifiers: ResourceModifiers } | { errors: string[] }> {
  const name = r.spec.resourceModifier?.name ?? '';
  const source = `ConfigMap ${namespace}/${name}`;
  let cm: ConfigMapLike;
  try {
    cm = await authority.client.get<ConfigMapLike>(CORE.configMaps, namespace, name);
  } catch (err) {
    if (isNotFound(err)) return { errors: [`spec.resourceModifier: ${source} does not exist`] };
    if (isForbidden(err)) return { errors: [`spec.resourceModifier: ${authority.describe} may not read ${source}: ${safeErrorMessage(err)}`] };
    throw err;
  }
  const parsed = parseResourceModifiers(cm.data, source);
  if ('errors' in parsed) return { errors: parsed.errors.map((e) => `spec.resourceModifier: ${e}`) };
  return parsed;
}

async function readMappings(ctx: ServerConfigMaps): Promise<{ config: MappingConfig } | { errors: string[] }> {
  const found = new Map<string, ConfigMapLike>();
  for (const label of PLUGIN_CONFIG_LABELS) {
    const list = await ctx.client.listAll<ConfigMapLike>(CORE.configMaps, { namespace: ctx.namespace, labelSelector: label });
    for (const cm of list.items) found.set(cm.metadata.name, { ...cm, metadata: { ...cm.metadata, namespace: ctx.namespace } });
  }
  const r = mappingConfigOf([...found.values()]);
  return 'errors' in r ? { errors: r.errors.map((e) => `mapping configuration in namespace ${ctx.namespace}: ${e}`) } : r;
}

/** Reads and checks the restore's transforms, or every reason they are unusable. */
export async function loadRestoreTransforms(ctx: ServerConfigMaps, r: Restore, authority: Authority): Promise<RestoreTransforms | { errors: string[] }> {
  const errors: string[] = [];
  let modifiers: ResourceModifiers | undefined;
  // A reference that names no ConfigMap is refused by validateRestore (resourceModifierRefErrors).
  if (r.spec.resourceModifier !== undefined && resourceModifierRefErrors(r.spec).length === 0) {
    const m = await readModifiers(r, r.metadata.namespace ?? ctx.namespace, authority);
    if ('errors' in m) errors.push(...m.errors);
    else modifiers = m.modifiers;
  }
  const mappings = await readMappings(ctx);
  if ('errors' in mappings) errors.push(...mappings.errors);
  if (errors.length > 0 || 'errors' in mappings) return { errors };
  const parts = [
    ...(modifiers !== undefined ? [`${modifiers.rules.length} resource modifier rule${modifiers.rules.length === 1 ? '' : 's'} from ${modifiers.source}`] : []),
    ...(mappings.config.storageClasses !== undefined ? [`storage class mappings from ${mappings.config.storageClasses.source}`] : []),
    ...(mappings.config.images !== undefined ? [`image mappings from ${mappings.config.images.source}`] : []),
    ...(mappings.config.nodeLabels !== undefined ? [`node label mappings from ${mappings.config.nodeLabels.source}`] : []),
  ];
  return { ...(modifiers !== undefined ? { modifiers } : {}), mappings: mappings.config, logLine: parts.length > 0 ? `transforms: ${parts.join('; ')}` : undefined };
}
