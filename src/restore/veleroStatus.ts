// What is different about a restore whose backup sits in a Velero location: the backup has no
// integrity manifest (Velero writes none), which the restore says as a warning, and nothing the
// restore produces is written into the bucket (Stowage never writes there, nor into a ReadOnly
// location): its log lines are only in the server log, and its warnings and errors are kept in its
// status instead.
import type { RestoreStatus } from '../apis/v1/index.js';
import { addResult, type RunResults, type ScopedMessages } from '../persistence/results.js';
import type { RestoreResult } from './restore.js';

/** The most warnings, and the most errors, status.messages keeps. */
export const MAX_STATUS_MESSAGES = 100;

export function noManifestWarning(backup: string): string {
  return `backup ${backup} was made by Velero and has no integrity manifest: its tarball is read with every archive check, but its items cannot be verified against checksums`;
}

/** Records the missing manifest as a warning of the restore (results and count). */
export function noteNoManifest(result: RestoreResult, backup: string): void {
  addResult(result.results, 'warnings', undefined, noManifestWarning(backup));
  result.warnings += 1;
}

function flatten(s: ScopedMessages): string[] {
  const all = [...s.cluster, ...Object.entries(s.namespaces).flatMap(([ns, list]) => list.map((m) => `${ns}: ${m}`))];
  if (all.length <= MAX_STATUS_MESSAGES) return all;
  return [...all.slice(0, MAX_STATUS_MESSAGES - 1), `... and ${all.length - MAX_STATUS_MESSAGES + 1} more (in the server log)`];
}

/**
 * The status fields of a restore from a location Stowage does not write (a Velero or ReadOnly one,
 * `refusal` says which: storage/open.ts writeRefusal): where its artifacts are instead, and its messages.
 */
export function veleroRestoreStatus(refusal: string, backup: string, run: string, results: RunResults | undefined): Pick<RestoreStatus, 'artifactsNotUploaded' | 'messages'> {
  return {
    artifactsNotUploaded: `the log, results and resource list of this restore of backup ${backup} were not uploaded: ${refusal}. ` +
      `Its log lines are in the Stowage server's log (restore=${run}); its warnings and errors are in status.messages`,
    messages: results === undefined ? { warnings: [], errors: [] } : { warnings: flatten(results.warnings), errors: flatten(results.errors) },
  };
}
