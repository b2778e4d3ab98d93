// The plugin action's path in isolation (issue 35): the benchmark's plugin (bench/plugin, built on
// the SDK) through the plugin host's pool, its BackupItemAction on N items shaped like the bench's
// seeded objects as the API server lists them (managedFields and all), in pages of P items, U pages
// in flight at once (the backup engine's list units). No API server, no tarball: what the action
// costs, measured as wall time and CPU time of this process (the host) and of the plugin process.
// With --base DIR the same runs with another checkout's host code (DIR/src) and SDK (DIR/dist),
// in alternating rounds: an A/B in one sitting. Run `npm run build` first (the plugin uses dist/, or
// the build --dist names).
//
// With --profile DIR each plugin process writes a V8 CPU profile into DIR/<arm> when the run ends
// (summarise with bench/profile.ts); for the host's, run this file under `node --cpu-prof --import tsx`.
//
//   npx tsx bench/plugin-batch.ts [--items 10000] [--page 250] [--units 4] [--rounds 5] [--base /tmp/stowage-base] [--dist DIR] [--profile DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import winston from 'winston';
import type * as Host from '../src/plugin/host/index.js';
import type { KubeObject } from '../src/plugin/api/index.js';
import { buildBenchPlugin } from './plugin/build.js';
import { BENCH_ACTION, STAMP_ANNOTATION } from './plugin/names.js';
import { seedObject, seedPlan } from './seed.js';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '10000' }, page: { type: 'string', default: '250' }, units: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '5' }, base: { type: 'string' }, dist: { type: 'string' }, profile: { type: 'string' },
  },
});
const N = Number(values.items);
const PAGE = Number(values.page);
const UNITS = Number(values.units);
const ROUNDS = Number(values.rounds);
const ROOT = path.resolve(import.meta.dirname, '..');

const quiet = winston.createLogger({ level: 'error', transports: [new winston.transports.Console({ stderrLevels: ['error'] })] });

/** What a LIST returns for a seeded object: the server's metadata fields, managedFields included. */
function listed(i: number): KubeObject {
  const o = seedObject(seedPlan('bench', N, 10), 'run', i).body as KubeObject;
  const ts = '2026-12-05T05:00:00Z';
  return {
    ...o,
    metadata: {
      ...o.metadata, uid: `0b5e2a1c-${String(i).padStart(4, '0')}-4a3b-9c1d-8e7f6a5b4c3d`, resourceVersion: String(100000 + i), creationTimestamp: ts,
      managedFields: [{ manager: 'stowage-bench', operation: 'Update', apiVersion: o.apiVersion, time: ts, fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {}, 'f:tier': {} } } } }],
    },
  };
}

/** CPU time (user + system) of a process, all its threads, or with `thread` of that one thread alone. */
function cpuMsOf(pid: number, thread?: number): number {
  const stat = fs.readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}
const selfCpuMs = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

/** One run's wall time and CPU times (ms), each process's in all and on its main thread. */
interface Figures {
  wall: number;
  host: number;
  hostMain: number;
  plugin: number;
  pluginMain: number;
}

interface Arm {
  label: string;
  pool: Host.PluginPool;
  action: { executeBatch?: (input: { items: readonly KubeObject[]; backup: KubeObject }) => Promise<{ ok: boolean }[]> };
}

async function arm(label: string, root: string, dist: string): Promise<Arm> {
  const host = await import(path.join(root, 'src/plugin/host/index.ts')) as typeof Host;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `stowage-plugin-batch-${label}-`));
  buildBenchPlugin(dir, dist, values.profile === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile, label)}`]);
  const pool = await host.createPluginPool({ pluginDirs: [dir], logger: quiet });
  const handle = pool.handle({ kind: 'backup', namespace: 'bench', name: label });
  return { label, pool, action: handle.backupItemAction(BENCH_ACTION) };
}

async function main(): Promise<void> {
  const arms = [await arm('this', ROOT, path.resolve(values.dist ?? path.join(ROOT, 'dist')))];
  if (values.base !== undefined) arms.unshift(await arm('base', path.resolve(values.base), path.join(path.resolve(values.base), 'dist')));
  const items = Array.from({ length: N }, (_, i) => listed(i));
  const pages: KubeObject[][] = [];
  for (let i = 0; i < N; i += PAGE) pages.push(items.slice(i, i + PAGE));
  const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b', namespace: 'stowage' }, spec: { includedNamespaces: ['*'] } } as KubeObject;
  console.log(`${N} items (${(Buffer.byteLength(JSON.stringify(items)) / 1024 ** 2).toFixed(1)} MiB of JSON) in pages of ${PAGE}, ${UNITS} at once; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  // The main thread's share (JavaScript, and the GC work it does itself); the rest is V8's helper threads and libuv's pool.
  const run = async (a: Arm): Promise<Figures> => {
    const exec = a.action.executeBatch;
    if (exec === undefined) throw new Error('the remote action has no executeBatch');
    const pid = a.pool.status().find((s) => s.executable.includes('bench-plugin'))?.pid;
    const p0 = pid === undefined ? 0 : cpuMsOf(pid);
    const h0 = selfCpuMs();
    const hm0 = cpuMsOf(process.pid, process.pid);
    const pm0 = pid === undefined ? 0 : cpuMsOf(pid, pid);
    const t0 = performance.now();
    let next = 0;
    let stamped = 0;
    await Promise.all(Array.from({ length: UNITS }, async () => {
      for (let p = next++; p < pages.length; p = next++) {
        const results = await exec({ items: pages[p] ?? [], backup });
        for (const r of results) if (r.ok && (r as { output?: { item: KubeObject } }).output?.item.metadata.annotations?.[STAMP_ANNOTATION] === 'true') stamped++;
      }
    }));
    const wall = performance.now() - t0;
    if (stamped !== N) throw new Error(`${a.label}: ${stamped} of ${N} items came back stamped`);
    const pid2 = a.pool.status().find((s) => s.executable.includes('bench-plugin'))?.pid;
    const same = pid2 !== undefined && pid2 === pid;
    return {
      wall, host: selfCpuMs() - h0, hostMain: cpuMsOf(process.pid, process.pid) - hm0,
      plugin: same ? cpuMsOf(pid2) - p0 : NaN, pluginMain: same ? cpuMsOf(pid2, pid2) - pm0 : NaN,
    };
  };

  // Warm-up: starts each plugin process and lets V8 optimise both sides.
  for (const a of arms) await run(a);
  const figures = new Map<string, Figures[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const a of round % 2 === 0 ? arms : [...arms].reverse()) {
      const f = await run(a);
      figures.set(a.label, [...(figures.get(a.label) ?? []), f]);
      console.log(`round ${round + 1} ${a.label}: ${f.wall.toFixed(0)} ms wall, host CPU ${f.host.toFixed(0)} ms (main thread ${f.hostMain.toFixed(0)}), plugin CPU ${f.plugin.toFixed(0)} ms (main thread ${f.pluginMain.toFixed(0)}); load ${os.loadavg()[0]?.toFixed(2)}`);
    }
  }
  console.log(`\nmedians of ${ROUNDS} rounds (every round):`);
  for (const [label, fs_] of figures) {
    const col = (k: keyof Figures): string => `${median(fs_.map((f) => f[k])).toFixed(0)} (${fs_.map((f) => f[k].toFixed(0)).join(' / ')})`;
    console.log(`${label}: wall ${col('wall')} ms, host CPU ${col('host')} ms (main thread ${col('hostMain')}), plugin CPU ${col('plugin')} ms (main thread ${col('pluginMain')})`);
  }
  for (const a of arms) await a.pool.shutdown();
}

await main();
