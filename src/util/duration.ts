// Go-style durations ("720h0m0s", "1h30m", "500ms"), the format Backup.spec.ttl and the server flags use.

const NS_PER_MS = 1e6;
const UNIT_MS: Record<string, number> = {
  ns: 1 / NS_PER_MS,
  us: 1 / 1000,
  'µs': 1 / 1000, // U+00B5 micro sign, as Go prints it
  'μs': 1 / 1000, // U+03BC greek mu, which Go also accepts
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const UNITS_HINT = 'use h, m, s, ms, us or ns';
/** Go's limit: an int64 count of nanoseconds. */
const MAX_MS = 9_223_372_036_854.775;

export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

/**
 * Parses a Go duration into milliseconds (fractions allowed for µs/ns).
 * `what` names the value in the error, e.g. `ttl "abc" is not a duration like 720h0m0s: ...`.
 */
export function parseDuration(text: string, what = 'duration'): number {
  const fail = (reason: string): never => {
    throw new DurationError(`${what} "${text}" is not a duration like 720h0m0s: ${reason}`);
  };
  const s = text.trim();
  if (s === '') return fail('it is empty');
  let i = 0;
  let sign = 1;
  if (s[0] === '-' || s[0] === '+') {
    sign = s[0] === '-' ? -1 : 1;
    i = 1;
  }
  if (s.slice(i) === '0') return 0;
  if (i === s.length) return fail('a number must follow the sign');
  let total = 0;
  while (i < s.length) {
    const numStart = i;
    while (i < s.length && /[0-9.]/.test(s[i] ?? '')) i++;
    const num = s.slice(numStart, i);
    if (num === '') return fail(`expected a number at position ${numStart + 1}, found "${s[numStart]}"`);
    if (!/^(\d+\.?\d*|\.\d+)$/.test(num)) return fail(`"${num}" is not a number`);
    const unitStart = i;
    while (i < s.length && !/[0-9.]/.test(s[i] ?? '')) i++;
    const unit = s.slice(unitStart, i);
    if (unit === '') return fail(`missing unit after "${num}" (${UNITS_HINT})`);
    const factor = UNIT_MS[unit];
    if (factor === undefined) return fail(`unknown unit "${unit}" (${UNITS_HINT})`);
    total += Number(num) * factor;
    if (total > MAX_MS) return fail('it is too large');
  }
  // Round to whole nanoseconds so "0.1s" + "0.2s" style sums do not carry float noise.
  return (sign * Math.round(total * NS_PER_MS)) / NS_PER_MS;
}

/** Like parseDuration but returns the error message instead of throwing. */
export function tryParseDuration(text: string, what = 'duration'): { ms: number } | { error: string } {
  try {
    return { ms: parseDuration(text, what) };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/** Formats milliseconds the way Go's time.Duration.String does: "720h0m0s", "1m30s", "500ms", "0s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new DurationError(`cannot format ${ms} as a duration`);
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  const wholeMs = Math.floor(abs);
  const fracNs = Math.round((abs - wholeMs) * NS_PER_MS);
  if (wholeMs < 1000) {
    const totalNs = wholeMs * NS_PER_MS + fracNs;
    if (totalNs < 1000) return `${sign}${totalNs}ns`;
    if (totalNs < NS_PER_MS) return `${sign}${trimFraction(totalNs, 1000)}µs`;
    return `${sign}${trimFraction(totalNs, NS_PER_MS)}ms`;
  }
  const totalSeconds = Math.floor(wholeMs / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  const subNs = (wholeMs % 1000) * NS_PER_MS + fracNs;
  const secText = subNs === 0 ? `${seconds}` : `${seconds}.${String(subNs).padStart(9, '0').replace(/0+$/, '')}`;
  if (hours > 0) return `${sign}${hours}h${minutes}m${secText}s`;
  if (minutes > 0) return `${sign}${minutes}m${secText}s`;
  return `${sign}${secText}s`;
}

function trimFraction(value: number, unit: number): string {
  const whole = Math.floor(value / unit);
  const rest = value % unit;
  if (rest === 0) return `${whole}`;
  const digits = String(unit).length - 1;
  return `${whole}.${String(rest).padStart(digits, '0').replace(/0+$/, '')}`;
}

/**
 * Validation messages for a Backup ttl: empty list when valid. An absent ttl is valid (the server
 * default applies).
 */
export function validateTtl(ttl: string | undefined | null, what = 'ttl'): string[] {
  if (ttl === undefined || ttl === null) return [];
  const parsed = tryParseDuration(ttl, what);
  if ('error' in parsed) return [parsed.error];
  if (parsed.ms < 0) return [`${what} "${ttl}" must not be negative`];
  return [];
}

/** Validation messages for a wait such as csiSnapshotTimeout: a duration above zero, or unset. */
export function validateTimeout(value: string | undefined | null, what: string): string[] {
  if (value === undefined || value === null || value === '') return [];
  const parsed = tryParseDuration(value, what);
  if ('error' in parsed) return [parsed.error];
  if (parsed.ms <= 0) return [`${what} "${value}" must be above zero`];
  return [];
}
