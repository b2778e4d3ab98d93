// The benchmark's report: one JSON document (every figure) and its markdown rendering, with the
// ratios Stowage/floor and the goals of issue 35 (which tightened issue 7's) checked against them.
import os from 'node:os';

export const REPORT_SCHEMA = 7;

/** Issue 35's targets: a backup (also a team user's) and a restore (both trust modes) against their floors, the rest against the plain row. */
export const GOALS = {
  backup: 1.1,
  restore: 1.05,
  pluginOverhead: 1.2,
  encryption: 1.1,
  signing: 1.1,
  memoryGrowth: 1.2,
} as const;

export interface ProcessPeak {
  command: string;
  peakRssBytes: number;
  cpuSeconds: number;
}

/** A backup or restore run by the Stowage server, as seen from outside. */
export interface StowageRun {
  name: string;
  phase: string;
  /** From creating the resource to seeing it Completed. */
  seconds: number;
  items: number;
  warnings: number;
  errors: number;
  serverPeakRssBytes: number;
  /** Sum of the plugin processes' peaks. */
  pluginsPeakRssBytes: number;
  plugins: ProcessPeak[];
  serverCpuSeconds: number;
  /** Server and plugin processes together. */
  cpuSeconds: number;
  /** The server's log, for profiling by hand. */
  logFile: string;
}

/** A Stowage backup row: medians over the rounds; `signed`: the first round's backup records a signature (status.signature). */
export type BackupRow = StowageRun & { rounds: number[]; tarballBytes: number; signed: boolean };

export interface BenchReport {
  schema: number;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; platform: string; loadAverage: number[] };
  params: {
    objects: number;
    namespaces: number;
    pageSize: number;
    clientQps: number;
    clientBurst: number;
    listConcurrency: number;
    restoreConcurrency: number;
    seedConcurrency: number;
    /** Rounds of the backups (floor, engine alone, Stowage); their figures are medians. */
    backupRounds: number;
    /** The container memory limit the server's heap was sized for, in MiB; 0 when none (schema 2). */
    serverMemoryLimitMiB: number;
    /** The node flags that sized it. */
    serverNodeArgs: string[];
    /** The deployment's allocator settings the server ran with (bench/server.ts deployedServerEnv); absent before session 20. */
    serverEnv?: Record<string, string>;
  };
  seed: { objects: number; byKind: Record<string, number>; seconds: number; objectsPerSecond: number };
  /** `seconds` and `cpuSeconds` are medians over the rounds; `rounds` holds every round's seconds. */
  backupFloor: { seconds: number; rounds: number[]; items: number; listRequests: number; tarballBytes: number; cpuSeconds: number };
  /** src/backup's engine in the benchmark's process, with the S3 store in-process: no server, no plugin. */
  backupEngine: { seconds: number; rounds: number[]; phase: string; items: number; tarballBytes: number; cpuSeconds: number };
  /** Medians over the rounds, peaks the highest; the restore uses the first round's backup. */
  backup: BackupRow;
  backupWithPlugin: BackupRow & { stampedItems: number };
  /** The Stowage backup to a location with client-side encryption, in the same rounds (schema 4). */
  backupEncrypted: BackupRow;
  /** The Stowage backup to a location that does not sign (`spec.signing.disabled`), in the same rounds (schema 7). */
  backupUnsigned: BackupRow;
  /**
   * The same backup created by a team user with ordinary RBAC (a Role and RoleBinding in each
   * namespace, not system:masters), in the same rounds: RBAC is walked for every review (schema 5).
   */
  backupTeam: BackupRow;
  restoreFloor: { seconds: number; readSeconds: number; items: number; created: number; existed: number; skipped: number; cpuSeconds: number };
  /** In trust mode requester (the default): every request of the restore impersonates its creator. */
  restore: StowageRun & { created: number; skipped: number; failed: number; seededObjectsAfter: number };
  /** The same restore in trust mode cluster-admin (the server's own rights), into other fresh namespaces. */
  restoreClusterAdmin: StowageRun & { created: number; skipped: number; failed: number; seededObjectsAfter: number };
  /** A restore of the encrypted backup, trust mode requester, into other fresh namespaces (schema 4). */
  restoreEncrypted: StowageRun & { created: number; skipped: number; failed: number; seededObjectsAfter: number };
  /**
   * backup, teamBackup, restore, restoreClusterAdmin: Stowage / floor; engine: in-process engine / floor;
   * pluginOverhead: with / without the action; impersonation: restore / restoreClusterAdmin;
   * encryptedBackup, encryptedRestore: encrypted / unencrypted Stowage run; signing: the (signed)
   * Stowage backup / the unsigned one.
   */
  ratios: {
    backup: number; engine: number; restore: number; restoreClusterAdmin: number; impersonation: number; pluginOverhead: number;
    encryptedBackup: number; encryptedRestore: number; teamBackup: number; signing: number;
  };
  /** The peer's rows (`--peer velero`, schema 6): the same seeded objects, the same run. */
  peer?: PeerReport;
  /** Server peak RSS against a baseline run (--baseline), for the memory-growth goal. */
  memoryGrowth?: { baselineObjects: number; backup: number; restore: number };
  goals: Goal[];
  totalSeconds: number;
}

/** Velero, run beside Stowage on the same control plane, S3 server and objects (bench/peer). */
export interface PeerReport {
  tool: 'velero';
  version: string;
  awsPluginVersion: string;
  /** How long making sure the binaries exist took (a build when the cache had none). */
  buildSeconds: number;
  /** `velero server`'s speed flags (client QPS, burst, page size, item-block workers). */
  serverFlags: string[];
  /** Medians over the same rounds as Stowage's backups; the restore uses the first round's backup. */
  backup: StowageRun & { rounds: number[]; tarballBytes: number };
  /** Into fresh namespaces, as Stowage's restores. */
  restore: StowageRun & { seededObjectsAfter: number };
  ratios: PeerRatios;
}

/**
 * Time ratios (wall time, medians for the backups): the peer against the floors, Stowage against the
 * peer; memory: the peak RSS of Stowage's server and plugin processes together against the peer's.
 */
export interface PeerRatios {
  backupToFloor: number;
  restoreToFloor: number;
  stowageBackupToPeer: number;
  /** Stowage's restore in trust mode requester (the default). */
  stowageRestoreToPeer: number;
  /** Stowage's restore in trust mode cluster-admin: like Velero, with the server's own rights. */
  stowageRestoreClusterAdminToPeer: number;
  stowageBackupRssToPeer: number;
  stowageRestoreRssToPeer: number;
  /**
   * The server processes alone. The sums above add each plugin process's own peak; Velero starts its
   * plugin processes anew for each backup, restore and location check, so its sum adds processes that
   * never ran at the same time, while Stowage's plugin processes live as long as its server.
   */
  stowageBackupServerRssToPeer: number;
  stowageRestoreServerRssToPeer: number;
}

type Timed = { seconds: number };
type Measured = Timed & { serverPeakRssBytes: number; pluginsPeakRssBytes: number };

/** Server and plugin processes together: Stowage's S3 store and Velero's plugins both run as processes of their own. */
export const treePeakRss = (x: Measured): number => x.serverPeakRssBytes + x.pluginsPeakRssBytes;

export function peerRatios(
  r: { backupFloor: Timed; restoreFloor: Timed; backup: Measured; restore: Measured; restoreClusterAdmin: Timed },
  peer: { backup: Measured; restore: Measured },
): PeerRatios {
  return {
    backupToFloor: peer.backup.seconds / r.backupFloor.seconds,
    restoreToFloor: peer.restore.seconds / r.restoreFloor.seconds,
    stowageBackupToPeer: r.backup.seconds / peer.backup.seconds,
    stowageRestoreToPeer: r.restore.seconds / peer.restore.seconds,
    stowageRestoreClusterAdminToPeer: r.restoreClusterAdmin.seconds / peer.restore.seconds,
    stowageBackupRssToPeer: treePeakRss(r.backup) / treePeakRss(peer.backup),
    stowageRestoreRssToPeer: treePeakRss(r.restore) / treePeakRss(peer.restore),
    stowageBackupServerRssToPeer: r.backup.serverPeakRssBytes / peer.backup.serverPeakRssBytes,
    stowageRestoreServerRssToPeer: r.restore.serverPeakRssBytes / peer.restore.serverPeakRssBytes,
  };
}

export interface Goal {
  goal: string;
  target: string;
  measured: string;
  met: boolean | null;
}

export function machineInfo(): BenchReport['machine'] {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? (v[mid] ?? NaN) : ((v[mid - 1] ?? NaN) + (v[mid] ?? NaN)) / 2;
}

const r2 = (n: number): number => Math.round(n * 100) / 100;

/** Checks the goals; the memory-growth goal needs a baseline report (a run at N=5k). */
export function checkGoals(report: Omit<BenchReport, 'goals'>): Goal[] {
  const n = report.params.objects;
  const check = (goal: string, target: number, v: number): Goal => ({ goal, target: `≤ ${target}×`, measured: `${r2(v)}×`, met: v <= target });
  const goals: Goal[] = [
    check(`backup wall time ≤ ${GOALS.backup}× floor (N=${n})`, GOALS.backup, report.ratios.backup),
    check(`a team user's backup ≤ ${GOALS.backup}× floor (N=${n})`, GOALS.backup, report.ratios.teamBackup),
    check(`restore wall time ≤ ${GOALS.restore}× floor, trust mode requester (N=${n})`, GOALS.restore, report.ratios.restore),
    check(`restore wall time ≤ ${GOALS.restore}× floor, trust mode cluster-admin (N=${n})`, GOALS.restore, report.ratios.restoreClusterAdmin),
    check(`backup with a plugin action on every item ≤ ${GOALS.pluginOverhead}× backup without`, GOALS.pluginOverhead, report.ratios.pluginOverhead),
    check(`encrypted backup ≤ ${GOALS.encryption}× the unencrypted one`, GOALS.encryption, report.ratios.encryptedBackup),
    check(`encrypted restore ≤ ${GOALS.encryption}× the unencrypted one`, GOALS.encryption, report.ratios.encryptedRestore),
    check(`signed backup ≤ ${GOALS.signing}× the unsigned one`, GOALS.signing, report.ratios.signing),
  ];
  const m = report.memoryGrowth;
  for (const what of ['backup', 'restore'] as const) {
    goals.push(m === undefined
      ? { goal: `server peak RSS during ${what} ≤ ${GOALS.memoryGrowth}× its value at N=5k`, target: `≤ ${GOALS.memoryGrowth}×`, measured: 'needs --baseline (a report from a run at N=5k), or npm run bench:memory', met: null }
      : check(`server peak RSS during ${what} at N=${n} ≤ ${GOALS.memoryGrowth}× at N=${m.baselineObjects}`, GOALS.memoryGrowth, m[what]));
  }
  return goals;
}

const mib = (b: number): string => (b / 1024 ** 2).toFixed(0);
const s = (n: number): string => n.toFixed(1);

/** ", and its environment A=1 B=2": the deployment's settings a server ran with, if any. */
export function envText(env: Record<string, string> | undefined): string {
  const pairs = Object.entries(env ?? {}).map(([k, v]) => `${k}=${v}`);
  return pairs.length === 0 ? '' : `, and its environment ${pairs.join(' ')}`;
}

export function toMarkdown(r: BenchReport): string {
  const lines: string[] = [];
  lines.push(`Stowage benchmark, ${r.date}: N=${r.params.objects} objects in ${r.params.namespaces} namespaces; ` +
    `${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}; load average at the end ${r.machine.loadAverage.join(' ')}.`);
  lines.push(`Server limits: QPS ${r.params.clientQps}, burst ${r.params.clientBurst}, page size ${r.params.pageSize}, ` +
    `${r.params.listConcurrency} LISTs at once (backup), ${r.params.restoreConcurrency} creates at once (restore); the floors use the same. ` +
    `Backups: median of ${r.params.backupRounds} rounds (floor, engine alone and Stowage in turn, then the backups with the plugin on their own server; every round's time in brackets); ` +
    `each Stowage backup starts once the server's client has refilled its burst since the last one ended (${r2(r.params.clientBurst / r.params.clientQps)} s).`);
  lines.push(r.params.serverMemoryLimitMiB > 0
    ? `Server heap as in the deployed container: sized by Node for its ${r.params.serverMemoryLimitMiB} MiB memory limit, with the deployment's NODE_OPTIONS (${r.params.serverNodeArgs.join(' ')})${envText(r.params.serverEnv)}.`
    : `Server heap: V8's default for this machine's memory (no container memory limit; --memory-limit 0).`);
  lines.push('');
  lines.push('| Phase | Wall time (s) | Items | Objects/s | Server peak RSS (MiB) | Plugins peak RSS (MiB) | CPU (s) | Stowage / floor |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const rate = (items: number, secs: number): string => (secs > 0 ? (items / secs).toFixed(0) : '–');
  const rounds = (xs: readonly number[]): string => (xs.length > 1 ? ` (${xs.map(s).join(' / ')})` : '');
  lines.push(`| Seed (${Object.entries(r.seed.byKind).map(([k, v]) => `${v} ${k}`).join(', ')}) | ${s(r.seed.seconds)} | ${r.seed.objects} | ${rate(r.seed.objects, r.seed.seconds)} | | | | |`);
  lines.push(`| Backup floor (list + tar.gz + upload, ${(r.backupFloor.tarballBytes / 1024 ** 2).toFixed(1)} MiB) | ${s(r.backupFloor.seconds)}${rounds(r.backupFloor.rounds)} | ${r.backupFloor.items} | ${rate(r.backupFloor.items, r.backupFloor.seconds)} | | | ${s(r.backupFloor.cpuSeconds)} | |`);
  lines.push(`| Backup engine alone (in-process: no server, no plugin process) | ${s(r.backupEngine.seconds)}${rounds(r.backupEngine.rounds)} | ${r.backupEngine.items} | ${rate(r.backupEngine.items, r.backupEngine.seconds)} | | | ${s(r.backupEngine.cpuSeconds)} | ${r2(r.ratios.engine)}× |`);
  const run = (label: string, x: StowageRun & { rounds?: number[] }, ratio: string): string =>
    `| ${label} | ${s(x.seconds)}${rounds(x.rounds ?? [])} | ${x.items} | ${rate(x.items, x.seconds)} | ${mib(x.serverPeakRssBytes)} | ${mib(x.pluginsPeakRssBytes)} | ${s(x.cpuSeconds)} | ${ratio} |`;
  lines.push(run(`Stowage backup (${(r.backup.tarballBytes / 1024 ** 2).toFixed(1)} MiB)`, r.backup, `**${r2(r.ratios.backup)}×**`));
  lines.push(run('Stowage backup by a team user (a Role like admin in each namespace, not system:masters)', r.backupTeam, `**${r2(r.ratios.teamBackup)}×**`));
  lines.push(run('Stowage backup + plugin action on every item', r.backupWithPlugin, `**${r2(r.ratios.pluginOverhead)}×** of the backup without`));
  lines.push(run(`Stowage backup, client-side encrypted (${(r.backupEncrypted.tarballBytes / 1024 ** 2).toFixed(1)} MiB)`, r.backupEncrypted, `**${r2(r.ratios.encryptedBackup)}×** of the unencrypted backup`));
  lines.push(run('Stowage backup, unsigned (`spec.signing.disabled: true`)', r.backupUnsigned, `the signed backup takes **${r2(r.ratios.signing)}×** its time`));
  lines.push(`| Restore floor (download + parse + create) | ${s(r.restoreFloor.seconds)} | ${r.restoreFloor.items} | ${rate(r.restoreFloor.items, r.restoreFloor.seconds)} | | | ${s(r.restoreFloor.cpuSeconds)} | |`);
  lines.push(run('Stowage restore (trust mode requester: impersonating its creator)', r.restore, `**${r2(r.ratios.restore)}×**`));
  lines.push(run('Stowage restore (trust mode cluster-admin: the server\'s own rights)', r.restoreClusterAdmin, `${r2(r.ratios.restoreClusterAdmin)}×; requester mode takes **${r2(r.ratios.impersonation)}×** its time`));
  lines.push(run('Stowage restore of the encrypted backup (trust mode requester)', r.restoreEncrypted, `**${r2(r.ratios.encryptedRestore)}×** of the unencrypted restore`));
  lines.push('');
  lines.push(`Restore floor: ${r.restoreFloor.created} created, ${r.restoreFloor.existed} already there, ${r.restoreFloor.skipped} generated token secrets left out. ` +
    `Stowage restore: ${r.restore.created} created, ${r.restore.skipped} skipped, ${r.restore.failed} failed, ${r.restore.warnings} warnings; ` +
    `${r.restore.seededObjectsAfter} of ${r.seed.objects} seeded objects present afterwards. ` +
    `Plugin run: ${r.backupWithPlugin.stampedItems} of ${r.backupWithPlugin.items} items carry the plugin's annotation.`);
  if (r.peer !== undefined) lines.push('', ...peerMarkdown(r, r.peer));
  if (r.memoryGrowth !== undefined) {
    lines.push(`Memory growth against the N=${r.memoryGrowth.baselineObjects} baseline: backup ${r2(r.memoryGrowth.backup)}×, restore ${r2(r.memoryGrowth.restore)}×.`);
  }
  lines.push('');
  lines.push('| Goal | Target | Measured | Met |');
  lines.push('| --- | --- | --- | --- |');
  for (const g of r.goals) lines.push(`| ${g.goal} | ${g.target} | ${g.measured} | ${g.met === null ? 'not measured' : g.met ? 'yes' : '**no**'} |`);
  lines.push('');
  lines.push(`Total benchmark time: ${s(r.totalSeconds)} s.`);
  return lines.join('\n');
}

/** The peer's table: its rows beside the floors and Stowage's, with every ratio. */
export function peerMarkdown(r: { backup: Measured; restore: Measured }, p: PeerReport): string[] {
  const x = p.ratios;
  const rounds = (xs: readonly number[]): string => (xs.length > 1 ? ` (${xs.map(s).join(' / ')})` : '');
  const rate = (items: number, secs: number): string => (secs > 0 ? (items / secs).toFixed(0) : '–');
  const row = (label: string, v: StowageRun & { rounds?: number[] }, toFloor: string, stowage: string): string =>
    `| ${label} | ${s(v.seconds)}${rounds(v.rounds ?? [])} | ${v.items} | ${rate(v.items, v.seconds)} | ${mib(v.serverPeakRssBytes)} | ${mib(v.pluginsPeakRssBytes)} | ${s(v.cpuSeconds)} | ${toFloor} | ${stowage} |`;
  return [
    `Peer: Velero ${p.version} with velero-plugin-for-aws ${p.awsPluginVersion}, \`velero server ${p.serverFlags.join(' ')}\`, on the same control plane, S3 server and objects.`,
    '',
    '| Phase | Wall time (s) | Items | Objects/s | Server peak RSS (MiB) | Plugins peak RSS (MiB) | CPU (s) | Velero / floor | Stowage / Velero |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    row(`Velero backup (${(p.backup.tarballBytes / 1024 ** 2).toFixed(1)} MiB)`, p.backup, `${r2(x.backupToFloor)}×`,
      `**${r2(x.stowageBackupToPeer)}×** time; RSS ${r2(x.stowageBackupServerRssToPeer)}× (servers), ${r2(x.stowageBackupRssToPeer)}× (with plugins)`),
    row('Velero restore', p.restore, `${r2(x.restoreToFloor)}×`,
      `**${r2(x.stowageRestoreToPeer)}×** time (requester mode), ${r2(x.stowageRestoreClusterAdminToPeer)}× (cluster-admin); RSS ${r2(x.stowageRestoreServerRssToPeer)}× (servers), ${r2(x.stowageRestoreRssToPeer)}× (with plugins)`),
    '',
    `Velero restore: ${p.restore.items} items restored, ${p.restore.warnings} warnings, ${p.restore.errors} errors; ${p.restore.seededObjectsAfter} seeded objects present afterwards. ` +
      `RSS "with plugins" adds the server's peak and each plugin process's own (Stowage ${mib(treePeakRss(r.backup))} / ${mib(treePeakRss(r.restore))} MiB, ` +
      `Velero ${mib(treePeakRss(p.backup))} / ${mib(treePeakRss(p.restore))} MiB in backup / restore); Velero starts its plugin processes anew for each backup, restore and ` +
      `location check, so its sum may add processes that did not run at the same time (${p.backup.plugins.length} in the backup, ${p.restore.plugins.length} in the restore).`,
  ];
}
