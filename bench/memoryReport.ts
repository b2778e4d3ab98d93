// The memory pass's command line, goals and report (bench/memory.ts runs it): pure, so the rules
// and the rendering are unit-tested (memoryReport.test.ts).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { positiveInt } from './args.js';
import { envText, GOALS, type BenchReport, type StowageRun } from './report.js';
import type { RestoreRow } from './stowage.js';

export const MEMORY_USAGE = `usage: npm run bench:memory -- [--objects N[,N...]] [--namespaces M] [--memory-limit MIB] [--heap-sample] [--node-arg FLAG]... [--out FILE] [--no-build] [--dist DIR]
  --objects LIST    object counts to measure, smallest first is the baseline (default 5000,50000)
  --namespaces M    namespaces to spread each count over (default 10)
  --memory-limit MIB  the server container's memory limit its heap is sized for (default: deploy/'s); 0: none
  --heap-sample     also record where the server's memory is at its peak (V8's heap spaces, Buffers) with bench/heapSampler.mjs
  --node-arg FLAG   a node flag for the server; repeatable
  --out FILE        JSON report (default bench/results/memory.json); the markdown goes next to it (.md)
  --no-build        use dist/ as it is instead of rebuilding it when src/ is newer
  --dist DIR        run the server from another build (an A/B against the commit before a change)`;

/** Issue 35: peak RSS at 50k within 1.20× of 5k; the goal spans ten times the baseline's objects. */
export const MEMORY_GROWTH_GOAL = GOALS.memoryGrowth;
const GROWTH_SPAN = 10;
export const MEMORY_REPORT_SCHEMA = 1;

/** One line of bench/heapSampler.mjs: the server's memory at its highest RSS, in MiB. */
export interface HeapPeak {
  seconds: number;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, { size: number; used: number }>;
}

export interface MemoryRow {
  objects: number;
  backup: StowageRun & { heapAtPeak?: HeapPeak };
  restore: RestoreRow & { heapAtPeak?: HeapPeak };
}

export interface MemoryReport {
  schema: number;
  date: string;
  machine: BenchReport['machine'];
  loadAtStart: number[];
  params: { namespaces: number; serverMemoryLimitMiB: number; serverNodeArgs: string[]; serverEnv?: Record<string, string> };
  rows: MemoryRow[];
  goals: { goal: string; measured: string; met: boolean }[];
  totalSeconds: number;
}

export interface MemoryArgs {
  help: boolean;
  objects: number[];
  namespaces: number;
  memoryLimitMiB: number | undefined;
  heapSample: boolean;
  nodeArgs: string[];
  out: string;
  build: boolean;
  dist: string | undefined;
}

export function parseMemoryArgs(argv: readonly string[], root: string): MemoryArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      objects: { type: 'string' }, namespaces: { type: 'string' }, 'memory-limit': { type: 'string' }, 'heap-sample': { type: 'boolean', default: false },
      'node-arg': { type: 'string', multiple: true }, out: { type: 'string' }, 'no-build': { type: 'boolean', default: false }, dist: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  const objects = (values.objects ?? '5000,50000').split(',').map((v) => positiveInt('objects', v.trim(), 0));
  for (let i = 1; i < objects.length; i++) {
    if ((objects[i] ?? 0) <= (objects[i - 1] ?? 0)) throw new Error(`--objects must be increasing (the first is the baseline), not ${values.objects ?? ''}`);
  }
  const namespaces = positiveInt('namespaces', values.namespaces, 10);
  if (namespaces > (objects[0] ?? 0)) throw new Error('--namespaces may not exceed the smallest --objects');
  const limit = values['memory-limit'];
  return {
    help: values.help, objects, namespaces,
    memoryLimitMiB: limit === undefined ? undefined : limit === '0' ? 0 : positiveInt('memory-limit', limit, 0),
    heapSample: values['heap-sample'], nodeArgs: values['node-arg'] ?? [],
    out: path.resolve(values.out ?? path.join(root, 'bench/results/memory.json')), build: !values['no-build'], dist: values.dist,
  };
}

/** A row's peak against the baseline's. */
export const growthOf = (row: MemoryRow, base: MemoryRow, what: 'backup' | 'restore'): number => row[what].serverPeakRssBytes / base[what].serverPeakRssBytes;

/** The goals: growth against the smallest N within GROWTH_SPAN times it, and every peak under the container's limit. */
export function memoryGoals(rows: readonly MemoryRow[], limitMiB: number): MemoryReport['goals'] {
  const base = rows[0];
  if (base === undefined) return [];
  const goals: MemoryReport['goals'] = [];
  for (const row of rows.slice(1)) {
    if (row.objects > base.objects * GROWTH_SPAN) continue;
    for (const what of ['backup', 'restore'] as const) {
      const g = growthOf(row, base, what);
      goals.push({ goal: `server peak RSS of the ${what} at N=${row.objects} ≤ ${MEMORY_GROWTH_GOAL}× at N=${base.objects}`, measured: `${g.toFixed(2)}×`, met: g <= MEMORY_GROWTH_GOAL });
    }
  }
  if (limitMiB > 0) {
    for (const row of rows) {
      const peak = Math.max(row.backup.serverPeakRssBytes, row.restore.serverPeakRssBytes) / 1024 ** 2;
      goals.push({ goal: `N=${row.objects}: backup and restore complete under the ${limitMiB} MiB memory limit`, measured: `peak ${peak.toFixed(0)} MiB`, met: peak < limitMiB });
    }
  }
  return goals;
}

export const mib = (b: number): string => (b / 1024 ** 2).toFixed(0);

function heapCell(h: HeapPeak | undefined): string {
  if (h === undefined) return 'not sampled';
  const old = h.spaces.old_space;
  const young = (h.spaces.new_space?.size ?? 0) + (h.spaces.semi_space?.size ?? 0);
  const lo = h.spaces.large_object_space;
  const other = h.rss - h.heapTotal - h.external;
  return `heap ${h.heapTotal.toFixed(0)} (old ${old?.size.toFixed(0) ?? '?'} of which ${old?.used.toFixed(0) ?? '?'} used, young ${young.toFixed(0)}, large objects ${lo?.size.toFixed(0) ?? '?'}), outside V8 ${h.external.toFixed(0)}, rest ${other.toFixed(0)}`;
}

export function toMemoryMarkdown(r: MemoryReport): string {
  const base = r.rows[0];
  const lines = [
    `Stowage memory pass, ${r.date}: ${r.params.namespaces} namespaces per N; ${r.machine.cpus} × ${r.machine.cpuModel}, Node ${r.machine.node}; ` +
      `load average at the start ${r.loadAtStart.join(' ')}, at the end ${r.machine.loadAverage.join(' ')}. Server heap: ${r.params.serverNodeArgs.join(' ') || "V8's defaults"}` +
      `${r.params.serverMemoryLimitMiB > 0 ? ` (sized for a ${r.params.serverMemoryLimitMiB} MiB limit)` : ''}${envText(r.params.serverEnv)}. Each run on a fresh server after a warm-up backup; peak RSS is VmHWM.`,
    '',
    '| N | Backup (s) | Items | Server peak RSS (MiB) | Growth | Restore (s) | Items | Server peak RSS (MiB) | Growth |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const row of r.rows) {
    const growth = (what: 'backup' | 'restore'): string => (base === undefined || row === base ? '' : `${growthOf(row, base, what).toFixed(2)}×`);
    lines.push(`| ${row.objects} | ${row.backup.seconds.toFixed(1)} | ${row.backup.items} | ${mib(row.backup.serverPeakRssBytes)} | ${growth('backup')} | ` +
      `${row.restore.seconds.toFixed(1)} | ${row.restore.items} | ${mib(row.restore.serverPeakRssBytes)} | ${growth('restore')} |`);
  }
  const sampled = r.rows.filter((row) => row.backup.heapAtPeak !== undefined || row.restore.heapAtPeak !== undefined);
  if (sampled.length > 0) {
    lines.push('', 'At each peak (MiB; "rest" is RSS less V8\'s heap and its external memory: code, stacks, malloc):', '');
    for (const row of sampled) {
      lines.push(`- N=${row.objects}, backup: ${heapCell(row.backup.heapAtPeak)}; restore: ${heapCell(row.restore.heapAtPeak)}.`);
    }
  }
  lines.push('', ...r.rows.map((row) => `N=${row.objects}: restore ${row.restore.created} created, ${row.restore.skipped} skipped, ${row.restore.failed} failed; ` +
    `${row.restore.seededObjectsAfter} of ${row.objects} seeded objects present afterwards.`));
  lines.push('', '| Goal | Measured | Met |', '| --- | --- | --- |');
  for (const g of r.goals) lines.push(`| ${g.goal} | ${g.measured} | ${g.met ? 'yes' : '**no**'} |`);
  lines.push('', `Total time: ${r.totalSeconds.toFixed(1)} s.`);
  return lines.join('\n');
}

