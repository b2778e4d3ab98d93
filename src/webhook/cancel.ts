// The admission side of spec.cancel on Backups and Restores: the webhook records who turned cancel
// on (the stowage.dev/canceled-by annotation, which the run's log and status then name), keeps
// anyone else from writing that annotation, and refuses a cancel of a run that has finished, so a
// kubectl user hears why as the CLI's user does.
import { ANNOTATION_CANCELED_BY, BACKUP_TERMINAL_PHASES, RESTORE_TERMINAL_PHASES } from '../apis/v1/index.js';

interface Run {
  metadata?: { annotations?: Record<string, unknown> };
  spec?: { cancel?: unknown };
  status?: { phase?: unknown };
}

/** What the webhook does about cancel: nothing, refuse the request, or record `annotate` as who canceled. */
export type CancelDecision = { refused: string } | { annotate: string } | Record<string, never>;

const FINISHED: ReadonlySet<string> = new Set([...BACKUP_TERMINAL_PHASES, ...RESTORE_TERMINAL_PHASES, 'Deleting']);

const canceledBy = (o: Run | undefined): unknown => o?.metadata?.annotations?.[ANNOTATION_CANCELED_BY];

export function cancelAdmission(kind: string, obj: Run, old: Run | undefined, username: string): CancelDecision {
  if (kind !== 'Backup' && kind !== 'Restore') return {};
  if (obj.spec?.cancel === true && old?.spec?.cancel !== true) {
    const phase = old?.status?.phase;
    if (typeof phase === 'string' && FINISHED.has(phase)) {
      return { refused: `${kind} is already ${phase}: only a New or InProgress ${kind.toLowerCase()} can be canceled` };
    }
    return { annotate: username };
  }
  if (canceledBy(obj) !== canceledBy(old)) {
    return { refused: `the ${ANNOTATION_CANCELED_BY} annotation records who canceled this ${kind} and is set only by the Stowage admission webhook, when spec.cancel turns true` };
  }
  return {};
}
