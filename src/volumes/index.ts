// Public surface of volumes/: CSI snapshots taken by backups, restored by restores, deleted with backups.
export * from './api.js';
export { chooseSnapshotClass, type ClassChoice } from './classes.js';
export { DEFAULT_CSI_SNAPSHOT_TIMEOUT_MS, newSnapshotTaker, snapshotName, type SnapshotDeps, type SnapshotOutcome, type SnapshotTaker } from './take.js';
export { waitForObject, WaitTimeoutError, type Check, type WaitOptions } from './wait.js';
export { claimFromSnapshot, emptyClaim, restoredSnapshotNames, restoreSnapshot, type ClaimRestoreDeps } from './restore.js';
export { BEING_DELETED_ANNOTATION, DEFAULT_SNAPSHOT_DELETE_TIMEOUT_MS, deleteBackupSnapshots, type RemoveDeps } from './remove.js';
