// Schedule controller: creates a Backup from the template at each cron tick (UTC).
//
// Timing (all from the context's clock, so tests can move time):
// - The baseline is the latest of status.lastBackup, status.lastSkipped and the newest
//   `<schedule>-<timestamp>` backup that exists (so a lost status update cannot make it fire
//   twice). The next tick is the first cron tick after the baseline. Only times from our own clock
//   count: the creation timestamp comes from the apiserver's clock and is not used.
// - A schedule that never fired backs up at once (when created, or first unpaused), unless
//   skipImmediately is set; then "now" is recorded as skipped and it waits for the next tick.
// - When one or more ticks are due, it fires ONCE, for the latest due tick; the backup is named
//   after that tick (`<schedule>-<yyyyMMddHHmmss>`), so a repeated reconcile of the same tick hits
//   AlreadyExists instead of creating a second backup.
// - If a backup of the schedule is still New/InProgress at a due tick, the tick is skipped and
//   recorded in status.lastSkipped.
// - Paused: nothing fires. With skipImmediately, each tick that passes while paused is recorded as
//   skipped, so unpausing waits for the next tick; without it, unpausing after a missed tick backs
//   up at once (once, whatever number of ticks were missed).
// status.lastSkipped thus records every tick not fired on purpose (running backup, paused with
// skipImmediately, the immediate backup skipped), as Velero's LastSkipped does.
import { LABEL_SCHEDULE_NAME, RESOURCES, labelValue, type Backup, type Schedule, type ScheduleStatus } from '../apis/v1/index.js';
import { isAlreadyExists, isConflict, isNotFound } from '../kube/index.js';
import type { Informer, Result } from '../runtime/index.js';
import { backupFromSchedule, planSchedule, type SchedulePlan } from '../schedule/plan.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import { stamp } from './run/runs.js';

const SCHEDULES = RESOURCES.Schedule;
const BACKUPS = RESOURCES.Backup;
/** Longest requeue: timers beyond ~24.8 days overflow, and a periodic look survives clock jumps. */
const MAX_REQUEUE_MS = 3_600_000;

function requeue(ms: number | undefined): Result {
  if (ms === undefined) return undefined;
  return { requeueAfter: Math.min(MAX_REQUEUE_MS, Math.max(1, ms)) };
}

export function scheduleController(ctx: ControllerContext): ControllerDefinition {
  const schedules = ctx.informer<Schedule>('Schedule');
  const sc: ScheduleContext = { ctx, backups: ctx.informer<Backup>('Backup') };
  return {
    name: 'schedule',
    // Backups only need to be in the cache (for the overlap check); their events do not enqueue.
    watches: [schedules, readsFrom(sc.backups)],
    reconciler: {
      reconcile: async (key) => {
        try {
          const s = schedules.get(key);
          if (s === undefined || s.metadata.deletionTimestamp !== undefined) return;
          return await reconcileSchedule(sc, s);
        } catch (err) {
          if (isNotFound(err)) return; // the schedule was deleted while we worked
          // Planned from a stale cache: look again once the cache has our last update.
          if (isConflict(err)) return { requeueAfter: 200 };
          throw err;
        }
      },
    },
  };
}

/** What the schedule reconciler works with: the server's context and the cache of Backups (the overlap check). */
interface ScheduleContext {
  ctx: ControllerContext;
  backups: Informer<Backup>;
}

type StatusFields = Partial<Record<keyof ScheduleStatus, unknown>>;

/**
 * One status patch, conditional on the version planned from: a reconcile that planned from a
 * stale cache (our previous patch not seen yet) gets a conflict and is retried, instead of
 * recording a tick twice or skipping one.
 */
function patchStatus(ctx: ControllerContext, s: Schedule, status: StatusFields): Promise<Schedule> {
  return ctx.client.patchStatus<Schedule>(SCHEDULES, s.metadata.namespace, s.metadata.name, {
    metadata: { resourceVersion: s.metadata.resourceVersion },
    status,
  });
}

function backupsOf(sc: ScheduleContext, s: Schedule): Backup[] {
  const label = labelValue(s.metadata.name);
  const ns = s.metadata.namespace ?? '';
  return sc.backups.list().filter((b) => (b.metadata.namespace ?? '') === ns && b.metadata.labels?.[LABEL_SCHEDULE_NAME] === label);
}

/** Creates the backup; false when a backup of that name exists that this schedule did not create. */
async function createBackup(ctx: ControllerContext, s: Schedule, name: string): Promise<boolean> {
  const ns = s.metadata.namespace ?? ctx.namespace;
  try {
    await ctx.client.create(BACKUPS, ns, backupFromSchedule(s, name));
    return true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    // The same tick reconciled twice (e.g. a status update that did not land): it is ours.
    const existing = await ctx.client.get<Backup>(BACKUPS, ns, name);
    return existing.metadata.labels?.[LABEL_SCHEDULE_NAME] === labelValue(s.metadata.name);
  }
}

/** The schedule's plan now; before skipping a tick, a live read makes sure the cache is not just behind a backup that has finished. */
async function currentPlan(sc: ScheduleContext, s: Schedule, now: Date): Promise<SchedulePlan> {
  const own = backupsOf(sc, s).map((b) => ({ name: b.metadata.name, phase: b.status?.phase }));
  const plan = planSchedule(s, own, now);
  if (plan.action !== 'skip') return plan;
  const running = new Set(plan.running);
  const live = await Promise.all(own.map(async (b) => {
    if (!running.has(b.name)) return b;
    try {
      const got = await sc.ctx.client.get<Backup>(BACKUPS, s.metadata.namespace, b.name);
      return { name: b.name, phase: got.status?.phase };
    } catch (err) {
      if (isNotFound(err)) return { name: b.name, phase: 'Deleting' as const }; // gone: not running
      throw err;
    }
  }));
  return planSchedule(s, live, now);
}

async function reconcileSchedule(sc: ScheduleContext, s: Schedule): Promise<Result> {
  const { ctx } = sc;
  let plan = await currentPlan(sc, s, ctx.clock.now());
  const status = s.status ?? {};
  // Its backups carry its stamp (the webhook seals them for the server, which may impersonate):
  // a Schedule whose own stamp this server's webhook did not write must not lend it to them.
  const authority = ctx.authority(s);
  if ('error' in authority) plan = { action: 'invalid', errors: [...(plan.action === 'invalid' ? plan.errors : []), authority.error] };
  if (plan.action === 'invalid') {
    if (status.phase !== 'FailedValidation' || JSON.stringify(status.validationErrors ?? []) !== JSON.stringify(plan.errors)) {
      await patchStatus(ctx, s, { phase: 'FailedValidation', validationErrors: plan.errors });
      void ctx.events.event(s, 'Warning', 'FailedValidation', plan.errors.join('; '));
      ctx.logger.warn(`${whereOf(s)} failed validation: ${plan.errors.join('; ')}`);
    }
    return;
  }
  return act(ctx, s, plan);
}

const whereOf = (s: Schedule): string => `schedule ${s.metadata.namespace ?? ''}/${s.metadata.name}`;

/** Does what a valid plan says: record a skipped tick, or create the tick's backup; every patch also enables the schedule. */
async function act(ctx: ControllerContext, s: Schedule, plan: Exclude<SchedulePlan, { action: 'invalid' }>): Promise<Result> {
  const where = whereOf(s);
  const status = s.status ?? {};
  const enable: StatusFields = status.phase === 'Enabled' ? {} : { phase: 'Enabled', validationErrors: null };
  const patch = async (more: StatusFields): Promise<void> => {
    const all = { ...enable, ...more };
    if (Object.keys(all).length > 0) await patchStatus(ctx, s, all);
    if (status.phase !== 'Enabled') ctx.logger.info(`${where} is Enabled (cron "${s.spec.schedule}", UTC)`);
  };
  const skipped = async (at: Date, message: string): Promise<Result> => {
    await patch({ lastSkipped: stamp(at) });
    void ctx.events.event(s, 'Warning', 'BackupSkipped', message);
    ctx.logger.warn(`${where}: ${message}`);
    return requeue(plan.requeueAfterMs);
  };
  switch (plan.action) {
    case 'paused': {
      const record = plan.skipTick !== undefined && status.lastSkipped !== stamp(plan.skipTick);
      await patch(record && plan.skipTick !== undefined ? { lastSkipped: stamp(plan.skipTick) } : {});
      if (record && plan.skipTick !== undefined) ctx.logger.info(`${where} is paused: ${stamp(plan.skipTick)} skipped`);
      return requeue(plan.requeueAfterMs);
    }
    case 'wait':
      await patch(plan.skipTick !== undefined ? { lastSkipped: stamp(plan.skipTick) } : {});
      if (plan.skipTick !== undefined) ctx.logger.info(`${where}: skipImmediately: no backup now; next tick ${stamp(plan.nextTick)}`);
      return requeue(plan.requeueAfterMs);
    case 'skip':
      return skipped(plan.at, `a backup of this schedule is still running (${plan.running.join(', ')}), so the tick at ${stamp(plan.at)} was skipped`);
    case 'create': {
      if (ctx.shutdown.aborted) return; // a server going down starts nothing new; the next leader fires
      if (!(await createBackup(ctx, s, plan.backupName))) {
        return skipped(plan.at, `backup ${plan.backupName} already exists and was not created by this schedule, so the tick at ${stamp(plan.at)} was skipped`);
      }
      await patch({ lastBackup: stamp(plan.at), lastBackupName: plan.backupName });
      void ctx.events.event(s, 'Normal', 'BackupCreated', `created backup ${plan.backupName}`);
      ctx.logger.info(`${where}: created backup ${plan.backupName}; next tick ${stamp(plan.nextTick)}`);
      return requeue(plan.requeueAfterMs);
    }
  }
}
