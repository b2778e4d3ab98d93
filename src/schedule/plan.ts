// A Schedule's plan: whether its spec is valid, what to do at a given time (fire, skip, wait), and
// the Backup it creates. Pure: the reconciler (controller/schedule.ts) acts on it, and
// `stowage schedule describe` shows it. The timing rules are in controller/schedule.ts's header.
import { newScheduledBackup, specFieldErrors, type Backup, type BackupPhase, type Schedule } from '../apis/v1/index.js';
import { REQUESTER_ANNOTATION } from '../auth/index.js';
import { backupHookSpecErrors } from '../selection/hooks.js';
import { validateSelection } from '../selection/validate.js';
import { validateTimeout, validateTtl } from '../util/duration.js';
import { MAX_SCHEDULE_NAME_LENGTH, parseCron, parseScheduledBackupName, scheduledBackupName, validateCron } from './cron.js';

/** A backup of the schedule, as far as planning needs it. */
export interface ScheduleBackup {
  name: string;
  phase?: BackupPhase;
}

export type SchedulePlan =
  | { action: 'invalid'; errors: string[] }
  /** Paused: `skipTick` is a tick to record as skipped (skipImmediately), `requeueAfterMs` when to look again. */
  | { action: 'paused'; skipTick?: Date; requeueAfterMs?: number }
  /** Nothing to fire; `skipTick` (skipImmediately on a schedule that never fired) is recorded as skipped. */
  | { action: 'wait'; nextTick: Date; requeueAfterMs: number; skipTick?: Date }
  | { action: 'create'; at: Date; backupName: string; nextTick: Date; requeueAfterMs: number }
  | { action: 'skip'; at: Date; running: string[]; nextTick: Date; requeueAfterMs: number };

/** Every reason the Schedule's spec is invalid; empty when valid. */
export function validateSchedule(schedule: Schedule): string[] {
  const spec = schedule.spec;
  // Template fields come out as spec.template.<field>: a Schedule whose template a Backup would refuse fails before any backup does.
  const errors: string[] = specFieldErrors('Schedule', spec);
  if (typeof spec.schedule !== 'string' || spec.schedule.trim() === '') errors.push('spec.schedule is empty: give a 5-field cron expression, e.g. "0 3 * * *"');
  else errors.push(...validateCron(spec.schedule).map((e) => `spec.schedule: ${e}`));
  const name = schedule.metadata.name;
  if (name.length > MAX_SCHEDULE_NAME_LENGTH) {
    errors.push(
      `the schedule's name is ${name.length} characters long; at most ${MAX_SCHEDULE_NAME_LENGTH} are allowed so that its backups' names (<schedule>-<yyyyMMddHHmmss>) fit in 253`,
    );
  }
  const template = spec.template ?? {};
  errors.push(...validateTtl(template.ttl, 'spec.template.ttl'));
  errors.push(...validateTimeout(template.csiSnapshotTimeout, 'spec.template.csiSnapshotTimeout'));
  errors.push(...validateSelection(template).map((e) => `spec.template: ${e}`));
  errors.push(...backupHookSpecErrors(template.hooks, 'spec.template.hooks'));
  return errors;
}

function isRunning(phase: BackupPhase | undefined): boolean {
  return phase === undefined || phase === 'New' || phase === 'InProgress';
}

function parseTime(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/** Truncates to whole seconds: backup names and RFC 3339 status times have second precision. */
function toSecond(d: Date): Date {
  return new Date(Math.floor(d.getTime() / 1000) * 1000);
}

/**
 * What the controller should do for `schedule` at `now`, given the schedule's existing backups
 * (those labelled with its name). Pure.
 */
export function planSchedule(schedule: Schedule, backups: readonly ScheduleBackup[], now: Date): SchedulePlan {
  const errors = validateSchedule(schedule);
  if (errors.length > 0) return { action: 'invalid', errors };
  const cron = parseCron(schedule.spec.schedule);
  const name = schedule.metadata.name;
  const status = schedule.status ?? {};

  const lastBackup = parseTime(status.lastBackup);
  const lastSkipped = parseTime(status.lastSkipped);
  const newestOwn = backups
    .map((b) => parseScheduledBackupName(name, b.name)?.getTime())
    .filter((t): t is number => t !== undefined)
    .reduce<number | undefined>((a, b) => (a === undefined || b > a ? b : a), undefined);
  const neverFired = lastBackup === undefined && lastSkipped === undefined && newestOwn === undefined;
  const baseline = Math.max(lastBackup ?? 0, lastSkipped ?? 0, newestOwn ?? 0);
  const due = cron.next(new Date(baseline));
  const nowMs = now.getTime();
  const skipImmediately = schedule.spec.skipImmediately === true;

  if (schedule.spec.paused === true) {
    if (!skipImmediately) return { action: 'paused' };
    const next = cron.next(now);
    const plan: SchedulePlan = { action: 'paused', requeueAfterMs: next.getTime() - nowMs };
    if (neverFired) plan.skipTick = toSecond(now);
    else if (due.getTime() <= nowMs) plan.skipTick = cron.prev(new Date(nowMs + 1));
    return plan;
  }

  if (neverFired) {
    const nextTick = cron.next(now);
    const requeueAfterMs = nextTick.getTime() - nowMs;
    if (skipImmediately) return { action: 'wait', nextTick, requeueAfterMs, skipTick: toSecond(now) };
    const at = toSecond(now);
    return { action: 'create', at, backupName: scheduledBackupName(name, at), nextTick, requeueAfterMs };
  }
  if (due.getTime() > nowMs) return { action: 'wait', nextTick: due, requeueAfterMs: due.getTime() - nowMs };

  // The latest tick at or before now; earlier missed ticks are folded into this one.
  const at = cron.prev(new Date(nowMs + 1));
  const nextTick = cron.next(at);
  const requeueAfterMs = nextTick.getTime() - nowMs;
  const running = backups.filter((b) => isRunning(b.phase)).map((b) => b.name).sort();
  if (running.length > 0) return { action: 'skip', at, running, nextTick, requeueAfterMs };
  return { action: 'create', at, backupName: scheduledBackupName(name, at), nextTick, requeueAfterMs };
}

/** The Backup a schedule creates (newScheduledBackup) with the Schedule's requester stamp. */
export function backupFromSchedule(schedule: Schedule, backupName: string): Backup {
  const backup = newScheduledBackup(schedule, backupName);
  // The Schedule's creator asked for its backups: their stamp passes on (the admission webhook
  // accepts it from the server because the server may impersonate them).
  const requester = schedule.metadata.annotations?.[REQUESTER_ANNOTATION];
  if (requester !== undefined) backup.metadata.annotations = { ...(backup.metadata.annotations ?? {}), [REQUESTER_ANNOTATION]: requester };
  return backup;
}
