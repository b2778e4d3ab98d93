// Memory and CPU of a process tree, read from /proc: the Stowage server and its plugin processes
// (its descendants). Peak RSS is the kernel's high-water mark (VmHWM), so a peak between two
// samples is not missed; CPU time is utime+stime, counted from when sampling started.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100; // the Linux default
    }
  }
  return ticksPerSecond;
}

interface Stat {
  ppid: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
}

/** /proc/<pid>/stat; the command name may hold spaces and parentheses, so fields count from the last ')'. */
function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
  const state = fields[0];
  if (state === 'Z' || state === 'X') return undefined;
  return { ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
}

function readMemory(pid: number): { rssKiB: number; hwmKiB: number } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
}

function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((s) => s !== '').join(' ');
  } catch {
    return '';
  }
}

/** Every live descendant of `root`, found by walking the parent pids of the whole process table. */
export function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const st = readStat(Number(entry));
    if (st !== undefined) parent.set(Number(entry), st.ppid);
  }
  const out: number[] = [];
  const want = new Set([root]);
  // Parents usually have lower pids, but not always (pid wrap-around): iterate to a fixed point.
  for (let changed = true; changed; ) {
    changed = false;
    for (const [pid, ppid] of parent) {
      if (!want.has(pid) && want.has(ppid)) {
        want.add(pid);
        out.push(pid);
        changed = true;
      }
    }
  }
  return out;
}

export interface ProcessFigures {
  pid: number;
  command: string;
  peakRssBytes: number;
  cpuSeconds: number;
}

export interface TreeFigures {
  root: ProcessFigures;
  /** Descendants seen while sampling (the plugin processes). */
  children: ProcessFigures[];
  /** Sum of the children's peaks (each process's own high-water mark). */
  childrenPeakRssBytes: number;
  /** CPU of the root and every child while sampling. */
  totalCpuSeconds: number;
}

export interface Sampler {
  stop(): TreeFigures;
}

interface Tracked {
  command: string;
  baseTicks: number;
  lastTicks: number;
  peakKiB: number;
}

/**
 * Samples `root` and its descendants every `intervalMs` until stop(). A process that exits
 * between samples keeps the figures of its last sample.
 */
export function sampleTree(root: number, intervalMs = 100): Sampler {
  const tracked = new Map<number, Tracked>();
  const sample = (first: boolean): void => {
    for (const pid of [root, ...descendants(root)]) {
      const st = readStat(pid);
      const mem = readMemory(pid);
      if (st === undefined || mem === undefined) continue;
      let t = tracked.get(pid);
      if (t === undefined) {
        // A process born after sampling started counts all its CPU; one already running, only what follows.
        t = { command: commandLine(pid), baseTicks: first ? st.cpuTicks : 0, lastTicks: st.cpuTicks, peakKiB: 0 };
        tracked.set(pid, t);
      }
      // A child caught between fork and exec still shows its parent's command and memory (shared
      // pages count in its RSS): once it has exec'd, only what the new program uses counts.
      const command = commandLine(pid);
      if (command !== t.command) {
        t.command = command;
        t.peakKiB = 0;
      }
      t.lastTicks = st.cpuTicks;
      t.peakKiB = Math.max(t.peakKiB, mem.hwmKiB, mem.rssKiB);
    }
  };
  sample(true);
  const timer = setInterval(() => sample(false), intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample(false);
      const hz = clockTicks();
      const figures = (pid: number, t: Tracked): ProcessFigures => ({
        pid,
        command: t.command,
        peakRssBytes: t.peakKiB * 1024,
        cpuSeconds: (t.lastTicks - t.baseTicks) / hz,
      });
      const rootT = tracked.get(root);
      if (rootT === undefined) throw new Error(`process ${root} was gone before it could be sampled`);
      const children = [...tracked].filter(([pid]) => pid !== root).map(([pid, t]) => figures(pid, t));
      const rootF = figures(root, rootT);
      return {
        root: rootF,
        children,
        childrenPeakRssBytes: children.reduce((s, c) => s + c.peakRssBytes, 0),
        totalCpuSeconds: rootF.cpuSeconds + children.reduce((s, c) => s + c.cpuSeconds, 0),
      };
    },
  };
}
