// `stowage backup create|get|describe|logs|delete|download|verify`.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Command, Option } from 'commander';
import * as tar from 'tar-stream';
import {
  BACKUP_TERMINAL_PHASES,
  RESTORE_TERMINAL_PHASES,
  LABEL_STORAGE_LOCATION,
  RESOURCES,
  isBackupTerminal,
  newBackup,
  newDeleteBackupRequest,
  specFieldProblems,
  type Backup,
  type BackupHooks,
} from '../../apis/v1/index.js';
import { parseManifest, type BackupManifest } from '../../archive/index.js';
import type { PulledInRecord, VolumeSnapshotRecord } from '../../persistence/results.js';
import { isVeleroImport, VELERO_DELETE_NOTE } from '../../persistence/veleroBackup.js';
import { isAlreadyExists, isNotFound, type ResourceRef } from '../../kube/index.js';
import { sleep } from '../../util/backoff.js';
import { errorMessage } from '../../util/errors.js';
import type { ResourceRecord } from '../../persistence/results.js';
import { action, type Session } from './action.js';
import { checkAgreement } from '../../persistence/verify.js';
import { cancelCommand } from './cancel.js';
import { describeRunHeader } from './common.js';
import { eventsSection, filtersSection, messagesSection, metadataSection, progressText, selectorText, type ScopedMessages } from './describe.js';
import { download, HttpStatusError, readJson } from './download.js';
import { CliError, UsageError } from './errors.js';
import { backupSpecErrors } from '../../selection/specErrors.js';
import { addBackupSpecFlags, backupSpecFromFlags, checkLabels, hasBackupSpecFlags, type BackupSpecFlags } from './backupFlags.js';
import { checkName, parseSelector, parseTimeout, refuseSpecErrors } from './flags.js';
import type { CliContext } from './kubeContext.js';
import { addGlobalOptions, getInNamespace } from './kubeContext.js';
import {
  formatBytes,
  formatData,
  formatFields,
  formatTable,
  formatTimestamp,
  out,
  outputOption,
  parseOutputFormat,
  timeLeft,
  type OutputFormat,
} from './output.js';
import { printRunLog } from './runLog.js';
import { backupOfSchedule, getSchedule } from './scheduleTemplate.js';
import {
  addSelectionFlags, checkConfirmable, checkSelection, confirmOrStop, namesText, selectObjects, selectionText, type SelectionFlags,
} from './selection.js';
import { describeSubcommand, getSubcommand } from './subcommands.js';
import { waitForRun } from './wait.js';

const DEFAULT_DOWNLOAD_TIMEOUT = '1m';

export function backupNotFound(name: string, namespace: string): CliError {
  return new CliError(`backup "${name}" not found in namespace ${namespace}`);
}

export function getBackup(ctx: CliContext, name: string): Promise<Backup> {
  return getInNamespace<Backup>(ctx, RESOURCES.Backup, name, backupNotFound);
}

function timeoutOption(what: string, def = DEFAULT_DOWNLOAD_TIMEOUT): Option {
  return new Option('--timeout <duration>', `how long to wait for the server to provide the ${what}`).default(def);
}

function tlsOptions(cmd: Command): Command {
  return cmd
    .option('--cacert <file>', 'PEM file with the CA certificates of the object store, when it uses a private CA')
    .option('--insecure-skip-tls-verify', 'do not verify the object store\'s TLS certificate (insecure)');
}

// ---- create -------------------------------------------------------------------------------------

interface CreateFlags extends BackupSpecFlags {
  fromSchedule?: string;
  wait?: boolean;
}

async function createBackup(cmd: Command, s: Session): Promise<void> {
  const f = cmd.opts<CreateFlags>();
  const name = cmd.processedArgs[0] as string | undefined;
  const labels = checkLabels(f.labels);
  if (f.fromSchedule !== undefined) {
    if (hasBackupSpecFlags(f)) {
      throw new UsageError('--from-schedule takes the whole spec from the schedule; it cannot be combined with filter, --ttl, --storage-location or --snapshot-volumes flags');
    }
    if (name !== undefined) checkName('backup', name);
    const ctx = s.client();
    await submitBackup(ctx, backupOfSchedule(await getSchedule(ctx, f.fromSchedule), name, labels), f.wait === true);
    return;
  }
  if (name === undefined) throw new UsageError('a backup name is required (stowage backup create NAME), unless --from-schedule is given');
  checkName('backup', name);
  const spec = backupSpecFromFlags(f);
  refuseSpecErrors(backupSpecErrors(spec));
  const ctx = s.client();
  if (spec.storageLocation !== undefined) {
    try {
      await ctx.client.get(RESOURCES.BackupStorageLocation, ctx.namespace, spec.storageLocation);
    } catch (err) {
      if (isNotFound(err)) throw new CliError(`backup storage location "${spec.storageLocation}" not found in namespace ${ctx.namespace}`);
      throw err;
    }
  }
  await submitBackup(ctx, newBackup(name, ctx.namespace, spec, labels), f.wait === true);
}

/** Creates the backup and reports it; with `wait`, follows it to the end and fails unless it Completed. */
export async function submitBackup(ctx: CliContext, backup: Backup, wait: boolean): Promise<void> {
  const name = backup.metadata.name;
  try {
    await ctx.client.create(RESOURCES.Backup, ctx.namespace, backup);
  } catch (err) {
    if (isAlreadyExists(err)) throw new CliError(`backup "${name}" already exists in namespace ${ctx.namespace}`);
    throw err;
  }
  out(`Backup request "${name}" submitted successfully.`);
  if (!wait) {
    out(`Run \`stowage backup describe ${name}\` or \`stowage backup logs ${name}\` for more details.`);
    return;
  }
  out('Waiting for the backup to complete. Ctrl-C stops waiting; the backup goes on in the server.');
  const final = await waitForRun<Backup>({
    ctx,
    res: RESOURCES.Backup,
    kind: 'backup',
    name,
    noun: 'items backed up',
    snapshot: (b) => ({ phase: b.status?.phase ?? 'New', done: b.status?.progress?.itemsBackedUp ?? 0, total: b.status?.progress?.totalItems ?? 0 }),
    isTerminal: (b) => isBackupTerminal(b.status?.phase),
  });
  const phase = final.status?.phase ?? 'New';
  out(`Backup completed with status: ${phase}. Run \`stowage backup describe ${name}\` or \`stowage backup logs ${name}\` for more details.`);
  if (phase !== 'Completed') {
    const reason = final.status?.failureReason ?? final.status?.validationErrors?.join('; ');
    throw new CliError(`backup "${name}" finished ${phase}${reason ? `: ${reason}` : ''}`);
  }
}

// ---- get ----------------------------------------------------------------------------------------

function sortByName<T extends { metadata: { name: string } }>(items: T[]): T[] {
  return [...items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** Fetches the named objects (all when none are named); the missing ones become errors after output. */
export async function fetchNamed<T extends { metadata: { name: string } }>(
  ctx: CliContext,
  names: readonly string[],
  list: () => Promise<T[]>,
  get: (name: string) => Promise<T>,
): Promise<{ items: T[]; missing: CliError[] }> {
  if (names.length === 0) return { items: sortByName(await list()), missing: [] };
  const items: T[] = [];
  const missing: CliError[] = [];
  for (const n of names) {
    try {
      items.push(await get(n));
    } catch (err) {
      if (err instanceof CliError) missing.push(err);
      else throw err;
    }
  }
  return { items, missing };
}

/** What `get` shows: its -o format, the names asked for, and the objects found (all by -l, or the named ones) and not found. */
export async function fetchForGet<T extends { metadata: { name: string } }>(
  cmd: Command, s: Session, res: ResourceRef, get: (ctx: CliContext, name: string) => Promise<T>,
): Promise<{ format: OutputFormat; names: string[]; ctx: CliContext; items: T[]; missing: CliError[] }> {
  const o = cmd.opts<{ output: string; selector?: string }>();
  const format = parseOutputFormat(o.output);
  const names = cmd.processedArgs[0] as string[];
  if (o.selector !== undefined) parseSelector('selector', o.selector);
  const ctx = s.client();
  const { items, missing } = await fetchNamed<T>(
    ctx,
    names,
    async () => (await ctx.client.listAll<T>(res, { namespace: ctx.namespace, labelSelector: o.selector })).items,
    (n) => get(ctx, n),
  );
  return { format, names, ctx, items, missing };
}

/** Prints objects as kubectl does: one object as itself, several (or a listing) as a List. */
export function printObjects(items: readonly object[], listKind: string, format: 'json' | 'yaml', single: boolean): void {
  const value = single && items.length === 1 ? items[0] : { apiVersion: 'stowage.dev/v1', kind: listKind, items };
  process.stdout.write(formatData(value, format));
}

/** Reports the named objects that were not found, after the found ones were printed. */
export function failMissing(missing: CliError[]): void {
  if (missing.length === 0) return;
  for (const m of missing.slice(0, -1)) process.stderr.write(`error: ${m.message}\n`);
  throw missing[missing.length - 1] as CliError;
}

export function backupRows(items: readonly Backup[], now = Date.now()): string[][] {
  return items.map((b) => [
    b.metadata.name,
    b.status?.phase ?? 'New',
    String(b.status?.errors ?? 0),
    String(b.status?.warnings ?? 0),
    formatTimestamp(b.metadata.creationTimestamp),
    timeLeft(b.status?.expiration, now),
    b.spec.storageLocation ?? b.metadata.labels?.[LABEL_STORAGE_LOCATION] ?? '<default>',
    selectorText(b.spec),
  ]);
}

export const BACKUP_COLUMNS = ['NAME', 'STATUS', 'ERRORS', 'WARNINGS', 'CREATED', 'EXPIRES', 'STORAGE LOCATION', 'SELECTOR'];

async function getBackups(cmd: Command, s: Session): Promise<void> {
  const { format, names, ctx, items, missing } = await fetchForGet(cmd, s, RESOURCES.Backup, getBackup);
  if (format === 'table') {
    if (items.length > 0) process.stdout.write(formatTable(BACKUP_COLUMNS, backupRows(items)));
    else if (missing.length === 0) process.stderr.write(`No backups found in namespace ${ctx.namespace}.\n`);
  } else {
    printObjects(items, 'BackupList', format, names.length === 1);
  }
  failMissing(missing);
}

// ---- describe -----------------------------------------------------------------------------------

type ResourceList = Record<string, string[]>;

async function fetchResourceList(ctx: CliContext, name: string, timeoutMs: number, tlsOpts: ReturnType<typeof tls> = {}): Promise<ResourceList> {
  const body = await download(ctx, { kind: 'BackupResourceList', name }, { timeoutMs, ...tlsOpts });
  const v = await readJson(body, `the resource list of backup "${name}"`);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new CliError(`the resource list of backup "${name}" is not a map of resources`);
  return v as ResourceList;
}

type StoredResults = { warnings?: ScopedMessages; errors?: ScopedMessages; resources?: ResourceRecord[]; pulledIn?: PulledInRecord[]; volumeSnapshots?: VolumeSnapshotRecord[] };

const SNAPSHOTS_TITLE = 'CSI volume snapshots';

/** Each volume's CSI snapshot: the claim, its snapshot handle, size and time (results.volumeSnapshots). */
export function volumeSnapshotsSection(records: readonly VolumeSnapshotRecord[] | undefined): string {
  if (records === undefined || records.length === 0) return `${SNAPSHOTS_TITLE}:  <none>\n`;
  const rows = [...records]
    .sort((a, b) => (`${a.namespace}/${a.persistentVolumeClaim}` < `${b.namespace}/${b.persistentVolumeClaim}` ? -1 : 1))
    .map((r) => [`${r.namespace}/${r.persistentVolumeClaim}`, r.snapshotHandle, r.restoreSize ?? '<unknown>', r.creationTime ?? '<unknown>', r.volumeSnapshotClass, r.volumeSnapshotContent]);
  return `${SNAPSHOTS_TITLE}:\n` + formatTable(['CLAIM', 'SNAPSHOT HANDLE', 'SIZE', 'TAKEN', 'CLASS', 'CONTENT'], rows).trimEnd().replace(/^/gm, '  ') + '\n';
}

export async function fetchResults(ctx: CliContext, name: string, timeoutMs: number, tlsOpts: ReturnType<typeof tls> = {}): Promise<StoredResults | undefined> {
  try {
    const body = await download(ctx, { kind: 'BackupResults', name }, { timeoutMs, ...tlsOpts });
    return (await readJson(body, `the results of backup "${name}"`)) as StoredResults;
  } catch (err) {
    if (err instanceof HttpStatusError && err.status === 404) return undefined;
    throw err;
  }
}

export function resourceListSection(list: ResourceList): string {
  const groups = Object.keys(list).sort();
  if (groups.length === 0) return 'Resource List:  <none>\n';
  let s = 'Resource List:\n';
  for (const gr of groups) {
    s += `  ${gr}:\n`;
    for (const item of list[gr] ?? []) s += `    - ${item}\n`;
  }
  return s;
}

const PULLED_IN_TITLE = 'Pulled in (cluster-scoped dependencies)';

/** The cluster-scoped items a backup took because items in its scope need them, by resource, with why. */
export function pulledInSection(records: readonly PulledInRecord[] | undefined): string {
  if (records === undefined || records.length === 0) return `${PULLED_IN_TITLE}:  <none>\n`;
  const byResource = new Map<string, PulledInRecord[]>();
  for (const r of records) byResource.set(r.groupResource, [...(byResource.get(r.groupResource) ?? []), r]);
  let s = `${PULLED_IN_TITLE}:\n`;
  for (const gr of [...byResource.keys()].sort()) {
    s += `  ${gr}:\n`;
    const list = [...(byResource.get(gr) ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const r of list) s += `    - ${r.name}: ${r.reason}\n`;
  }
  return s;
}

/**
 * The completeness record: one row per resource in scope, with the version its items were read at
 * (and the other versions they were also stored at), how many were listed and written, and why any
 * were left out. Empty resources are summed up in one line, so the table shows what holds items.
 */
export function completenessSection(records: readonly ResourceRecord[] | undefined): string {
  if (records === undefined) return 'Resources:  <not recorded (the backup was made by an older version)>\n';
  const shown = records.filter((r) => r.listed > 0 || r.written > 0 || r.error !== undefined);
  const empty = records.length - shown.length;
  let s = `Resources:  ${records.length} in scope, ${records.reduce((n, r) => n + r.written, 0)} items written` +
    `${records.some((r) => r.error !== undefined) ? `, ${records.filter((r) => r.error !== undefined).length} with errors` : ''}\n`;
  if (shown.length > 0) {
    const rows = shown.map((r) => [
      r.groupResource,
      r.otherVersions === undefined || r.otherVersions.length === 0 ? r.apiVersion : `${r.apiVersion} (+${r.otherVersions.join(', ')})`,
      String(r.listed), String(r.written), r.error ?? '',
    ]);
    s += formatTable(['RESOURCE', 'VERSION', 'LISTED', 'WRITTEN', 'ERROR'], rows).trimEnd().replace(/^/gm, '  ') + '\n';
  }
  if (empty > 0) s += `  (${empty} more listed with no items)\n`;
  // Items a LIST did not return but the backup took by name: an operator reading the table asks why.
  if (records.some((r) => r.written > r.listed)) s += '  (WRITTEN above LISTED: items taken by name as dependencies of items in scope, see "Pulled in")\n';
  return s;
}

/** spec.hooks in one line: its entries and how many commands each runs before and after a pod. */
function hooksSummary(hooks: BackupHooks | undefined): string {
  const each = (hooks?.resources ?? []).map((e) => `${e.name} (${(e.pre ?? []).length} pre, ${(e.post ?? []).length} post)`);
  return `${each.join(', ')}; a pod's own hook annotations win over them`;
}

export async function describeBackupText(ctx: CliContext, b: Backup, opts: { details: boolean; timeoutMs: number }): Promise<string> {
  const st = b.status ?? {};
  const phase = st.phase ?? 'New';
  let s = metadataSection(b.metadata) + '\n';
  s += describeRunHeader(phase, st.validationErrors, st.failureReason, st.errors, st.warnings, st.waitingFor);
  s += filtersSection(b.spec) + '\n';
  // Fields Stowage does not implement (hooks, volume snapshots, ...) are named as such, never shown
  // as if they ran: a Backup of this server that sets one fails validation; one synced from a
  // bucket (written by Velero) may carry them, and Stowage did not act on them.
  const notImplemented = specFieldProblems('Backup', b.spec).map((p) => p.path);
  const fields: [string, string][] = [['Storage Location', b.spec.storageLocation ?? '<default>'], ['TTL', b.spec.ttl ?? '<server default>']];
  if (notImplemented.length > 0) fields.push(['Not implemented', `${notImplemented.join(', ')} (set, but Stowage does not act on them)`]);
  if ((b.spec.hooks?.resources ?? []).length > 0) fields.push(['Hooks', hooksSummary(b.spec.hooks)]);
  s += formatFields(fields);
  s += '\n';
  s += formatFields([
    ['Format version', st.formatVersion ?? '<none>'],
    ['Started', formatTimestamp(st.startTimestamp)],
    ['Completed', formatTimestamp(st.completionTimestamp)],
    ['Expiration', formatTimestamp(st.expiration)],
    ['Encryption', st.encryption === undefined ? 'none' : `${st.encryption.algorithm ?? '<unknown algorithm>'}, key "${st.encryption.keyId ?? '<unknown>'}" of ${st.encryption.keyManager ?? '<unknown key manager>'}`],
    ['Signature', st.signature === undefined ? 'none' : `${st.signature.algorithm ?? '<unknown algorithm>'}, key "${st.signature.keyId ?? '<unknown>'}"`],
  ]);
  s += '\n';
  s += formatFields([
    ['Total items to be backed up', st.progress?.totalItems === undefined ? '<none>' : String(st.progress.totalItems)],
    ['Items backed up', progressText(st.progress?.itemsBackedUp, st.progress?.totalItems)],
    // Velero's names, as in its describe: every hook tried (annotations' and the spec's), and those that failed.
    ['Hooks attempted', String(st.hookStatus?.hooksAttempted ?? 0)],
    ['Hooks failed', String(st.hookStatus?.hooksFailed ?? 0)],
    ['CSI volume snapshots', st.csiVolumeSnapshotsAttempted === undefined ? '<none>' : `${st.csiVolumeSnapshotsCompleted ?? 0} of ${st.csiVolumeSnapshotsAttempted} completed`],
  ]);
  s += '\n';
  s += opts.details ? await detailsSection(ctx, b, phase, opts.timeoutMs) : 'Resource List:  <use --details to see it>\n';
  s += '\n' + (await eventsSection(ctx, 'Backup', b.metadata));
  return s;
}

/** With --details: the resource list, and from the results file the completeness record, messages, pulled-in items and snapshots. */
async function detailsSection(ctx: CliContext, b: Backup, phase: string, timeoutMs: number): Promise<string> {
  const st = b.status ?? {};
  const finished = phase === 'Completed' || phase === 'PartiallyFailed' || phase === 'Failed' || phase === 'Canceled';
  if (!finished) return `Resource List:  <not available: the backup is ${phase}>\n`;
  let s = '';
  // A canceled backup kept no tarball: its results (below) say how far it got.
  if (phase === 'Canceled') s += 'Resource List:  <none: the backup was canceled and keeps no tarball>\n';
  else {
    try {
      s += resourceListSection(await fetchResourceList(ctx, b.metadata.name, timeoutMs));
    } catch (err) {
      s += `Resource List:  <not available: ${errorMessage(err)}>\n`;
    }
  }
  // One read of the results file feeds the completeness record, the messages and what was pulled in.
  let results: StoredResults | undefined;
  let unavailable: string | undefined;
  try {
    results = await fetchResults(ctx, b.metadata.name, timeoutMs);
  } catch (err) {
    unavailable = `<not available: ${errorMessage(err)}>`;
  }
  if (unavailable !== undefined) s += `\nResources:  ${unavailable}\n`;
  else s += '\n' + completenessSection(results?.resources);
  if ((st.warnings ?? 0) > 0 || (st.errors ?? 0) > 0) {
    if (unavailable !== undefined) s += `\nWarnings and errors:  ${unavailable}\n`;
    else if (results !== undefined) s += '\n' + messagesSection('Warnings', results.warnings) + '\n' + messagesSection('Errors', results.errors);
  }
  // What the backup took beyond its scope, because items in it need them (results.pulledIn).
  if (unavailable !== undefined) s += `\n${PULLED_IN_TITLE}:  ${unavailable}\n`;
  else if (results !== undefined) s += '\n' + pulledInSection(results.pulledIn);
  if (unavailable !== undefined) s += `\n${SNAPSHOTS_TITLE}:  ${unavailable}\n`;
  else if (results !== undefined) s += '\n' + volumeSnapshotsSection(results.volumeSnapshots);
  return s;
}

async function describeBackups(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output: string; details?: boolean; timeout: string }>();
  const format = parseOutputFormat(o.output);
  const timeoutMs = parseTimeout('timeout', o.timeout);
  const names = cmd.processedArgs[0] as string[];
  const ctx = s.client();
  const { items, missing } = await fetchNamed<Backup>(
    ctx,
    names,
    async () => (await ctx.client.listAll<Backup>(RESOURCES.Backup, { namespace: ctx.namespace })).items,
    (n) => getBackup(ctx, n),
  );
  if (format !== 'table') {
    if (o.details === true) {
      const withLists = [];
      for (const b of items) {
        const finished = ['Completed', 'PartiallyFailed', 'Failed', 'Canceled'].includes(b.status?.phase ?? '');
        const results = finished ? await fetchResults(ctx, b.metadata.name, timeoutMs) : undefined;
        withLists.push({
          backup: b,
          resourceList: finished && b.status?.phase !== 'Canceled' ? await fetchResourceList(ctx, b.metadata.name, timeoutMs) : null,
          // The completeness record and the pulled-in dependencies; null before the backup ends or when it was made without them.
          resources: results?.resources ?? null,
          pulledIn: results?.pulledIn ?? null,
          volumeSnapshots: results?.volumeSnapshots ?? null,
        });
      }
      process.stdout.write(formatData(withLists.length === 1 && names.length === 1 ? withLists[0] : withLists, format));
    } else {
      printObjects(items, 'BackupList', format, names.length === 1);
    }
    failMissing(missing);
    return;
  }
  const parts: string[] = [];
  for (const b of items) parts.push(await describeBackupText(ctx, b, { details: o.details === true, timeoutMs }));
  if (parts.length > 0) process.stdout.write(parts.join('\n---\n\n'));
  else if (missing.length === 0) process.stderr.write(`No backups found in namespace ${ctx.namespace}.\n`);
  failMissing(missing);
}

// ---- logs ---------------------------------------------------------------------------------------

async function waitUntilStarted(kind: 'backup' | 'restore', name: string, get: () => Promise<{ status?: { phase?: string } }>): Promise<void> {
  let said = false;
  for (;;) {
    const obj = await get();
    const phase = obj.status?.phase ?? 'New';
    if (phase !== 'New') return;
    if (!said) {
      process.stderr.write(`The ${kind} "${name}" has not started yet; waiting for it to start...\n`);
      said = true;
    }
    await sleep(500);
  }
}

export async function runLogs(
  s: Session,
  kind: 'backup' | 'restore',
  name: string,
  o: { follow?: boolean; output: string; timeout: string; cacert?: string; insecureSkipTlsVerify?: boolean },
  get: (ctx: CliContext) => Promise<{ status?: { phase?: string; validationErrors?: string[] } }>,
): Promise<void> {
  const format = o.output.toLowerCase();
  if (format !== 'text' && format !== 'table' && format !== 'json') throw new UsageError(`unknown log format "${o.output}" (use text or json)`);
  const timeoutMs = parseTimeout('timeout', o.timeout);
  const ctx = s.client();
  const obj = await get(ctx);
  const phase = obj.status?.phase ?? 'New';
  if (phase === 'FailedValidation') {
    throw new CliError(`${kind} "${name}" failed validation and has no log: ${(obj.status?.validationErrors ?? []).join('; ') || 'see describe'}`);
  }
  if (phase === 'New') {
    if (o.follow !== true) throw new CliError(`${kind} "${name}" has not started yet, so it has no log; use --follow to wait for it`);
    await waitUntilStarted(kind, name, () => get(ctx));
  }
  const printed = await printRunLog(ctx, kind === 'backup' ? 'BackupLog' : 'RestoreLog', name, {
    follow: o.follow === true,
    json: format === 'json',
    timeoutMs,
    ...(o.cacert !== undefined ? { cacert: o.cacert } : {}),
    ...(o.insecureSkipTlsVerify === true ? { insecureSkipTlsVerify: true } : {}),
  });
  if (o.follow === true && !printed.interrupted) {
    const phase = await waitUntilFinished(kind, () => get(ctx), Date.now() + timeoutMs);
    if (phase === undefined) {
      process.stderr.write(`warning: the log of ${kind} "${name}" has ended but the ${kind} has not finished after ${o.timeout}; check it with \`stowage ${kind} describe ${name}\`\n`);
    }
  }
}

/**
 * The run's log closes before the server uploads it and records the final phase, so a followed log
 * can end a moment before the run does. Wait for that phase so "until the backup finishes" holds
 * for whatever the caller runs next. Returns the final phase, or undefined at the deadline.
 */
export async function waitUntilFinished(
  kind: 'backup' | 'restore',
  get: () => Promise<{ status?: { phase?: string } }>,
  deadline: number,
  pollMs = 250,
): Promise<string | undefined> {
  const terminal: readonly string[] = kind === 'backup' ? BACKUP_TERMINAL_PHASES : RESTORE_TERMINAL_PHASES;
  for (;;) {
    const phase = (await get()).status?.phase;
    if (phase !== undefined && terminal.includes(phase)) return phase;
    if (Date.now() >= deadline) return undefined;
    await sleep(pollMs);
  }
}

// ---- delete -------------------------------------------------------------------------------------

async function deleteBackups(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<SelectionFlags & { confirm?: boolean; wait?: boolean; timeout: string }>();
  const names = cmd.processedArgs[0] as string[];
  const timeoutMs = parseTimeout('timeout', o.timeout);
  checkSelection(names, o, 'backup', 'backups');
  checkConfirmable(o.confirm);
  const ctx = s.client();
  const selected = await selectObjects<Backup>(names, o, {
    kind: 'backup', plural: 'backups', namespace: ctx.namespace,
    get: (n) => getBackup(ctx, n),
    list: async (sel) => (await ctx.client.listAll<Backup>(RESOURCES.Backup, { namespace: ctx.namespace, labelSelector: sel })).items,
  });
  if (selected.length === 0) {
    out(`No ${selectionText(o, 'backups', ctx.namespace)}: nothing to delete.`);
    return;
  }
  const chosen = selected.map((b) => b.metadata.name);
  const imported = new Set(selected.filter((b) => isVeleroImport(b)).map((b) => b.metadata.name));
  const data = imported.size === chosen.length ? ' (imported from Velero: their data stays in the Velero bucket)' : ' and all their data in object storage';
  await confirmOrStop(o.confirm, `Delete ${namesText('backup', 'backups', chosen)}${data}?`);
  for (const n of chosen) {
    await ctx.client.create(RESOURCES.DeleteBackupRequest, ctx.namespace, newDeleteBackupRequest(n, ctx.namespace));
    out(`Request to delete backup "${n}" submitted successfully.`);
    if (imported.has(n)) out(VELERO_DELETE_NOTE(n));
  }
  if (o.wait !== true) {
    out(`The ${chosen.length === 1 ? 'backup' : 'backups'} will be fully deleted once the data in object storage and the restores are removed.`);
    return;
  }
  const deadline = Date.now() + timeoutMs;
  for (const n of chosen) {
    for (;;) {
      try {
        await ctx.client.get(RESOURCES.Backup, ctx.namespace, n);
      } catch (err) {
        if (isNotFound(err)) break;
        throw err;
      }
      if (Date.now() > deadline) throw new CliError(`backup "${n}" still exists after ${o.timeout}; see \`kubectl -n ${ctx.namespace} get deletebackuprequests\``);
      await sleep(500);
    }
    out(`Backup "${n}" deleted.`);
  }
}

// ---- download -----------------------------------------------------------------------------------

async function downloadBackup(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output?: string; force?: boolean; timeout: string; cacert?: string; insecureSkipTlsVerify?: boolean }>();
  const name = cmd.processedArgs[0] as string;
  const timeoutMs = parseTimeout('timeout', o.timeout);
  const toStdout = o.output === '-';
  const file = toStdout ? '-' : path.resolve(o.output ?? `${name}-data.tar.gz`);
  if (!toStdout && fs.existsSync(file) && o.force !== true) throw new CliError(`${file} already exists; use --force to overwrite it`);
  const ctx = s.client();
  const b = await getBackup(ctx, name);
  const phase = b.status?.phase ?? 'New';
  if (phase !== 'Completed' && phase !== 'PartiallyFailed') throw new CliError(`backup "${name}" is ${phase}; only a Completed or PartiallyFailed backup has contents to download`);
  const body = await download(ctx, { kind: 'BackupContents', name }, { timeoutMs, ...tls(o) });
  try {
    if (toStdout) {
      await pipeline(body.stream, process.stdout);
      return;
    }
    const partial = `${file}.partial`;
    try {
      await pipeline(body.stream, fs.createWriteStream(partial));
      fs.renameSync(partial, file);
    } catch (err) {
      fs.rmSync(partial, { force: true });
      throw err;
    }
  } finally {
    await body.close();
  }
  out(`Backup "${name}" downloaded to ${file} (${formatBytes(fs.statSync(file).size)}).`);
}

function tls(o: { cacert?: string; insecureSkipTlsVerify?: boolean }): { cacert?: string; insecureSkipTlsVerify?: boolean } {
  const r: { cacert?: string; insecureSkipTlsVerify?: boolean } = {};
  if (o.cacert !== undefined) r.cacert = o.cacert;
  if (o.insecureSkipTlsVerify === true) r.insecureSkipTlsVerify = true;
  return r;
}

// ---- verify -------------------------------------------------------------------------------------

export interface VerifyProblem {
  /** `disagreement`: the manifest, the resource list and the completeness record do not describe the same items. */
  kind: 'tarball' | 'mismatch' | 'missing' | 'extra' | 'unreadable' | 'disagreement';
  path?: string;
  message: string;
}

export interface VerifyReport {
  backup: string;
  ok: boolean;
  tarball: { sha256: string; bytes: number; expectedSha256: string; expectedBytes: number };
  /** Files in the manifest. */
  checked: number;
  matched: number;
  problems: VerifyProblem[];
}

/** Compares what was read from the tarball with the manifest: every difference, classified. */
export function compareWithManifest(
  backup: string,
  got: { tarball: { sha256: string; bytes: number }; entries: Record<string, string> },
  manifest: BackupManifest,
): VerifyReport {
  const problems: VerifyProblem[] = [];
  if (got.tarball.sha256 !== manifest.tarball.sha256) {
    problems.push({ kind: 'tarball', message: `the tarball's SHA-256 is ${got.tarball.sha256} (${got.tarball.bytes} bytes), the manifest says ${manifest.tarball.sha256} (${manifest.tarball.bytes} bytes)` });
  }
  let matched = 0;
  for (const [p, sha] of Object.entries(manifest.entries)) {
    const have = Object.hasOwn(got.entries, p) ? got.entries[p] : undefined;
    if (have === undefined) problems.push({ kind: 'missing', path: p, message: `${p} is in the manifest but not in the tarball` });
    else if (have !== sha) problems.push({ kind: 'mismatch', path: p, message: `${p} has SHA-256 ${have}, the manifest says ${sha}` });
    else matched++;
  }
  for (const p of Object.keys(got.entries).sort()) {
    if (!Object.hasOwn(manifest.entries, p)) problems.push({ kind: 'extra', path: p, message: `${p} is in the tarball but not in the manifest` });
  }
  return {
    backup,
    ok: problems.length === 0,
    tarball: { sha256: got.tarball.sha256, bytes: got.tarball.bytes, expectedSha256: manifest.tarball.sha256, expectedBytes: manifest.tarball.bytes },
    checked: Object.keys(manifest.entries).length,
    matched,
    problems,
  };
}

/**
 * SHA-256 of the gzipped stream and of every file entry in it. Deliberately not the validating
 * archive reader: a tampered archive must still be hashed entry by entry to say what changed.
 */
export async function hashTarball(source: AsyncIterable<Uint8Array>): Promise<{ tarball: { sha256: string; bytes: number }; entries: Record<string, string> }> {
  const whole = createHash('sha256');
  let bytes = 0;
  async function* tap(): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      whole.update(chunk);
      bytes += chunk.byteLength;
      yield chunk;
    }
  }
  const extract = tar.extract();
  const input = Readable.from(tap());
  const gunzip = createGunzip();
  input.on('error', (err) => gunzip.destroy(err));
  gunzip.on('error', (err) => extract.destroy(err));
  input.pipe(gunzip).pipe(extract);
  const entries: Record<string, string> = {};
  for await (const entry of extract) {
    const h = createHash('sha256');
    for await (const c of entry) h.update(c as Buffer);
    if (entry.header.type === 'file') entries[entry.header.name] = h.digest('hex');
  }
  return { tarball: { sha256: whole.digest('hex'), bytes }, entries };
}

async function verifyBackup(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<{ output: string; timeout: string; cacert?: string; insecureSkipTlsVerify?: boolean }>();
  const format = parseOutputFormat(o.output);
  const name = cmd.processedArgs[0] as string;
  const timeoutMs = parseTimeout('timeout', o.timeout);
  const ctx = s.client();
  const b = await getBackup(ctx, name);
  const phase = b.status?.phase ?? 'New';
  if (phase !== 'Completed' && phase !== 'PartiallyFailed') throw new CliError(`backup "${name}" is ${phase}; only a Completed or PartiallyFailed backup can be verified`);
  let manifest: BackupManifest;
  try {
    const body = await download(ctx, { kind: 'BackupManifest', name }, { timeoutMs, ...tls(o) });
    manifest = parseManifest(await readJson(body, `the manifest of backup "${name}"`));
  } catch (err) {
    if (err instanceof HttpStatusError && err.status === 404) {
      throw new CliError(`backup "${name}" has no manifest in object storage: Stowage writes one with every finished backup, so it was deleted (or the backup was made by Velero), and the backup cannot be verified`);
    }
    throw err;
  }
  const body = await download(ctx, { kind: 'BackupContents', name }, { timeoutMs, ...tls(o) });
  let report: VerifyReport;
  try {
    report = compareWithManifest(name, await hashTarball(body.stream), manifest);
  } catch (err) {
    if (err instanceof CliError) throw err;
    report = {
      backup: name,
      ok: false,
      tarball: { sha256: '', bytes: 0, expectedSha256: manifest.tarball.sha256, expectedBytes: manifest.tarball.bytes },
      checked: Object.keys(manifest.entries).length,
      matched: 0,
      problems: [{ kind: 'unreadable', message: `the tarball cannot be read: ${errorMessage(err)}` }],
    };
  } finally {
    await body.close();
  }
  // The tarball was compared with the manifest; now the manifest with the resource list and the completeness record.
  let agreement: string[];
  try {
    const list = await fetchResourceList(ctx, name, timeoutMs, tls(o));
    agreement = checkAgreement(manifest, list, (await fetchResults(ctx, name, timeoutMs, tls(o)))?.resources);
  } catch (err) {
    agreement = [`the resource list or the results of the backup cannot be read: ${errorMessage(err)}`];
  }
  for (const message of agreement) report.problems.push({ kind: 'disagreement', message });
  report.ok = report.problems.length === 0;
  if (format !== 'table') process.stdout.write(formatData(report, format));
  else {
    const t = report.tarball;
    if (t.sha256 !== '') out(`Tarball:  ${formatBytes(t.bytes)}, SHA-256 ${t.sha256}${t.sha256 === t.expectedSha256 ? ' (matches the manifest)' : ''}`);
    out(`Items:    ${report.matched} of ${report.checked} files match the manifest`);
    for (const p of report.problems) out(`${p.kind.toUpperCase().padEnd(10)} ${p.message}`);
    if (report.ok) {
      out(`Backup "${name}" is intact: the tarball and every item match the manifest written at backup time, and the resource list and the completeness record agree with it.`);
    }
  }
  if (!report.ok) throw new CliError(`backup "${name}" failed verification: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}`);
}

// ---- registration -------------------------------------------------------------------------------

export function backupCommand(): Command {
  const backup = new Command('backup').description('Create and manage backups');
  const get = getSubcommand({
    listed: 'backups', plural: 'backups', selectorHelp: 'only backups with these labels, e.g. stowage.dev/schedule-name=nightly', run: getBackups,
  });
  const describe = describeSubcommand({
    description: 'Show the details of backups', plural: 'backups', run: describeBackups,
    more: (c) => c
      .option('--details', 'also show the resource list and the warnings and errors, read from object storage')
      .addOption(outputOption())
      .addOption(timeoutOption('resource list')),
  });
  const logs = logsSubcommand('backup', getBackup);
  for (const c of [createSubcommand(), get, describe, logs, deleteSubcommand(), downloadSubcommand(), verifySubcommand(), cancelCommand('backup')]) {
    backup.addCommand(c);
  }
  return backup;
}

function createSubcommand(): Command {
  return addGlobalOptions(
    addBackupSpecFlags(
      new Command('create')
        .description('Create a backup')
        .argument('[name]', 'name of the backup (optional with --from-schedule)')
        .usage('NAME [flags]'),
      'the backup',
    ),
  )
    .option('--from-schedule <schedule>', 'create the backup from the template of this schedule (named and labelled as the schedule\'s own backups)')
    .option('-w, --wait', 'wait for the backup to finish, showing its progress')
    .addHelpText(
      'after',
      `
Examples:
  stowage backup create app-1 --include-namespaces app --wait
  stowage backup create cluster-wide --include-cluster-resources=true --ttl 72h
  stowage backup create web --selector app=web --exclude-resources secrets
  stowage backup create --from-schedule nightly`,
    )
    .action(action(async (cmd, s) => createBackup(cmd, s)));
}

/** `backup logs` and `restore logs`: a run's log, also while it runs. */
export function logsSubcommand(kind: 'backup' | 'restore', get: (ctx: CliContext, name: string) => Promise<{ status?: { phase?: string; validationErrors?: string[] } }>): Command {
  return addGlobalOptions(
    tlsOptions(
      new Command('logs')
        .description(`Show the log of a ${kind} (also while it runs)`)
        .argument('<name>', `the ${kind}`)
        .option('-f, --follow', `keep streaming new lines until the ${kind} finishes`)
        .addOption(new Option('-o, --output <format>', 'text, or json for the log lines as stored').default('text'))
        .addOption(timeoutOption('log')),
    ),
  ).action(
    action(async (cmd, s) => {
      const name = cmd.processedArgs[0] as string;
      await runLogs(s, kind, name, cmd.opts(), (ctx) => get(ctx, name));
    }),
  );
}

function deleteSubcommand(): Command {
  const del = addGlobalOptions(
    new Command('delete')
      .description('Delete backups: their data in object storage, their restores, and the Backup objects')
      .argument('[names...]', 'backups to delete (or --selector, or --all)')
      .option('--confirm', 'do not ask for confirmation')
      .option('-w, --wait', 'wait until the backups are gone')
      .addOption(new Option('--timeout <duration>', 'how long --wait waits').default('5m')),
  ).action(action(async (cmd, s) => deleteBackups(cmd, s)));
  addSelectionFlags(del, 'backups');
  return del;
}

function downloadSubcommand(): Command {
  return addGlobalOptions(
    tlsOptions(
      new Command('download')
        .description('Download the tarball of a backup')
        .argument('<name>', 'the backup')
        .option('-o, --output <file>', 'where to write the tarball; - for stdout (default: NAME-data.tar.gz)')
        .option('--force', 'overwrite the file if it exists')
        .addOption(timeoutOption('download URL')),
    ),
  ).action(action(async (cmd, s) => downloadBackup(cmd, s)));
}

function verifySubcommand(): Command {
  return addGlobalOptions(
    tlsOptions(
      new Command('verify')
        .description('Check a backup\'s tarball and every item in it against the SHA-256 manifest written at backup time')
        .argument('<name>', 'the backup')
        .addOption(outputOption())
        .addOption(timeoutOption('download URLs')),
    ),
  ).action(action(async (cmd, s) => verifyBackup(cmd, s)));
}
