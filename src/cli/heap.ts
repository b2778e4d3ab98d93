// The server's old-generation growth policy. Under a heap limit below 2 GiB (a 1 GiB container
// gives 512 MiB), V8 lets the old generation grow only 1.1-1.4x what survived the last full
// collection. A fixed factor, like Go's GOGC, trades heap for collector CPU, and backups and
// restores want opposite trades:
// - A backup is CPU-bound and promotes the LIST pages it works through; at V8's own growth it
//   collected every ~15 MB promoted (session 7), and at 15% a 10k-item backup took 0.9 s more CPU
//   than at 60% (session 18). Since pages stop at 512 KiB-1 MiB (--client-page-bytes) far less is
//   promoted, and 30% kept a 50k-object backup's peak 1.10-1.19x a 5k one's (sessions 19 and 20),
//   against 1.16-1.23x at 60% (session 19; bench/README.md).
// - A restore waits on the API server (about 100 creates a second) while its index lives for the
//   whole run: collecting often costs it no time, and at 60% its 50k-object peak was 1.39x the 5k
//   one against 1.23x at 15%.
// So the old generation grows by --heap-growth-percent (15), and by --backup-heap-growth-percent
// (30) while at least one backup runs.
import v8 from 'node:v8';

/** Where the factor comes from: node's command line (left alone), the server's flags, or V8's own policy (0). */
export type GrowthSource = 'node' | 'flag' | 'v8';

/** Whether node's command line sets V8's growing factor itself (an operator's `node --heap-growing-percent=N` wins). */
function setOnCommandLine(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'));
}

/**
 * Sets V8's growing factor to 1 + percent/100 (0: V8's own policy) unless node's command line
 * already sets one. V8 reads the flag each time a full collection sets the next limit, so a change
 * takes effect from the next one. Returns the factor's source.
 */
export function applyHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): GrowthSource {
  if (setOnCommandLine(execArgv)) return 'node';
  // 0 is V8's "unset": its own dynamic factor applies again.
  v8.setFlagsFromString(`--heap-growing-percent=${Math.max(0, Math.round(percent))}`);
  return percent > 0 ? 'flag' : 'v8';
}

export interface HeapGrowth {
  readonly source: GrowthSource;
  /** The growth in force now, in percent (0: V8's own). */
  readonly percent: number;
  /** Tells the policy how many backups run now; it switches the factor when that crosses zero. */
  backupsRunning(n: number): void;
}

export interface HeapGrowthOptions {
  /** Growth while no backup runs (restores, an idle server). */
  percent: number;
  /** Growth while at least one backup runs. */
  backupPercent: number;
  execArgv?: readonly string[];
  /** Sets the factor (tests observe it); default applyHeapGrowth. */
  apply?: (percent: number) => void;
}

/** The policy, applied at once (with no backup running). On node's command line's factor it never changes anything. */
export function heapGrowth(opts: HeapGrowthOptions): HeapGrowth {
  const execArgv = opts.execArgv ?? process.execArgv;
  if (setOnCommandLine(execArgv)) return { source: 'node', percent: NaN, backupsRunning: () => undefined };
  const apply = opts.apply ?? ((p: number): void => void applyHeapGrowth(p, execArgv));
  let percent = opts.percent;
  apply(percent);
  return {
    get source(): GrowthSource {
      return percent > 0 ? 'flag' : 'v8';
    },
    get percent(): number {
      return percent;
    },
    backupsRunning(n) {
      const want = n > 0 ? opts.backupPercent : opts.percent;
      if (want === percent) return;
      percent = want;
      apply(want);
    },
  };
}
