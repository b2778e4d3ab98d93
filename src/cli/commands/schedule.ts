// `stowage schedule create|get|describe|pause|unpause|delete|trigger`, with Velero's flags: the
// backup flags (backupFlags.ts, shared with `backup create`) describe the template. What the CLI
// says about the next run and about retention comes from the code the server runs: the schedule
// controller's plan (planSchedule) and garbage collection's retention verdicts (retentionOf).
import { Command, Option } from 'commander';
import {
  LABEL_SCHEDULE_NAME,
  RESOURCES,
  labelValue,
  newSchedule,
  type Backup,
  type Schedule,
  type ScheduleSpec,
} from '../../apis/v1/index.js';
import { DEFAULT_CONFIG } from '../../config/index.js';
import { retentionOf } from '../../schedule/gc.js';
import { planSchedule, validateSchedule } from '../../schedule/plan.js';
import { isAlreadyExists, isNotFound } from '../../kube/index.js';
import { validateCron } from '../../schedule/cron.js';
import { describeKeepPolicy, hasKeepPolicy, type RetentionPlan } from '../../schedule/retention.js';
import { action, type Session } from './action.js';
import { failMissing, fetchForGet, fetchNamed, printObjects, submitBackup } from './backup.js';
import { addBackupSpecFlags, backupSpecFromFlags, checkLabels, type BackupSpecFlags } from './backupFlags.js';
import { eventsSection, filtersSection, metadataSection, selectorText } from './describe.js';
import { CliError, UsageError } from './errors.js';
import { checkName, parseBool } from './flags.js';
import { addGlobalOptions, type CliContext } from './kubeContext.js';
import { age, formatData, formatFields, formatTable, formatTimestamp, out, parseOutputFormat } from './output.js';
import {
  addSelectionFlags, checkConfirmable, checkSelection, confirmOrStop, namesText, selectObjects, selectionText, type SelectionFlags,
} from './selection.js';
import { backupOfSchedule, getSchedule } from './scheduleTemplate.js';
import { describeSubcommand, getSubcommand } from './subcommands.js';

const SCHEDULES = RESOURCES.Schedule;

/** The keep rules of the Schedule spec (schedule/retention.ts), with their flags. */
const KEEP_FLAGS = [
  ['keepLast', 'keep-last', 'keep the newest N successful backups'],
  ['keepHourly', 'keep-hourly', 'keep the newest backup of each of the last N hours that have one'],
  ['keepDaily', 'keep-daily', 'keep the newest backup of each of the last N days that have one'],
  ['keepWeekly', 'keep-weekly', 'keep the newest backup of each of the last N ISO weeks that have one'],
  ['keepMonthly', 'keep-monthly', 'keep the newest backup of each of the last N months that have one'],
] as const;
type KeepRule = (typeof KEEP_FLAGS)[number][0];

function count(flag: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new UsageError(`--${flag} takes a whole number of backups (0 or more), not "${value}"`);
    const n = Number(value.trim());
    if (!Number.isSafeInteger(n) || n > 2_147_483_647) throw new UsageError(`--${flag}: ${value} is too large`);
    return n;
  };
}

// ---- create -------------------------------------------------------------------------------------

type CreateFlags = BackupSpecFlags & Partial<Record<KeepRule, number>> & {
  schedule?: string;
  paused?: string | boolean;
  skipImmediately?: string | boolean;
  useOwnerReferencesInBackup?: string | boolean;
};

/** The Schedule `schedule create` submits (exported for tests); every problem is a UsageError naming the flag. */
export function scheduleFromFlags(name: string, namespace: string, f: CreateFlags): Schedule {
  checkName('schedule', name);
  if (f.schedule === undefined || f.schedule.trim() === '') {
    throw new UsageError('--schedule is required: a cron expression in UTC, e.g. "0 3 * * *", or "@every 6h"');
  }
  const cronErrors = validateCron(f.schedule);
  if (cronErrors.length > 0) throw new UsageError(`--schedule: ${cronErrors.join('; ')}`);
  const spec: ScheduleSpec = { schedule: f.schedule.trim(), template: backupSpecFromFlags(f) };
  for (const [rule] of KEEP_FLAGS) {
    const n = f[rule];
    if (n !== undefined) spec[rule] = n;
  }
  const paused = parseBool('paused', f.paused);
  if (paused !== undefined) spec.paused = paused;
  const skip = parseBool('skip-immediately', f.skipImmediately);
  if (skip !== undefined) spec.skipImmediately = skip;
  const owner = parseBool('use-owner-references-in-backup', f.useOwnerReferencesInBackup);
  if (owner !== undefined) spec.useOwnerReferencesInBackup = owner;
  const schedule = newSchedule(name, namespace, spec);
  const labels = checkLabels(f.labels);
  if (labels !== undefined) schedule.metadata.labels = labels;
  // The server's own validation, so nothing is submitted that can only fail (e.g. a name too long for its backups' names).
  const errors = validateSchedule(schedule);
  if (errors.length > 0) throw new UsageError(errors.join('; '));
  return schedule;
}

async function createSchedule(cmd: Command, s: Session): Promise<void> {
  const f = cmd.opts<CreateFlags>();
  const name = cmd.processedArgs[0] as string | undefined;
  if (name === undefined) throw new UsageError('a schedule name is required (stowage schedule create NAME --schedule CRON)');
  const g = s.global;
  const schedule = scheduleFromFlags(name, g.namespace ?? '', f);
  const ctx = s.client();
  schedule.metadata.namespace = ctx.namespace;
  const location = schedule.spec.template.storageLocation;
  if (location !== undefined) {
    try {
      await ctx.client.get(RESOURCES.BackupStorageLocation, ctx.namespace, location);
    } catch (err) {
      if (isNotFound(err)) throw new CliError(`backup storage location "${location}" not found in namespace ${ctx.namespace}`);
      throw err;
    }
  }
  let created: Schedule;
  try {
    created = await ctx.client.create<Schedule>(SCHEDULES, ctx.namespace, schedule);
  } catch (err) {
    if (isAlreadyExists(err)) throw new CliError(`schedule "${name}" already exists in namespace ${ctx.namespace}`);
    throw err;
  }
  out(`Schedule "${name}" created successfully.`);
  out(`Next backup: ${nextRunText(created, [], new Date())}`);
}

// ---- shared views -------------------------------------------------------------------------------

/** The schedule's backups: those carrying its schedule-name label, as the controller and GC group them. */
async function backupsOf(ctx: CliContext, schedule: string): Promise<Backup[]> {
  return (await ctx.client.listAll<Backup>(RESOURCES.Backup, { namespace: ctx.namespace, labelSelector: `${LABEL_SCHEDULE_NAME}=${labelValue(schedule)}` })).items;
}

/** When the controller creates the next backup, by its own plan. */
export function nextRunText(s: Schedule, backups: readonly Backup[], now: Date): string {
  const plan = planSchedule(s, backups.map((b) => ({ name: b.metadata.name, phase: b.status?.phase })), now);
  switch (plan.action) {
    case 'invalid':
      return '<none: the schedule failed validation>';
    case 'paused':
      return '<none: paused>';
    case 'wait':
      return formatTimestamp(plan.nextTick.toISOString());
    case 'create':
      return `now (due at ${formatTimestamp(plan.at.toISOString())}; the server creates it when it next looks)`;
    case 'skip':
      return `${formatTimestamp(plan.nextTick.toISOString())} (the tick at ${formatTimestamp(plan.at.toISOString())} is skipped: ${plan.running.join(', ')} still running)`;
  }
}

function nextRunTime(s: Schedule, backups: readonly Backup[], now: Date): string | null {
  const plan = planSchedule(s, backups.map((b) => ({ name: b.metadata.name, phase: b.status?.phase })), now);
  if (plan.action === 'wait' || plan.action === 'skip') return plan.nextTick.toISOString();
  if (plan.action === 'create') return plan.at.toISOString();
  return null;
}

function retention(s: Schedule, backups: readonly Backup[], now: Date): RetentionPlan {
  // Expirations are the backups' own; the server's default TTL only fills in for a backup without one.
  return retentionOf(backups, s, true, DEFAULT_CONFIG.defaultBackupTtl, now);
}

function policyText(s: Schedule): string {
  return hasKeepPolicy(s.spec) ? describeKeepPolicy(s.spec) : 'none: backups expire by their TTL';
}

// ---- get ----------------------------------------------------------------------------------------

export const SCHEDULE_COLUMNS = ['NAME', 'STATUS', 'CREATED', 'SCHEDULE', 'BACKUP TTL', 'LAST BACKUP', 'NEXT BACKUP', 'SELECTOR', 'PAUSED'];

async function getSchedules(cmd: Command, s: Session): Promise<void> {
  const { format, names, ctx, items, missing } = await fetchForGet(cmd, s, SCHEDULES, getSchedule);
  if (format !== 'table') {
    printObjects(items, 'ScheduleList', format, names.length === 1);
  } else if (items.length > 0) {
    const all = (await ctx.client.listAll<Backup>(RESOURCES.Backup, { namespace: ctx.namespace })).items;
    const now = new Date();
    const rows = items.map((sc) => {
      const own = all.filter((b) => b.metadata.labels?.[LABEL_SCHEDULE_NAME] === labelValue(sc.metadata.name));
      const next = nextRunTime(sc, own, now);
      return [
        sc.metadata.name,
        sc.status?.phase ?? 'New',
        formatTimestamp(sc.metadata.creationTimestamp),
        sc.spec.schedule,
        sc.spec.template.ttl ?? '<server default>',
        sc.status?.lastBackup === undefined ? 'n/a' : `${age(sc.status.lastBackup, now.getTime())} ago`,
        next === null ? 'n/a' : formatTimestamp(next),
        selectorText(sc.spec.template),
        String(sc.spec.paused === true),
      ];
    });
    process.stdout.write(formatTable(SCHEDULE_COLUMNS, rows));
  } else if (missing.length === 0) {
    process.stderr.write(`No schedules found in namespace ${ctx.namespace}.\n`);
  }
  failMissing(missing);
}

// ---- describe -----------------------------------------------------------------------------------

export function retentionSection(s: Schedule, backups: readonly Backup[], plan: RetentionPlan): string {
  let text = formatFields([['Retention policy', policyText(s)]]);
  if (backups.length === 0) return text + 'Backups:  <none>\n';
  const phase = new Map(backups.map((b) => [b.metadata.name, b.status?.phase ?? 'New']));
  const rows = [
    ...plan.keep.map((v) => [v.name, phase.get(v.name) ?? '', 'keep', v.reason]),
    ...[...plan.delete].reverse().map((v) => [v.name, phase.get(v.name) ?? '', 'delete', v.reason]),
  ];
  text += `Backups (${plan.keep.length} kept, ${plan.delete.length} to be deleted by garbage collection):\n`;
  text += formatTable(['NAME', 'PHASE', 'VERDICT', 'WHY'], rows).split('\n').map((l) => (l === '' ? l : `  ${l}`)).join('\n');
  return text;
}

export function describeScheduleText(s: Schedule, backups: readonly Backup[], now: Date): string {
  const st = s.status ?? {};
  let text = metadataSection(s.metadata) + '\n';
  text += formatFields([['Phase', st.phase ?? 'New']]);
  if ((st.validationErrors ?? []).length > 0) text += '\nValidation errors:\n' + (st.validationErrors ?? []).map((e) => `  ${e}`).join('\n') + '\n';
  text += '\n' + formatFields([
    ['Schedule', `${s.spec.schedule} (UTC)`],
    ['Paused', String(s.spec.paused === true)],
    ['Skip immediately', String(s.spec.skipImmediately === true)],
    ['Owner references in backups', String(s.spec.useOwnerReferencesInBackup === true)],
  ]);
  text += '\nBackup template:\n';
  text += filtersSection(s.spec.template).split('\n').map((l) => (l === '' ? l : `  ${l}`)).join('\n');
  text += formatFields([
    ['Storage Location', s.spec.template.storageLocation ?? '<default>'],
    ['TTL', s.spec.template.ttl ?? '<server default>'],
  ], '  ');
  // Triggered backups count: the newest of the schedule's backups, and the one the controller last made on a tick.
  const newest = [...backups].sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '') || b.metadata.name.localeCompare(a.metadata.name))[0];
  const scheduled = st.lastBackupName === undefined ? undefined : backups.find((b) => b.metadata.name === st.lastBackupName);
  text += '\n' + formatFields([
    ['Last backup', newest === undefined ? '<none>' : `${newest.metadata.name} (${newest.status?.phase ?? 'New'}, created ${formatTimestamp(newest.metadata.creationTimestamp)})`],
    ['Last scheduled backup', st.lastBackupName === undefined ? '<none>'
      : `${st.lastBackupName} at ${formatTimestamp(st.lastBackup)}${scheduled === undefined ? ' (no longer exists)' : ''}`],
    ['Last skipped tick', formatTimestamp(st.lastSkipped)],
    ['Next backup', nextRunText(s, backups, now)],
  ]);
  text += '\n' + retentionSection(s, backups, retention(s, backups, now));
  return text;
}

async function describeSchedules(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output: string }>();
  const format = parseOutputFormat(o.output);
  const names = cmd.processedArgs[0] as string[];
  const ctx = s.client();
  const { items, missing } = await fetchNamed<Schedule>(
    ctx,
    names,
    async () => (await ctx.client.listAll<Schedule>(SCHEDULES, { namespace: ctx.namespace })).items,
    (n) => getSchedule(ctx, n),
  );
  const now = new Date();
  const parts: string[] = [];
  const data: object[] = [];
  for (const sc of items) {
    const backups = await backupsOf(ctx, sc.metadata.name);
    if (format === 'table') {
      parts.push(describeScheduleText(sc, backups, now) + '\n' + (await eventsSection(ctx, 'Schedule', sc.metadata)));
    } else {
      const plan = retention(sc, backups, now);
      data.push({ schedule: sc, nextBackup: nextRunTime(sc, backups, now), retention: { policy: policyText(sc), keep: plan.keep, delete: plan.delete } });
    }
  }
  if (format !== 'table') process.stdout.write(formatData(data.length === 1 && names.length === 1 ? data[0] : data, format));
  else if (parts.length > 0) process.stdout.write(parts.join('\n---\n\n'));
  else if (missing.length === 0) process.stderr.write(`No schedules found in namespace ${ctx.namespace}.\n`);
  failMissing(missing);
}

// ---- pause / unpause / delete -------------------------------------------------------------------

function selectSchedules(ctx: CliContext, names: readonly string[], f: SelectionFlags): Promise<Schedule[]> {
  return selectObjects<Schedule>(names, f, {
    kind: 'schedule', plural: 'schedules', namespace: ctx.namespace,
    get: (n) => getSchedule(ctx, n),
    list: async (sel) => (await ctx.client.listAll<Schedule>(SCHEDULES, { namespace: ctx.namespace, labelSelector: sel })).items,
  });
}

async function setPaused(cmd: Command, s: Session, paused: boolean): Promise<void> {
  const o = cmd.opts<SelectionFlags>();
  const names = cmd.processedArgs[0] as string[];
  checkSelection(names, o, 'schedule', 'schedules');
  const ctx = s.client();
  const selected = await selectSchedules(ctx, names, o);
  if (selected.length === 0) {
    out(`No ${selectionText(o, 'schedules', ctx.namespace)}: nothing to ${paused ? 'pause' : 'unpause'}.`);
    return;
  }
  const word = paused ? 'paused' : 'unpaused';
  for (const sc of selected) {
    const name = sc.metadata.name;
    if ((sc.spec.paused === true) === paused) {
      out(`Schedule "${name}" is already ${word}.`);
      continue;
    }
    try {
      await ctx.client.patch(SCHEDULES, ctx.namespace, name, { spec: { paused } }, 'merge');
    } catch (err) {
      if (isNotFound(err)) throw new CliError(`schedule "${name}" was deleted meanwhile`);
      throw err;
    }
    out(`Schedule "${name}" ${word}.`);
  }
}

async function deleteSchedules(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<SelectionFlags & { confirm?: boolean }>();
  const names = cmd.processedArgs[0] as string[];
  checkSelection(names, o, 'schedule', 'schedules');
  checkConfirmable(o.confirm);
  const ctx = s.client();
  const selected = await selectSchedules(ctx, names, o);
  if (selected.length === 0) {
    out(`No ${selectionText(o, 'schedules', ctx.namespace)}: nothing to delete.`);
    return;
  }
  const chosen = selected.map((sc) => sc.metadata.name);
  await confirmOrStop(o.confirm, `Delete ${namesText('schedule', 'schedules', chosen)}? The backups already made stay.`);
  for (const n of chosen) {
    try {
      // Orphan: with useOwnerReferencesInBackup the garbage collector would otherwise remove the
      // Backup objects behind Stowage's back (their data would stay, untracked, until synced back).
      await ctx.client.delete(SCHEDULES, ctx.namespace, n, { propagationPolicy: 'Orphan' });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    out(`Schedule "${n}" deleted. Its backups stay; delete them with \`stowage backup delete --selector ${LABEL_SCHEDULE_NAME}=${labelValue(n)}\`.`);
  }
}

// ---- trigger ------------------------------------------------------------------------------------

async function triggerSchedule(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ wait?: boolean }>();
  const name = cmd.processedArgs[0] as string;
  const ctx = s.client();
  const schedule = await getSchedule(ctx, name);
  await submitBackup(ctx, backupOfSchedule(schedule), o.wait === true);
}

// ---- registration -------------------------------------------------------------------------------

/** `pause` and `unpause`: the named or selected schedules. */
function pausing(name: 'pause' | 'unpause', description: string, paused: boolean): Command {
  return addSelectionFlags(
    addGlobalOptions(new Command(name).description(description).argument('[names...]', `schedules to ${name} (or --selector, or --all)`)),
    'schedules',
  ).action(action(async (cmd, s) => setPaused(cmd, s, paused)));
}

function createSubcommand(): Command {
  const create = addGlobalOptions(
    addBackupSpecFlags(
      new Command('create')
        .description('Create a schedule')
        .argument('[name]', 'name of the schedule')
        .usage('NAME --schedule CRON [flags]')
        .option('--schedule <cron>', 'when to back up, in UTC: a 5-field cron expression ("0 3 * * *"), @daily, @hourly, ... or "@every 6h"'),
      'the schedule (its backups get them too)',
    ),
  );
  for (const [, flag, help] of KEEP_FLAGS) create.option(`--${flag} <n>`, help, count(flag));
  create
    .addOption(new Option('--paused [bool]', 'create the schedule paused: it backs up nothing until `stowage schedule unpause`'))
    .addOption(new Option('--skip-immediately [bool]', 'do not back up at once when created or unpaused; wait for the next tick'))
    .addOption(new Option('--use-owner-references-in-backup [bool]', 'make the schedule the owner of its Backup objects'))
    .addHelpText(
      'after',
      `
Retention: with any --keep-* flag, the policy alone decides which successful backups stay (even
past their TTL) and the others are deleted; the newest successful backup is never deleted.
Without one, backups expire by their TTL.

Examples:
  stowage schedule create nightly --schedule "0 3 * * *" --include-namespaces app --keep-daily 7 --keep-weekly 4
  stowage schedule create often --schedule "@every 6h" --ttl 72h --paused`,
    )
    .action(action(async (cmd, s) => createSchedule(cmd, s)));
  return create;
}

export function scheduleCommand(): Command {
  const schedule = new Command('schedule').description('Back up on a cron schedule, and keep the backups a retention policy says');
  const get = getSubcommand({ listed: 'schedules', plural: 'schedules', selectorHelp: 'only schedules with these labels', run: getSchedules });
  const describe = describeSubcommand({
    description: 'Show schedules: the next backup, the last one, and which backups retention keeps and why', plural: 'schedules', run: describeSchedules,
  });
  const pause = pausing('pause', 'Pause schedules: no backups until unpaused', true);
  const unpause = pausing('unpause', 'Unpause schedules', false);
  const del = addSelectionFlags(
    addGlobalOptions(
      new Command('delete')
        .description('Delete schedules (their backups stay)')
        .argument('[names...]', 'schedules to delete (or --selector, or --all)')
        .option('--confirm', 'do not ask for confirmation'),
    ),
    'schedules',
  ).action(action(async (cmd, s) => deleteSchedules(cmd, s)));

  const trigger = addGlobalOptions(
    new Command('trigger')
      .description('Back up now from the schedule\'s template (named and labelled as its scheduled backups; also while paused)')
      .argument('<name>', 'the schedule')
      .option('-w, --wait', 'wait for the backup to finish, showing its progress'),
  ).action(action(async (cmd, s) => triggerSchedule(cmd, s)));

  for (const c of [createSubcommand(), get, describe, pause, unpause, del, trigger]) schedule.addCommand(c);
  return schedule;
}
