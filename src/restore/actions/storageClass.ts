// Storage-class mapping (`old: new`, Velero's change-storage-class): a claim's or volume's class,
// including the beta annotation older manifests carry, and a StatefulSet's volume claim templates.
import type { KubeObject } from '../../plugin/api/index.js';
import { BETA_STORAGE_CLASS_ANNOTATION, GR } from '../../kube/references.js';
import { arrayAt, isRecord, recordAt } from '../objects.js';

export const STORAGE_CLASS_RESOURCES = [GR.persistentVolumeClaims, GR.persistentVolumes, GR.statefulSets];

/** Maps the class of a PVC, a PV or a claim template in place; returns what changed. */
function mapClassOf(obj: Record<string, unknown>, map: ReadonlyMap<string, string>, what: string): string[] {
  const notes: string[] = [];
  const spec = recordAt(obj, 'spec');
  const sc = spec?.storageClassName;
  if (spec !== undefined && typeof sc === 'string' && map.has(sc)) {
    spec.storageClassName = map.get(sc);
    notes.push(`${what}storage class ${sc} -> ${String(map.get(sc))}`);
  }
  const ann = recordAt(recordAt(obj, 'metadata') ?? {}, 'annotations');
  const beta = ann?.[BETA_STORAGE_CLASS_ANNOTATION];
  if (ann !== undefined && typeof beta === 'string' && map.has(beta)) {
    ann[BETA_STORAGE_CLASS_ANNOTATION] = map.get(beta);
    notes.push(`${what}storage class annotation ${beta} -> ${String(map.get(beta))}`);
  }
  return notes;
}

export function mapStorageClasses(groupResource: string, item: KubeObject, map: ReadonlyMap<string, string>): string[] {
  if (groupResource !== GR.statefulSets) return mapClassOf(item, map, '');
  const notes: string[] = [];
  for (const t of arrayAt(recordAt(item, 'spec') ?? {}, 'volumeClaimTemplates') ?? []) {
    if (!isRecord(t)) continue;
    const name = typeof recordAt(t, 'metadata')?.name === 'string' ? String(recordAt(t, 'metadata')?.name) : '';
    notes.push(...mapClassOf(t, map, `volume claim template ${name}: `));
  }
  return notes;
}
