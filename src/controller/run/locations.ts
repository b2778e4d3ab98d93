// Whether a run can use its location now (validated, Available), and which location a run means:
// the one place the backup and restore controllers decide both.
import { RESOURCES, type BackupStorageLocation } from '../../apis/v1/index.js';
import { parseDuration } from '../../util/duration.js';
import type { ControllerContext } from './context.js';

export function isAvailable(bsl: BackupStorageLocation): boolean {
  return bsl.status?.phase === 'Available';
}

/** Whether status.phase was found for the current spec (an edited spec has not been validated yet). */
export function validatedCurrentSpec(bsl: BackupStorageLocation): boolean {
  return bsl.status?.phase !== undefined && bsl.status.observedGeneration === bsl.metadata.generation;
}

/** How long a new Backup or Restore waits for its location's validation before failing validation. */
const LOCATION_WAIT_MS = 60_000;

/**
 * Why a run created at `created` cannot use `bsl` now (undefined: it can). `wait` is set while the
 * location's current spec awaits its validation (new, or just edited: an operator fixing a bucket
 * name) and the run is young enough to wait for it rather than fail on a stale phase. `recheck` is
 * set when a young run would fail on an Unavailable location: the cache may not show an edit made
 * just before the run was created yet (see specChangedSinceValidation).
 */
export interface LocationProblem {
  reason: string;
  wait: boolean;
  recheck?: boolean;
}

export function locationProblem(ctx: Pick<ControllerContext, 'clock'>, bsl: BackupStorageLocation, created: string | undefined): LocationProblem | undefined {
  const name = bsl.metadata.name;
  const st = bsl.status;
  const age = created === undefined ? Infinity : ctx.clock.now().getTime() - Date.parse(created);
  if (!validatedCurrentSpec(bsl)) {
    const reason = st?.phase === undefined
      ? `backup storage location "${name}" has not been validated yet`
      : `backup storage location "${name}" has not been validated since its spec changed (it was ${st.phase}${st.message ? `: ${st.message}` : ''})`;
    return { reason, wait: age < LOCATION_WAIT_MS };
  }
  if (!isAvailable(bsl)) return { reason: `backup storage location "${name}" is Unavailable: ${st?.message ?? 'no reason recorded'}`, wait: false, recheck: age < LOCATION_WAIT_MS };
  return undefined;
}

/**
 * Whether a run whose only problem is `problem` should be requeued to wait for the location's
 * validation rather than fail now. The one place both run controllers decide it.
 */
export async function waitForLocation(ctx: Pick<ControllerContext, 'client' | 'namespace'>, bsl: BackupStorageLocation, problem: LocationProblem): Promise<boolean> {
  return problem.wait || (problem.recheck === true && await specChangedSinceValidation(ctx, bsl));
}

/**
 * Whether the location's live spec is newer than its last validation. The informers of locations and
 * of runs are separate streams: a run created right after an edit can arrive before the edit does.
 * A failed read answers false (the run fails on what the cache shows).
 */
export async function specChangedSinceValidation(ctx: Pick<ControllerContext, 'client' | 'namespace'>, bsl: BackupStorageLocation): Promise<boolean> {
  try {
    return !validatedCurrentSpec(await ctx.client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ctx.namespace, bsl.metadata.name));
  } catch {
    return false;
  }
}

/** The location a backup names, or the default one: the `default: true` location, else the configured name. */
export function resolveLocation(ctx: ControllerContext, name: string | undefined): BackupStorageLocation | undefined {
  const all = ctx.informer<BackupStorageLocation>('BackupStorageLocation').list();
  if (name !== undefined && name !== '') return all.find((l) => l.metadata.name === name);
  return all.find((l) => l.spec.default === true) ?? all.find((l) => l.metadata.name === ctx.config.defaultBackupStorageLocation);
}

export const BSL_RESOURCE = RESOURCES.BackupStorageLocation;

/** A location's period field (validationFrequency, backupSyncPeriod) in ms: the server's default when unset or not a duration. */
export function periodOr(value: string | undefined, field: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  try {
    return parseDuration(value, field);
  } catch {
    return fallback;
  }
}
