// Progress for `--wait`: a bar redrawn in place on a terminal, periodic plain lines otherwise
// (CI logs and pipes must not fill up with carriage returns).

export interface ProgressSnapshot {
  phase: string;
  done: number;
  total: number;
}

export interface ProgressReporter {
  update(p: ProgressSnapshot): void;
  /** Ends the bar line (on a TTY) so later output starts on a fresh line. */
  finish(): void;
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream;
  /** What is counted, e.g. "items backed up". */
  noun: string;
  /** Plain mode: at most one line per interval (the first and phase changes print at once). */
  intervalMs?: number;
  /** Override TTY detection (tests). */
  tty?: boolean;
  now?: () => number;
}

const BAR_WIDTH = 30;

export function renderBar(p: ProgressSnapshot, noun: string, width = BAR_WIDTH): string {
  const frac = p.total > 0 ? Math.min(1, p.done / p.total) : 0;
  const filled = Math.round(frac * width);
  const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
  const pct = p.total > 0 ? `${Math.floor(frac * 100)}%`.padStart(4) : '   -';
  const counts = p.total > 0 ? `${p.done}/${p.total}` : `${p.done}`;
  return `[${bar}] ${pct}  ${counts} ${noun}  (${p.phase})`;
}

export function renderPlain(p: ProgressSnapshot, noun: string): string {
  const counts = p.total > 0 ? `${p.done}/${p.total} ${noun} (${Math.floor((Math.min(p.done, p.total) / p.total) * 100)}%)` : `${p.done} ${noun}`;
  return `${p.phase}: ${counts}`;
}

export function createProgress(opts: ProgressOptions): ProgressReporter {
  const stream = opts.stream ?? process.stdout;
  const tty = opts.tty ?? stream.isTTY === true;
  const interval = opts.intervalMs ?? 5000;
  const now = opts.now ?? Date.now;
  let lastLine = '';
  let lastAt = -Infinity;
  let lastPhase = '';
  let drawn = false;
  return {
    update(p) {
      if (tty) {
        const line = renderBar(p, opts.noun);
        if (line === lastLine) return;
        const cols = stream.columns || 120;
        stream.write(`\r${line.slice(0, Math.max(20, cols - 1))}\x1b[K`);
        lastLine = line;
        drawn = true;
        return;
      }
      const line = renderPlain(p, opts.noun);
      const t = now();
      if (line === lastLine) return;
      if (p.phase === lastPhase && t - lastAt < interval) return;
      stream.write(`${line}\n`);
      lastLine = line;
      lastAt = t;
      lastPhase = p.phase;
    },
    finish() {
      if (tty && drawn) stream.write('\n');
      drawn = false;
    },
  };
}
