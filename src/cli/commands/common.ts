// Describe output shared by backups and restores: phase, why it failed, counts.
import { formatFields } from './output.js';

export function describeRunHeader(
  phase: string,
  validationErrors: readonly string[] | undefined,
  failureReason: string | undefined,
  errors: number | undefined,
  warnings: number | undefined,
  waitingFor?: string,
): string {
  // A queued run (still New) says what it waits for.
  const queued = phase.startsWith('New') && waitingFor !== undefined && waitingFor !== '';
  let s = formatFields([['Phase', phase], ...(queued ? [['Queued', waitingFor] as const] : [])]);
  if (validationErrors !== undefined && validationErrors.length > 0) {
    s += '\nValidation errors:\n' + validationErrors.map((e) => `  ${e}`).join('\n') + '\n';
  }
  // A canceled run's reason says who canceled it: not a failure.
  if (failureReason !== undefined && failureReason !== '') s += '\n' + formatFields([[phase.startsWith('Canceled') ? 'Canceled' : 'Failure reason', failureReason]]);
  s += '\n' + formatFields([
    ['Errors', String(errors ?? 0)],
    ['Warnings', String(warnings ?? 0)],
  ]);
  return s + '\n';
}
