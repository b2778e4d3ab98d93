// Progress for `--wait`: a bar redrawn in place on a terminal, periodic plain lines otherwise
// (CI logs and pipes must not fill up with carriage returns). Both show the rate over the last
// few seconds and, from it, an estimate of the time left.

export interface ProgressSnapshot {
  phase: string;
  done: number;
  total: number;
}

/** Items per second and the time left at that rate; absent until there is enough to tell. */
export interface ProgressSpeed {
  rate?: number;
  etaMs?: number;
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
  /** The rate is measured over this much recent time (default 10 s). */
  windowMs?: number;
}

const BAR_WIDTH = 30;
/** Below this much observed time a rate is noise (one poll's worth). */
const MIN_SPAN_MS = 1000;

/** The phases after which nothing moves: no rate or time left is shown for them. */
const FINAL_PHASES = new Set(['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation']);

/**
 * Measures the rate from (time, done) samples: over the samples of the last `windowMs`, keeping
 * one older sample as the window's start so a slow poll still spans it. A count that goes back
 * (a run restarted by another server) starts the measurement over. Pure, given the times.
 */
export function createRateMeter(windowMs = 10_000): { add(t: number, done: number): void; speed(p: ProgressSnapshot): ProgressSpeed } {
  let samples: Array<{ t: number; done: number }> = [];
  return {
    add(t, done) {
      const last = samples.at(-1);
      if (last !== undefined && (done < last.done || t < last.t)) samples = [];
      samples.push({ t, done });
      // Drop samples older than the window, but keep the newest of them as its start.
      while (samples.length > 2 && (samples[1]?.t ?? t) <= t - windowMs) samples.shift();
    },
    speed(p) {
      const first = samples[0];
      const last = samples.at(-1);
      if (first === undefined || last === undefined || FINAL_PHASES.has(p.phase)) return {};
      const span = last.t - first.t;
      if (span < MIN_SPAN_MS) return {};
      const rate = ((last.done - first.done) * 1000) / span;
      const left = p.total - p.done;
      if (rate <= 0 || p.total <= 0 || left <= 0) return { rate };
      return { rate, etaMs: (left / rate) * 1000 };
    },
  };
}

/** `12.5` below 10 per second, `340` above. */
export function formatRate(rate: number): string {
  return rate < 10 ? rate.toFixed(1) : String(Math.round(rate));
}

/** `45s`, `3m07s`, `2h05m`: short, rounded up (an estimate of 0s while items remain would mislead). */
export function formatEta(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  const m = Math.ceil(s / 60);
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/**
 * The snapshot as shown: a count past its total (a server that counted an item it had not
 * announced) raises the total rather than showing "5004 of 5003" or 100.1%.
 */
export function clampProgress(p: ProgressSnapshot): ProgressSnapshot {
  return p.total > 0 && p.done > p.total ? { ...p, total: p.done } : p;
}

function pctOf(p: ProgressSnapshot): number {
  return Math.floor((Math.min(p.done, p.total) / p.total) * 100);
}

export function renderBar(given: ProgressSnapshot, noun: string, width = BAR_WIDTH, speed: ProgressSpeed = {}): string {
  const p = clampProgress(given);
  const frac = p.total > 0 ? Math.min(1, p.done / p.total) : 0;
  const filled = Math.round(frac * width);
  const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
  const pct = p.total > 0 ? `${pctOf(p)}%`.padStart(4) : '   -';
  const counts = p.total > 0 ? `${p.done}/${p.total}` : `${p.done}`;
  const rate = speed.rate === undefined ? '' : `  ${formatRate(speed.rate)}/s`;
  const eta = speed.etaMs === undefined ? '' : `  ETA ${formatEta(speed.etaMs)}`;
  return `[${bar}] ${pct}  ${counts} ${noun}${rate}${eta}  (${p.phase})`;
}

export function renderPlain(given: ProgressSnapshot, noun: string, speed: ProgressSpeed = {}): string {
  const p = clampProgress(given);
  const counts = p.total > 0 ? `${p.done}/${p.total} ${noun} (${pctOf(p)}%)` : `${p.done} ${noun}`;
  const rate = speed.rate === undefined ? '' : `, ${formatRate(speed.rate)} items/s`;
  const eta = speed.etaMs === undefined ? '' : `, ETA ${formatEta(speed.etaMs)}`;
  return `${p.phase}: ${counts}${rate}${eta}`;
}

export function createProgress(opts: ProgressOptions): ProgressReporter {
  const stream = opts.stream ?? process.stdout;
  const tty = opts.tty ?? stream.isTTY === true;
  const interval = opts.intervalMs ?? 5000;
  const now = opts.now ?? Date.now;
  const meter = createRateMeter(opts.windowMs);
  let lastLine = '';
  let lastAt = -Infinity;
  let lastPhase = '';
  let drawn = false;
  return {
    update(p) {
      const t = now();
      meter.add(t, p.done);
      const speed = meter.speed(p);
      if (tty) {
        const line = renderBar(p, opts.noun, BAR_WIDTH, speed);
        if (line === lastLine) return;
        const cols = stream.columns || 120;
        stream.write(`\r${line.slice(0, Math.max(20, cols - 1))}\x1b[K`);
        lastLine = line;
        drawn = true;
        return;
      }
      const line = renderPlain(p, opts.noun, speed);
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
