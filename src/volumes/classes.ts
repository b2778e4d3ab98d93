// Which VolumeSnapshotClass snapshots a claim, chosen as Velero (1.14 and later) chooses it, so a
// cluster set up for Velero needs nothing more: the claim's annotation first, then the Backup's
// per-driver annotation, then the one class of the driver labelled for Velero.
import type { KubeObject } from '../kube/index.js';
import { stringField } from '../kube/references.js';
import { VELERO_BACKUP_CLASS_PREFIX, VELERO_CLASS_LABEL } from './api.js';

export type ClassChoice = { name: string; by: string } | { none: string } | { error: string };

/**
 * The class for a claim of `driver`. `none`: no class is set up for the driver (a warning, the
 * volume is not snapshotted); `error`: a class was named but cannot be used, or the label is on
 * more than one class of the driver (the choice would be a guess).
 */
export function chooseSnapshotClass(
  driver: string, claimAnnotations: Readonly<Record<string, string>> | undefined,
  backupAnnotations: Readonly<Record<string, string>> | undefined, classes: readonly KubeObject[],
): ClassChoice {
  const byName = new Map(classes.map((c) => [c.metadata?.name ?? '', c]));
  const named = (name: string, by: string): ClassChoice => {
    const c = byName.get(name);
    if (c === undefined) return { error: `${by} names VolumeSnapshotClass "${name}", which does not exist` };
    const d = stringField(c, 'driver');
    if (d !== driver) return { error: `${by} names VolumeSnapshotClass "${name}", whose driver is ${d ?? '<none>'}, not the volume's ${driver}` };
    return { name, by };
  };
  const onClaim = claimAnnotations?.[VELERO_CLASS_LABEL];
  if (onClaim !== undefined && onClaim !== '') return named(onClaim, `the claim's annotation ${VELERO_CLASS_LABEL}`);
  const onBackup = backupAnnotations?.[`${VELERO_BACKUP_CLASS_PREFIX}${driver}`];
  if (onBackup !== undefined && onBackup !== '') return named(onBackup, `the Backup's annotation ${VELERO_BACKUP_CLASS_PREFIX}${driver}`);
  const labelled = classes.filter((c) => stringField(c, 'driver') === driver && c.metadata?.labels?.[VELERO_CLASS_LABEL] === 'true');
  const names = labelled.map((c) => c.metadata?.name ?? '').sort();
  if (names.length > 1) {
    return { error: `VolumeSnapshotClasses ${names.map((n) => `"${n}"`).join(', ')} of driver ${driver} are all labelled ${VELERO_CLASS_LABEL}=true; label one, or name one with the Backup's annotation ${VELERO_BACKUP_CLASS_PREFIX}${driver}` };
  }
  const [only] = names;
  if (only !== undefined) return { name: only, by: `the label ${VELERO_CLASS_LABEL}=true` };
  return { none: `no VolumeSnapshotClass of driver ${driver} is labelled ${VELERO_CLASS_LABEL}=true (nor named by the claim's annotation ${VELERO_CLASS_LABEL} or the Backup's ${VELERO_BACKUP_CLASS_PREFIX}${driver})` };
}
