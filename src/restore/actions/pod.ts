// Pods: the scheduler picks a node again, and the service-account token volume is the cluster's to
// inject (its token was issued for the old pod and service account).
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { arrayAt, isRecord, recordAt } from '../objects.js';
import { selectorFor } from './selector.js';

const TOKEN_VOLUME_PREFIX = 'kube-api-access-';

/**
 * Whether a pod volume is the injected service-account token: a `kube-api-access-*` volume, any
 * projected volume with a serviceAccountToken source, or the legacy secret volume of the pod's
 * service-account token secret (`<serviceaccount>-token-*`).
 */
export function isTokenVolume(volume: Record<string, unknown>, serviceAccount: string): boolean {
  if (typeof volume.name === 'string' && volume.name.startsWith(TOKEN_VOLUME_PREFIX)) return true;
  const projected = recordAt(volume, 'projected');
  if (projected !== undefined && (arrayAt(projected, 'sources') ?? []).some((s) => isRecord(s) && s.serviceAccountToken !== undefined)) return true;
  const secret = recordAt(volume, 'secret');
  return typeof secret?.secretName === 'string' && secret.secretName.startsWith(`${serviceAccount}-token-`);
}

export function restorePod(item: KubeObject): KubeObject {
  const spec = recordAt(item, 'spec');
  if (spec === undefined) return item;
  delete spec.nodeName;
  const sa = typeof spec.serviceAccountName === 'string' ? spec.serviceAccountName : typeof spec.serviceAccount === 'string' ? spec.serviceAccount : 'default';
  const volumes = arrayAt(spec, 'volumes');
  if (volumes === undefined) return item;
  const dropped = new Set<string>();
  const kept = volumes.filter((v) => {
    if (isRecord(v) && isTokenVolume(v, sa)) {
      if (typeof v.name === 'string') dropped.add(v.name);
      return false;
    }
    return true;
  });
  if (dropped.size === 0) return item;
  if (kept.length > 0) spec.volumes = kept;
  else delete spec.volumes;
  for (const list of ['initContainers', 'containers', 'ephemeralContainers']) {
    for (const c of arrayAt(spec, list) ?? []) {
      if (!isRecord(c)) continue;
      const mounts = arrayAt(c, 'volumeMounts');
      if (mounts === undefined) continue;
      const keptMounts = mounts.filter((m) => !(isRecord(m) && typeof m.name === 'string' && dropped.has(m.name)));
      if (keptMounts.length > 0) c.volumeMounts = keptMounts;
      else delete c.volumeMounts;
    }
  }
  return item;
}

export const podAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['pods'])),
  execute: ({ item }) => Promise.resolve({ item: restorePod(item), additionalItems: [], skipRestore: false }),
};
