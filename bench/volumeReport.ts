// The volume-snapshot row of the benchmark (issue 37): its options, its report and the report's
// markdown. Pure: bench/volumeHarness.ts measures, bench/volume-snapshots.ts runs it on the real node.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { positiveInt } from './args.js';
import { median, type BenchReport } from './report.js';

export const VOLUME_REPORT_SCHEMA = 1;

export const VOLUME_USAGE = `usage: npm run bench:volumes -- [--volumes N] [--rounds R] [--data KIB] [--out FILE] [--memory-limit MIB] [--no-build] [--dist DIR]
  --volumes N       bound claims on the CSI test driver's StorageClass in the backed-up namespace (default 20)
  --rounds R        rounds of: backup with snapshots, backup without, deletion of each (default 3)
  --data KIB        random data a pod writes to each volume before the rounds (default 256)
  --out FILE        JSON report (default bench/results/volumes.json); the markdown goes next to it (.md)
  --memory-limit MIB  the server container's memory limit its heap is sized for (default: deploy/'s); 0: none
  --no-build        use dist/ as it is instead of rebuilding it when src/ is newer
  --dist DIR        run the server from another build (an A/B)`;

export interface VolumeBenchArgs {
  help: boolean;
  volumes: number;
  rounds: number;
  dataBytes: number;
  out: string;
  /** undefined: deploy/'s limit (the caller reads it); 0: no limit. */
  memoryLimitMiB: number | undefined;
  build: boolean;
  dist: string | undefined;
}

/** `argv` as after `npm run bench:volumes --`; relative paths resolve against `root`. */
export function parseVolumeArgs(argv: readonly string[], root: string): VolumeBenchArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      volumes: { type: 'string' },
      rounds: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      'memory-limit': { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      dist: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const ml = values['memory-limit'];
  return {
    help: values.help,
    volumes: positiveInt('volumes', values.volumes, 20),
    rounds: positiveInt('rounds', values.rounds, 3),
    dataBytes: positiveInt('data', values.data, 256) * 1024,
    out: path.resolve(root, values.out ?? 'bench/results/volumes.json'),
    memoryLimitMiB: ml === undefined ? undefined : ml === '0' ? 0 : positiveInt('memory-limit', ml, 0),
    build: !values['no-build'],
    dist: values.dist === undefined ? undefined : path.resolve(root, values.dist),
  };
}

/** One measured run of a phase: wall time on a watch, and the server's and its plugins' CPU. */
export interface VolumeSample {
  seconds: number;
  serverCpuSeconds: number;
  /** Server and plugin processes together. */
  cpuSeconds: number;
}

/** A row: medians over the rounds, and every round's time. */
export interface VolumeRow {
  seconds: number;
  rounds: number[];
  serverCpuSeconds: number;
  cpuSeconds: number;
}

export function rowOf(samples: readonly VolumeSample[]): VolumeRow {
  if (samples.length === 0) throw new Error('a row needs at least one round');
  return {
    seconds: median(samples.map((x) => x.seconds)),
    rounds: samples.map((x) => x.seconds),
    serverCpuSeconds: median(samples.map((x) => x.serverCpuSeconds)),
    cpuSeconds: median(samples.map((x) => x.cpuSeconds)),
  };
}

export interface VolumeRatios {
  /** Backup with the snapshots / the same backup with snapshotVolumes: false (medians). */
  backup: number;
  /** Each round's own ratio, the two backups of one round side by side. */
  backupByRound: number[];
  /** What one snapshot adds to the backup's wall time: (with − without) / N, medians. */
  secondsPerSnapshot: number;
  /** Deleting the backup with its snapshots / deleting the one without (medians). */
  deletion: number;
  /** What deleting one snapshot adds: (with − without) / N, medians. */
  deletionSecondsPerSnapshot: number;
}

export function volumeRatios(volumes: number, r: { withSnapshots: VolumeRow; withoutSnapshots: VolumeRow; deleteWith: VolumeRow; deleteWithout: VolumeRow }): VolumeRatios {
  const byRound = r.withSnapshots.rounds.map((w, i) => w / (r.withoutSnapshots.rounds[i] ?? NaN));
  return {
    backup: r.withSnapshots.seconds / r.withoutSnapshots.seconds,
    backupByRound: byRound,
    secondsPerSnapshot: (r.withSnapshots.seconds - r.withoutSnapshots.seconds) / volumes,
    deletion: r.deleteWith.seconds / r.deleteWithout.seconds,
    deletionSecondsPerSnapshot: (r.deleteWith.seconds - r.deleteWithout.seconds) / volumes,
  };
}

export interface VolumeBenchReport {
  schema: number;
  date: string;
  machine: BenchReport['machine'];
  /** 1-, 5- and 15-minute load averages before the cluster started (the machine is shared). */
  loadAtStart: number[];
  /** The 1-minute load average at the end of each round. */
  loadByRound: number[];
  params: {
    volumes: number;
    rounds: number;
    dataBytesPerVolume: number;
    driver: string;
    storageClass: string;
    volumeSnapshotClass: string;
    trustMode: 'requester';
    serverMemoryLimitMiB: number;
    serverNodeArgs: string[];
  };
  setup: { clusterStartSeconds: number; claimsBoundSeconds: number; dataWrittenSeconds: number };
  /** snapshotVolumes: true; every round took N snapshots, each readyToUse. */
  withSnapshots: VolumeRow & { items: number; snapshotsAttempted: number; snapshotsCompleted: number };
  /** The same namespace with snapshotVolumes: false: the floor of the row. */
  withoutSnapshots: VolumeRow & { items: number };
  /** DeleteBackupRequest to Processed: its N VolumeSnapshotContents and the snapshots on the host gone. */
  deleteWith: VolumeRow;
  deleteWithout: VolumeRow;
  ratios: VolumeRatios;
  /** What RealCluster.stop() found different on the machine afterwards (empty: nothing). */
  leftovers: string[];
  serverLogs: string[];
  totalSeconds: number;
}

/** Hundredths: a backup without snapshots takes a fifth of a second. */
const s = (n: number): string => n.toFixed(2);
const r2 = (n: number): string => n.toFixed(2);

export function toVolumeMarkdown(r: VolumeBenchReport): string {
  const p = r.params;
  const lines: string[] = [];
  lines.push(`Stowage volume-snapshot benchmark, ${r.date}: ${p.volumes} bound claims (${p.dataBytesPerVolume / 1024} KiB written to each) on ${p.storageClass} ` +
    `(driver ${p.driver}, VolumeSnapshotClass ${p.volumeSnapshotClass}), on the real node; ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}.`);
  lines.push(`Load average before the cluster started ${r.loadAtStart.join(' ')}, at the end of each round ${r.loadByRound.map(r2).join(' / ')}, at the end ${r.machine.loadAverage.join(' ')}. ` +
    `Median of ${p.rounds} rounds (every round in brackets); in each round both backups, in a rotating order, then the deletion of each. ` +
    `Server from dist/ as its own process, trust mode ${p.trustMode}, heap ${p.serverMemoryLimitMiB > 0 ? `as deployed (${p.serverNodeArgs.join(' ')})` : "V8's default"}.`);
  lines.push('');
  lines.push('| Phase | Wall time (s) | Items | Snapshots | Server CPU (s) | CPU with plugins (s) | Ratio |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  const rounds = (xs: readonly number[]): string => (xs.length > 1 ? ` (${xs.map(s).join(' / ')})` : '');
  const row = (label: string, x: VolumeRow, items: string, snaps: string, ratio: string): string =>
    `| ${label} | ${s(x.seconds)}${rounds(x.rounds)} | ${items} | ${snaps} | ${s(x.serverCpuSeconds)} | ${s(x.cpuSeconds)} | ${ratio} |`;
  lines.push(row('Backup, snapshotVolumes: false (floor)', r.withoutSnapshots, String(r.withoutSnapshots.items), '0', ''));
  lines.push(row(`Backup with ${p.volumes} CSI snapshots (create → Completed)`, r.withSnapshots, String(r.withSnapshots.items),
    `${r.withSnapshots.snapshotsCompleted} of ${r.withSnapshots.snapshotsAttempted}`, `**${r2(r.ratios.backup)}×** the floor`));
  lines.push(row('Deletion of the backup without snapshots', r.deleteWithout, '', '', ''));
  lines.push(row(`Deletion of the backup with its ${p.volumes} snapshots (DeleteBackupRequest → Processed)`, r.deleteWith, '', String(p.volumes), `**${r2(r.ratios.deletion)}×** the deletion without`));
  lines.push('');
  lines.push(`The ${p.volumes} snapshots add ${s(r.withSnapshots.seconds - r.withoutSnapshots.seconds)} s to the backup (${r2(r.ratios.secondsPerSnapshot)} s per snapshot; ` +
    `ratio by round ${r.ratios.backupByRound.map(r2).join(' / ')}) and ${s(r.deleteWith.seconds - r.deleteWithout.seconds)} s to its deletion (${r2(r.ratios.deletionSecondsPerSnapshot)} s per snapshot).`);
  lines.push(`Set-up: cluster with the CSI stack ${s(r.setup.clusterStartSeconds)} s (including any wait for the real-node lock), ${p.volumes} claims bound ${s(r.setup.claimsBoundSeconds)} s, data written ${s(r.setup.dataWrittenSeconds)} s. ` +
    `Teardown: ${r.leftovers.length === 0 ? 'the machine as found' : `**left behind: ${r.leftovers.join('; ')}**`}. Total ${s(r.totalSeconds)} s.`);
  return lines.join('\n');
}
