// `stowage restore create|get|describe|logs`.
import { Command, Option } from 'commander';
import YAML from 'yaml';
import {
  EXISTING_RESOURCE_POLICIES,
  LABEL_RESTORE_NAME,
  RESOURCES,
  isRestoreTerminal,
  labelValue,
  newRestore,
  type Backup,
  type ExistingResourcePolicy,
  type Restore,
  type RestoreSpec,
  type RestoreStatus,
} from '../../apis/v1/index.js';
import { isAlreadyExists } from '../../kube/index.js';
import { errorMessage } from '../../util/errors.js';
import { SPEC_LIST_CAPS } from '../../selection/filters.js';
import { labelKeyProblem, labelValueProblem } from '../../selection/labels.js';
import { action, type Session } from './action.js';
import { failMissing, fetchForGet, fetchNamed, getBackup, logsSubcommand, printObjects } from './backup.js';
import { cancelCommand } from './cancel.js';
import { describeRunHeader } from './common.js';
import { eventsSection, filtersSection, messagesSection, metadataSection, progressText, selectorText, type ScopedMessages } from './describe.js';
import { download, HttpStatusError, readJson } from './download.js';
import { CliError, UsageError } from './errors.js';
import { restoreSpecErrors } from '../../selection/specErrors.js';
import { addFilterFlags, checkName, commaList, filterSpec, refuseSpecErrors, keyValueList, parseTimeout, timestampSuffix, type FilterFlags } from './flags.js';
import { addGlobalOptions, getInNamespace, type CliContext } from './kubeContext.js';
import { formatFields, formatTable, formatTimestamp, mapOrNone, out, outputOption, parseOutputFormat } from './output.js';
import { describeSubcommand, getSubcommand } from './subcommands.js';
import { getSchedule } from './scheduleTemplate.js';
import { waitForRun } from './wait.js';

export function restoreNotFound(name: string, namespace: string): CliError {
  return new CliError(`restore "${name}" not found in namespace ${namespace}`);
}

export function getRestore(ctx: CliContext, name: string): Promise<Restore> {
  return getInNamespace<Restore>(ctx, RESOURCES.Restore, name, restoreNotFound);
}

// ---- create -------------------------------------------------------------------------------------

interface CreateFlags extends FilterFlags {
  fromBackup?: string;
  fromSchedule?: string;
  namespaceMappings?: Record<string, string>;
  existingResourcePolicy?: string;
  dryRun?: boolean;
  restoreStatus?: string[];
  preserveNodeports?: boolean;
  labels?: Record<string, string>;
  wait?: boolean;
  resourceModifierConfigmap?: string;
}

const CONFIGMAP_NAME_RE = /^[-._a-zA-Z0-9]+$/;

/** The Restore spec `restore create` submits, from its flags (exported for tests). */
export function restoreSpecFromFlags(f: CreateFlags): RestoreSpec {
  if ((f.fromBackup === undefined) === (f.fromSchedule === undefined)) {
    throw new UsageError('give exactly one of --from-backup BACKUP or --from-schedule SCHEDULE');
  }
  const spec: RestoreSpec = filterSpec(f);
  if (f.fromBackup !== undefined) spec.backupName = f.fromBackup;
  if (f.fromSchedule !== undefined) spec.scheduleName = f.fromSchedule;
  if (f.namespaceMappings !== undefined) {
    spec.namespaceMapping = f.namespaceMappings;
  }
  if (f.existingResourcePolicy !== undefined) {
    if (!(EXISTING_RESOURCE_POLICIES as readonly string[]).includes(f.existingResourcePolicy)) {
      throw new UsageError(`--existing-resource-policy must be ${EXISTING_RESOURCE_POLICIES.join(' or ')}, not "${f.existingResourcePolicy}"`);
    }
    spec.existingResourcePolicy = f.existingResourcePolicy as ExistingResourcePolicy;
  }
  if (f.dryRun === true) spec.dryRun = true;
  if (f.restoreStatus !== undefined) spec.restoreStatus = { includedResources: f.restoreStatus };
  if (f.preserveNodeports === true) spec.preserveNodePorts = true;
  if (f.resourceModifierConfigmap !== undefined) {
    if (!CONFIGMAP_NAME_RE.test(f.resourceModifierConfigmap) || f.resourceModifierConfigmap.length > 253) {
      throw new UsageError(`--resource-modifier-configmap: "${f.resourceModifierConfigmap}" is not a valid ConfigMap name`);
    }
    spec.resourceModifier = { kind: 'ConfigMap', name: f.resourceModifierConfigmap };
  }
  refuseSpecErrors(restoreSpecErrors(spec));
  return spec;
}

async function createRestore(cmd: Command, s: Session): Promise<void> {
  const f = cmd.opts<CreateFlags>();
  const spec = restoreSpecFromFlags(f);
  for (const [k, v] of Object.entries(f.labels ?? {})) {
    const p = labelKeyProblem(k) ?? labelValueProblem(v);
    if (p !== undefined) throw new UsageError(`--labels: ${p}`);
  }
  const given = cmd.processedArgs[0] as string | undefined;
  if (given !== undefined) checkName('restore', given);
  const ctx = s.client();
  const source = await restoreSource(ctx, spec);
  const name = checkName('restore', given ?? `${source}-${timestampSuffix()}`);
  const restore = newRestore(name, ctx.namespace, spec, f.labels);
  try {
    await ctx.client.create(RESOURCES.Restore, ctx.namespace, restore);
  } catch (err) {
    if (isAlreadyExists(err)) throw new CliError(`restore "${name}" already exists in namespace ${ctx.namespace}`);
    throw err;
  }
  out(`Restore request "${name}" submitted successfully${spec.dryRun === true ? ' (dry run: nothing will be written to the cluster)' : ''}.`);
  if (f.wait !== true) {
    out(`Run \`stowage restore describe ${name}\` or \`stowage restore logs ${name}\` for more details.`);
    return;
  }
  await waitForRestore(ctx, name, spec.dryRun === true);
}

/** What the restore is named after: its backup, which must have finished with a tarball, or its schedule, which must exist. */
async function restoreSource(ctx: CliContext, spec: RestoreSpec): Promise<string> {
  if (spec.backupName === undefined) {
    const schedule = spec.scheduleName ?? '';
    await getSchedule(ctx, schedule);
    return schedule;
  }
  const b: Backup = await getBackup(ctx, spec.backupName);
  const phase = b.status?.phase ?? 'New';
  if (phase === 'Canceled') {
    throw new CliError(`backup "${spec.backupName}" was canceled before it finished: it holds no complete tarball and can never be restored; restore a Completed or PartiallyFailed backup`);
  }
  if (phase !== 'Completed' && phase !== 'PartiallyFailed') {
    throw new CliError(`backup "${spec.backupName}" is ${phase}; only a Completed or PartiallyFailed backup can be restored`);
  }
  return spec.backupName;
}

/** --wait: follows the restore to the end and fails unless it Completed. */
async function waitForRestore(ctx: CliContext, name: string, dryRun: boolean): Promise<void> {
  out('Waiting for the restore to complete. Ctrl-C stops waiting; the restore goes on in the server.');
  const final = await waitForRun<Restore>({
    ctx,
    res: RESOURCES.Restore,
    kind: 'restore',
    name,
    noun: dryRun ? 'items checked' : 'items restored',
    snapshot: (r) => ({ phase: r.status?.phase ?? 'New', done: r.status?.progress?.itemsRestored ?? 0, total: r.status?.progress?.totalItems ?? 0 }),
    isTerminal: (r) => isRestoreTerminal(r.status?.phase),
  });
  const phase = final.status?.phase ?? 'New';
  const sum = final.status?.summary;
  const counts = sum === undefined ? '' : ` (${summaryCounts(sum, dryRun)})`;
  out(`Restore completed with status: ${phase}${counts}. Run \`stowage restore describe ${name}\` or \`stowage restore logs ${name}\` for more details.`);
  if (phase !== 'Completed') {
    const reason = final.status?.failureReason ?? final.status?.validationErrors?.join('; ');
    throw new CliError(`restore "${name}" finished ${phase}${reason ? `: ${reason}` : ''}`);
  }
}

/** `created 3, updated 0, skipped 1, failed 0`; for a dry run, what would be done ("would fail": nothing failed). */
export function summaryCounts(sum: { created: number; updated: number; skipped: number; failed: number }, dryRun: boolean): string {
  const w = dryRun ? 'would ' : '';
  return dryRun
    ? `${w}create ${sum.created}, ${w}update ${sum.updated}, ${w}skip ${sum.skipped}, ${w}fail ${sum.failed}`
    : `created ${sum.created}, updated ${sum.updated}, skipped ${sum.skipped}, failed ${sum.failed}`;
}

// ---- get ----------------------------------------------------------------------------------------

export const RESTORE_COLUMNS = ['NAME', 'BACKUP', 'STATUS', 'STARTED', 'COMPLETED', 'ERRORS', 'WARNINGS', 'CREATED', 'SELECTOR'];

export function restoreRows(items: readonly Restore[]): string[][] {
  return items.map((r) => [
    r.metadata.name,
    r.spec.backupName ?? (r.spec.scheduleName !== undefined ? `(schedule ${r.spec.scheduleName})` : ''),
    `${r.status?.phase ?? 'New'}${r.spec.dryRun === true ? ' (dry run)' : ''}`,
    formatTimestamp(r.status?.startTimestamp),
    formatTimestamp(r.status?.completionTimestamp),
    String(r.status?.errors ?? 0),
    String(r.status?.warnings ?? 0),
    formatTimestamp(r.metadata.creationTimestamp),
    selectorText(r.spec),
  ]);
}

async function getRestores(cmd: Command, s: Session): Promise<void> {
  const { format, names, ctx, items, missing } = await fetchForGet(cmd, s, RESOURCES.Restore, getRestore);
  if (format === 'table') {
    if (items.length > 0) process.stdout.write(formatTable(RESTORE_COLUMNS, restoreRows(items)));
    else if (missing.length === 0) process.stderr.write(`No restores found in namespace ${ctx.namespace}.\n`);
  } else {
    printObjects(items, 'RestoreList', format, names.length === 1);
  }
  failMissing(missing);
}

// ---- describe -----------------------------------------------------------------------------------

/** One item's outcome, as the restore writes it into its results file. */
export interface ItemOutcome {
  groupResource: string;
  namespace: string;
  name: string;
  action: 'created' | 'updated' | 'skipped' | 'failed';
  reason: string;
  validated?: boolean;
  /** What changed the item on the way (mapping actions, resource modifier rules). */
  transforms?: string[];
  /** Dry run only: the object as it would be written. */
  patched?: Record<string, unknown>;
  /** A created pod's restore hooks (a dry run's: what they would do). */
  hooks?: string[];
}

/** The restore-<r>-results.gz file: warnings and errors by scope, and (when written) every item's outcome. */
export interface RestoreResultsFile {
  warnings?: ScopedMessages;
  errors?: ScopedMessages;
  outcomes?: ItemOutcome[];
}

const ACTION_TITLES: Record<ItemOutcome['action'], [string, string]> = {
  created: ['Created', 'Would be created'],
  updated: ['Updated', 'Would be updated'],
  skipped: ['Skipped', 'Would be skipped'],
  failed: ['Failed', 'Would fail'],
};

/** Under an item with --details: what transformed it, and (dry run) the object as it would be written. */
function detailsOf(o: ItemOutcome): string {
  let s = '';
  for (const t of o.transforms ?? []) s += `      transformed by ${t}\n`;
  if (o.patched !== undefined) {
    s += '      as it would be written:\n';
    s += YAML.stringify(o.patched).trimEnd().split('\n').map((l) => `        ${l}\n`).join('');
  }
  return s;
}

export function outcomesSection(outcomes: readonly ItemOutcome[], dryRun: boolean, details = false): string {
  if (outcomes.length === 0) return `${dryRun ? 'Plan' : 'Items'}:  <none>\n`;
  let s = dryRun ? 'Plan (dry run: nothing was written to the cluster):\n' : 'Items:\n';
  for (const act of ['created', 'updated', 'skipped', 'failed'] as const) {
    const list = outcomes.filter((o) => o.action === act);
    if (list.length === 0) continue;
    s += `  ${ACTION_TITLES[act][dryRun ? 1 : 0]} (${list.length}):\n`;
    for (const o of [...list].sort((a, b) => `${a.groupResource}/${a.namespace}/${a.name}`.localeCompare(`${b.groupResource}/${b.namespace}/${b.name}`))) {
      const id = `${o.groupResource} ${o.namespace === '' ? '' : `${o.namespace}/`}${o.name}`;
      const why = o.reason !== '' && o.reason !== act ? `: ${o.reason}` : '';
      // The server's reason says it was not validated; results written by older servers may not.
      const unvalidated = dryRun && o.validated === false && !o.reason.includes('not validated') ? ' (not validated by the API server)' : '';
      s += `    ${id}${why}${unvalidated}${!details && (o.transforms?.length ?? 0) > 0 ? ' (transformed; --details shows how)' : ''}\n`;
      // Hooks are listed without --details: a dry run is how a user checks which would run.
      for (const h of o.hooks ?? []) s += `      hook: ${h}\n`;
      if (details) s += detailsOf(o);
    }
  }
  return s;
}

export async function fetchRestoreResults(ctx: CliContext, name: string, timeoutMs: number): Promise<RestoreResultsFile | undefined> {
  try {
    const body = await download(ctx, { kind: 'RestoreResults', name }, { timeoutMs });
    const v = await readJson(body, `the results of restore "${name}"`);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new CliError(`the results of restore "${name}" are not an object`);
    return v as RestoreResultsFile;
  } catch (err) {
    if (err instanceof HttpStatusError && err.status === 404) return undefined;
    throw err;
  }
}

/** The Hooks line of `restore describe`: restore hooks run and failed (status.hookStatus), or nothing when none ran. */
export function hooksField(st: Pick<RestoreStatus, 'hookStatus'>): string {
  const h = st.hookStatus;
  return h === undefined ? '' : formatFields([['Hooks', `${h.hooksAttempted ?? 0} attempted, ${h.hooksFailed ?? 0} failed`]]);
}

export async function describeRestoreText(ctx: CliContext, r: Restore, timeoutMs: number, details = false): Promise<string> {
  const st = r.status ?? {};
  const phase = st.phase ?? 'New';
  const dryRun = r.spec.dryRun === true;
  let s = metadataSection(r.metadata) + '\n';
  s += describeRunHeader(`${phase}${dryRun ? ' (dry run)' : ''}`, st.validationErrors, st.failureReason, st.errors, st.warnings, st.waitingFor);
  // A restore from a schedule records the backup it picked in spec.backupName when it starts.
  const picked = r.spec.backupName ?? '';
  const fromSchedule = (r.spec.scheduleName ?? '') !== '';
  const source: Array<[string, string]> = fromSchedule ? [['Schedule', r.spec.scheduleName ?? '']] : [];
  source.push(['Backup', picked !== '' ? picked : fromSchedule ? '<the newest Completed backup of the schedule, picked when the restore starts>' : '<none>']);
  s += formatFields(source) + '\n';
  s += filtersSection(r.spec) + '\n';
  s += formatFields([
    ['Namespace mappings', mapOrNone(r.spec.namespaceMapping, ' -> ')],
    ['Existing resource policy', r.spec.existingResourcePolicy ?? 'none'],
    ['Restore status of', r.spec.restoreStatus?.includedResources?.join(', ') ?? '<none>'],
    ['Preserve node ports', r.spec.preserveNodePorts === true ? 'yes' : 'no'],
    ['Resource modifier', r.spec.resourceModifier !== undefined ? `${r.spec.resourceModifier.kind ?? 'ConfigMap'} ${r.spec.resourceModifier.name ?? ''}` : '<none>'],
  ]);
  s += '\n';
  s += formatFields([
    ['Started', formatTimestamp(st.startTimestamp)],
    ['Completed', formatTimestamp(st.completionTimestamp)],
    ['Items restored', progressText(st.progress?.itemsRestored, st.progress?.totalItems)],
  ]);
  if (st.summary !== undefined) {
    const w = dryRun ? 'would be ' : '';
    s += formatFields([['Summary', `${st.summary.created} ${w}created, ${st.summary.updated} ${w}updated, ${st.summary.skipped} ${w}skipped, ${st.summary.failed} ${dryRun ? 'would fail' : 'failed'}`]]);
  }
  s += hooksField(st);
  s += '\n';
  const finished = phase === 'Completed' || phase === 'PartiallyFailed' || phase === 'Failed' || phase === 'Canceled';
  if (phase === 'Canceled' && !dryRun) s += canceledNote(r.metadata.name);
  if (finished) {
    try {
      const results = await fetchRestoreResults(ctx, r.metadata.name, timeoutMs);
      if (results === undefined) s += 'Results:  <not in object storage>\n';
      else {
        if (results.outcomes !== undefined) s += outcomesSection(results.outcomes, dryRun, details) + '\n';
        s += messagesSection('Warnings', results.warnings) + '\n' + messagesSection('Errors', results.errors);
      }
    } catch (err) {
      s += `Results:  <not available: ${errorMessage(err)}>\n`;
    }
    s += '\n';
  }
  s += await eventsSection(ctx, 'Restore', r.metadata);
  return s;
}

/** What a canceled restore left behind, and how to find it. */
export function canceledNote(name: string): string {
  return 'The restore was canceled: the items listed below as Created or Updated were written before it stopped and stay in the cluster;\n' +
    `the rest of the backup was not restored. Created objects carry the label ${LABEL_RESTORE_NAME}=${labelValue(name)}.\n\n`;
}

async function describeRestores(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output: string; timeout: string; details?: boolean }>();
  const format = parseOutputFormat(o.output);
  const names = cmd.processedArgs[0] as string[];
  const timeoutMs = parseTimeout('timeout', o.timeout);
  const ctx = s.client();
  const { items, missing } = await fetchNamed<Restore>(
    ctx,
    names,
    async () => (await ctx.client.listAll<Restore>(RESOURCES.Restore, { namespace: ctx.namespace })).items,
    (n) => getRestore(ctx, n),
  );
  if (format !== 'table') {
    printObjects(items, 'RestoreList', format, names.length === 1);
    failMissing(missing);
    return;
  }
  const parts: string[] = [];
  for (const r of items) parts.push(await describeRestoreText(ctx, r, timeoutMs, o.details === true));
  if (parts.length > 0) process.stdout.write(parts.join('\n---\n\n'));
  else if (missing.length === 0) process.stderr.write(`No restores found in namespace ${ctx.namespace}.\n`);
  failMissing(missing);
}

// ---- registration -------------------------------------------------------------------------------

export function restoreCommand(): Command {
  const restore = new Command('restore').description('Restore from backups and inspect restores');
  const get = getSubcommand({ listed: 'restores', plural: 'restores', selectorHelp: 'only restores with these labels', run: getRestores });
  const describe = describeSubcommand({
    description: 'Show the details of restores; for a dry run, what would be created, updated or skipped and why', plural: 'restores', run: describeRestores,
    more: (c) => c
      .addOption(outputOption())
      .option('--details', 'also show what transformed each item (mapping actions, resource modifier rules) and, for a dry run, the object as it would be written')
      .addOption(new Option('--timeout <duration>', 'how long to wait for the server to provide the results').default('1m')),
  });
  for (const c of [createSubcommand(), get, describe, logsSubcommand('restore', getRestore), cancelCommand('restore')]) restore.addCommand(c);
  return restore;
}

function createSubcommand(): Command {
  return addGlobalOptions(
    addFilterFlags(
      new Command('create')
        .description('Restore a backup')
        .argument('[name]', 'name of the restore (default: BACKUP-yyyyMMddHHmmss)')
        .usage('[NAME] --from-backup BACKUP [flags]')
        .option('--from-backup <backup>', 'the backup to restore')
        .option('--from-schedule <schedule>', 'restore the newest Completed backup of this schedule (recorded as the restore\'s backup when it starts)'),
      'restore',
    ),
  )
    .option('--namespace-mappings <mappings>', `restore namespaces under other names, e.g. prod:staging,a:b (at most ${SPEC_LIST_CAPS.namespaceMapping})`, keyValueList('namespace-mappings', ':'))
    .addOption(
      new Option('--existing-resource-policy <policy>', 'what to do with objects that already exist: leave them and warn, or update them to match the backup').choices([
        ...EXISTING_RESOURCE_POLICIES,
      ]),
    )
    .option('--dry-run', 'only report what would be created, updated or skipped; write nothing to the cluster')
    .option('--restore-status <resources>', 'also restore the status of these resources, comma-separated (* for all)', commaList)
    .option('--preserve-nodeports', 'keep the nodePorts of Services')
    .option('--resource-modifier-configmap <name>', 'apply the resource modifier rules (Velero\'s format) in this ConfigMap of the server\'s namespace')
    .option('--labels <labels>', 'labels for the restore, e.g. ticket=123', keyValueList('labels', '='))
    .option('-w, --wait', 'wait for the restore to finish, showing its progress')
    .addHelpText(
      'after',
      `
Examples:
  stowage restore create --from-backup app-1 --wait
  stowage restore create app-copy --from-backup app-1 --namespace-mappings app:app-copy
  stowage restore create --from-backup app-1 --dry-run --existing-resource-policy update --wait`,
    )
    .action(action(async (cmd, s) => createRestore(cmd, s)));
}
