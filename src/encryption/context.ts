// What each encrypted object is bound to: the backup (or restore) and the artifact. The string is
// mixed into the object's key and so must never change for a stored artifact.
export type BackupArtifact = 'tarball' | 'log' | 'resource-list' | 'results' | 'manifest' | 'metadata' | 'signature';
export type RestoreArtifact = 'log' | 'results' | 'resource-list';

export function backupArtifactContext(backup: string, artifact: BackupArtifact): string {
  return `backup/${backup}/${artifact}`;
}

/** A restore's artifacts are sealed with its backup's data key, bound to the restore's own name. */
export function restoreArtifactContext(restore: string, artifact: RestoreArtifact): string {
  return `restore/${restore}/${artifact}`;
}

/** The context of the data key's wrapping: a wrapped key moved to another backup does not unwrap. */
export function dataKeyContext(backup: string): string {
  return `backup/${backup}/data-key`;
}
