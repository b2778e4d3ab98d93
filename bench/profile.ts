// Summarises V8 CPU profiles (.cpuprofile, from `npm run bench -- --profile`): self time by
// function and by source file or package, to see where a phase spends its CPU.
// Usage: npx tsx bench/profile.ts <file.cpuprofile | directory> [--top N]
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Time not idle, not garbage collection, not "(program)". */
  busyMs: number;
  byFunction: { name: string; ms: number }[];
  byFile: { name: string; ms: number }[];
}

/** `node_modules/<pkg>` for dependencies, the path below the repository for our own code. */
function sourceOf(url: string): string {
  if (url === '') return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    const pkg = rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? '');
    return `node_modules/${pkg}`;
  }
  if (url.startsWith('node:')) return url;
  const dist = url.indexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 1) : url.replace(/^file:\/\//, '');
}

export function summarise(file: string, top: number): ProfileSummary {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i] ?? 0;
    selfMs.set(id, (selfMs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  }
  const fn = new Map<string, number>();
  const src = new Map<string, number>();
  let busy = 0;
  for (const [id, ms] of selfMs) {
    const cf = byId.get(id)?.callFrame;
    if (cf === undefined) continue;
    const special = ['(idle)', '(program)', '(garbage collector)'].includes(cf.functionName);
    if (!special) busy += ms;
    const fname = `${cf.functionName || '(anonymous)'} ${sourceOf(cf.url)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
    fn.set(fname, (fn.get(fname) ?? 0) + ms);
    const sname = special ? cf.functionName : sourceOf(cf.url);
    src.set(sname, (src.get(sname) ?? 0) + ms);
  }
  const sorted = (m: Map<string, number>): { name: string; ms: number }[] =>
    [...m].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms).slice(0, top);
  return { file, totalMs: (p.endTime - p.startTime) / 1000, busyMs: busy, byFunction: sorted(fn), byFile: sorted(src) };
}

function main(): void {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '25' } }, allowPositionals: true });
  const top = Number(values.top);
  const files = positionals.flatMap((p) =>
    fs.statSync(p).isDirectory() ? fs.readdirSync(p).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(p, f)) : [p]);
  if (files.length === 0) throw new Error('usage: npx tsx bench/profile.ts <file.cpuprofile | directory> [--top N]');
  for (const f of files) {
    const s = summarise(f, top);
    process.stdout.write(`\n${s.file}: ${(s.totalMs / 1000).toFixed(1)} s profiled, ${(s.busyMs / 1000).toFixed(1)} s busy in JavaScript\n`);
    process.stdout.write('  by source:\n');
    for (const e of s.byFile) process.stdout.write(`    ${(e.ms / 1000).toFixed(2).padStart(8)} s  ${e.name}\n`);
    process.stdout.write('  by function (self time):\n');
    for (const e of s.byFunction) process.stdout.write(`    ${(e.ms / 1000).toFixed(2).padStart(8)} s  ${e.name}\n`);
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) main();
