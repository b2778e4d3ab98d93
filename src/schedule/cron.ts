// Cron expressions for Schedules, evaluated in UTC, plus the `<schedule>-<yyyyMMddHHmmss>` backup name.
//
// Syntax: five fields "minute hour day-of-month month day-of-week". Each field is a comma list of
// `*`, `N`, `A-B`, `*/S`, `A-B/S` or `A/S` (A to the field's maximum, step S). Month and
// day-of-week accept names (JAN-DEC, SUN-SAT, any case); day-of-week 7 is Sunday too.
// Descriptors: @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly, and
// `@every <Go duration>` (whole seconds, at least 1s).
//
// Day matching follows Vixie cron: when day-of-month and day-of-week are both restricted (neither
// field starts with `*`), a day matches if EITHER matches; otherwise both must match, which means
// the restricted one decides. So `*/2` counts as unrestricted, as in Vixie cron.
//
// `@every D` ticks at the multiples of D since the Unix epoch, so the ticks are the same whatever
// time the server starts (robfig/cron counts from when it starts; that would make ticks drift
// across restarts and make prev() meaningless).

import { tryParseDuration } from '../util/duration.js';

export class CronError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CronError';
  }
}

export interface CronSchedule {
  /** The expression as given (trimmed). */
  readonly expression: string;
  /** The first tick strictly after `after`. */
  next(after: Date): Date;
  /** The last tick strictly before `before`. */
  prev(before: Date): Date;
}

interface FieldSpec {
  readonly index: number;
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
  readonly namesHint?: string;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const FIELDS: readonly FieldSpec[] = [
  { index: 1, name: 'minute', min: 0, max: 59 },
  { index: 2, name: 'hour', min: 0, max: 23 },
  { index: 3, name: 'day-of-month', min: 1, max: 31 },
  { index: 4, name: 'month', min: 1, max: 12, names: MONTH_NAMES, namesHint: 'JAN-DEC' },
  // 7 is accepted and folded onto 0 (both are Sunday).
  { index: 5, name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, namesHint: 'SUN-SAT' },
];

const DESCRIPTORS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/**
 * Search horizon. Feb 29 on a given weekday recurs within 28 years (plus the 2100-style century
 * gaps), so any expression that passed parsing has a tick within this range.
 */
const SEARCH_YEARS = 40;
/** Longest each month can be (February 29 exists in leap years). */
const MONTH_MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/** Parses a cron expression; throws CronError with a message naming the field and the problem. */
export function parseCron(expression: string): CronSchedule {
  const expr = expression.trim();
  if (expr === '') throw new CronError('cron expression is empty: expected 5 fields (minute hour day-of-month month day-of-week) or a descriptor like @daily');
  if (expr.startsWith('@')) {
    const lower = expr.toLowerCase();
    if (lower.startsWith('@every')) return parseEvery(expr);
    const fields = DESCRIPTORS[lower];
    if (fields === undefined) {
      throw new CronError(`unknown cron descriptor "${expr}": use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>`);
    }
    return fieldSchedule(expr, fields);
  }
  return fieldSchedule(expr, expr);
}

/** Validation messages for a cron expression: empty when valid. */
export function validateCron(expression: string): string[] {
  try {
    parseCron(expression);
    return [];
  } catch (err) {
    if (err instanceof CronError) return [err.message];
    throw err;
  }
}

function parseEvery(expr: string): CronSchedule {
  const rest = expr.slice('@every'.length);
  if (!/^\s/.test(rest) || rest.trim() === '') {
    throw new CronError(`"${expr}": @every needs a duration, e.g. "@every 6h"`);
  }
  const parsed = tryParseDuration(rest.trim(), '@every interval');
  if ('error' in parsed) throw new CronError(parsed.error);
  const period = parsed.ms;
  if (period < 1000) throw new CronError(`@every interval "${rest.trim()}" must be at least 1s`);
  if (period % 1000 !== 0) throw new CronError(`@every interval "${rest.trim()}" must be a whole number of seconds`);
  return {
    expression: expr,
    next: (after) => new Date(Math.floor(after.getTime() / period) * period + period),
    prev: (before) => new Date(Math.ceil(before.getTime() / period) * period - period),
  };
}

interface Fields {
  minutes: Set<number>;
  hours: Set<number>;
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  /** True when both day fields are restricted: a day matches if either does (Vixie cron). */
  dayOr: boolean;
}

function fieldSchedule(expression: string, text: string): CronSchedule {
  const parts = text.split(/\s+/);
  if (parts.length !== 5) {
    throw new CronError(
      `cron expression "${text}" has ${parts.length} field${parts.length === 1 ? '' : 's'}; expected 5 (minute hour day-of-month month day-of-week)`,
    );
  }
  const sets = FIELDS.map((spec, i) => parseField(parts[i] ?? '', spec));
  const [minutes, hours, days, months, weekdays] = sets as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (weekdays.delete(7)) weekdays.add(0);
  const domStar = (parts[2] ?? '').startsWith('*');
  const dowStar = (parts[4] ?? '').startsWith('*');
  const fields: Fields = { minutes, hours, days, months, weekdays, dayOr: !domStar && !dowStar };
  // Only when day-of-month alone decides can a day never occur ("0 0 30 2 *"); with day-of-week in
  // play, every valid date falls on every weekday within 28 years.
  if (dowStar && !domStar) assertSomeDayExists(days, months);
  return {
    expression,
    next: (after) => nextTick(fields, after, expression),
    prev: (before) => prevTick(fields, before, expression),
  };
}

/** With day-of-week unrestricted, "0 0 30 2 *" would never fire; say so at parse time. */
function assertSomeDayExists(days: Set<number>, months: Set<number>): void {
  for (const m of months) {
    for (const d of days) if (d <= (MONTH_MAX_DAYS[m - 1] ?? 0)) return;
  }
  const dayList = [...days].sort((a, b) => a - b).join(',');
  const monthList = [...months].sort((a, b) => a - b).map((m) => MONTH_NAMES[m - 1]).join(',');
  throw new CronError(`field 3 (day-of-month): day ${dayList} never occurs in month ${monthList}, so the schedule would never fire`);
}

function parseField(text: string, spec: FieldSpec): Set<number> {
  const where = `field ${spec.index} (${spec.name})`;
  const fail = (reason: string): never => {
    throw new CronError(`${where}: ${reason}`);
  };
  const out = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') fail(`"${text}" has an empty list element`);
    const slash = item.split('/');
    if (slash.length > 2) fail(`"${item}" has more than one "/"`);
    const rangeText = slash[0] ?? '';
    let step = 1;
    if (slash.length === 2) {
      const stepText = slash[1] ?? '';
      if (!/^\d+$/.test(stepText)) fail(`step "${stepText}" in "${item}" is not a positive number`);
      step = Number(stepText);
      if (step < 1) fail(`step ${step} in "${item}" must be at least 1`);
      if (step > spec.max) fail(`step ${step} in "${item}" is larger than ${spec.max}`);
    }
    let start: number;
    let end: number;
    if (rangeText === '*') {
      start = spec.min;
      end = spec.name === 'day-of-week' ? 6 : spec.max;
    } else {
      const dash = rangeText.split('-');
      if (dash.length > 2) fail(`"${rangeText}" is not a value or a range A-B`);
      start = parseValue(dash[0] ?? '', spec, where);
      if (dash.length === 2) {
        end = parseValue(dash[1] ?? '', spec, where);
        if (start > end) fail(`range ${rangeText} is backwards: ${start} is after ${end}`);
      } else {
        // "A/S" means A to the maximum in steps of S; a bare "A" is just A.
        end = slash.length === 2 ? (spec.name === 'day-of-week' ? 6 : spec.max) : start;
      }
    }
    for (let v = start; v <= end; v += step) out.add(v);
  }
  return out;
}

function parseValue(text: string, spec: FieldSpec, where: string): number {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n < spec.min || n > spec.max) throw new CronError(`${where}: ${n} is out of range ${spec.min}-${spec.max}`);
    return n;
  }
  if (spec.names !== undefined) {
    const idx = spec.names.indexOf(text.toUpperCase());
    if (idx >= 0) return spec.name === 'month' ? idx + 1 : idx;
    throw new CronError(`${where}: "${text}" is not a number ${spec.min}-${spec.max} or a name ${spec.namesHint ?? ''}`.trimEnd());
  }
  if (text === '') throw new CronError(`${where}: a range is missing a value`);
  throw new CronError(`${where}: "${text}" is not a number ${spec.min}-${spec.max}`);
}

function dayMatches(f: Fields, d: Date): boolean {
  const dom = f.days.has(d.getUTCDate());
  const dow = f.weekdays.has(d.getUTCDay());
  return f.dayOr ? dom || dow : dom && dow;
}

function nextTick(f: Fields, after: Date, expression: string): Date {
  // Start at the first whole minute strictly after `after`.
  let t = Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const limit = t + SEARCH_YEARS * 366 * DAY_MS;
  while (t <= limit) {
    const d = new Date(t);
    if (!f.months.has(d.getUTCMonth() + 1)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    } else if (!dayMatches(f, d)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
    } else if (!f.hours.has(d.getUTCHours())) {
      t = Math.floor(t / HOUR_MS) * HOUR_MS + HOUR_MS;
    } else if (!f.minutes.has(d.getUTCMinutes())) {
      t += MINUTE_MS;
    } else {
      return d;
    }
  }
  throw new CronError(`cron expression "${expression}" has no tick within ${SEARCH_YEARS} years after ${after.toISOString()}`);
}

function prevTick(f: Fields, before: Date, expression: string): Date {
  // Start at the last whole minute strictly before `before`.
  let t = Math.floor((before.getTime() - 1) / MINUTE_MS) * MINUTE_MS;
  const limit = t - SEARCH_YEARS * 366 * DAY_MS;
  while (t >= limit) {
    const d = new Date(t);
    if (!f.months.has(d.getUTCMonth() + 1)) {
      // Last minute of the previous month.
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) - MINUTE_MS;
    } else if (!dayMatches(f, d)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - MINUTE_MS;
    } else if (!f.hours.has(d.getUTCHours())) {
      t = Math.floor(t / HOUR_MS) * HOUR_MS - MINUTE_MS;
    } else if (!f.minutes.has(d.getUTCMinutes())) {
      t -= MINUTE_MS;
    } else {
      return d;
    }
  }
  throw new CronError(`cron expression "${expression}" has no tick within ${SEARCH_YEARS} years before ${before.toISOString()}`);
}

// ---- backup names ------------------------------------------------------------------------------

const TIMESTAMP_LENGTH = 14;
/** Kubernetes object names are at most 253 characters. */
const MAX_NAME_LENGTH = 253;
/** Longest schedule name whose backups still have valid names (`-` plus 14 digits). */
export const MAX_SCHEDULE_NAME_LENGTH = MAX_NAME_LENGTH - 1 - TIMESTAMP_LENGTH;

/** `yyyyMMddHHmmss` in UTC. */
export function formatBackupTimestamp(at: Date): string {
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  return (
    pad(at.getUTCFullYear(), 4) +
    pad(at.getUTCMonth() + 1) +
    pad(at.getUTCDate()) +
    pad(at.getUTCHours()) +
    pad(at.getUTCMinutes()) +
    pad(at.getUTCSeconds())
  );
}

/** The name of the backup a schedule creates at `at`: `<schedule>-<yyyyMMddHHmmss>` (UTC). */
export function scheduledBackupName(scheduleName: string, at: Date): string {
  return `${scheduleName}-${formatBackupTimestamp(at)}`;
}

/**
 * The time encoded in a scheduled backup's name, or undefined when `backupName` is not
 * `<scheduleName>-<yyyyMMddHHmmss>` with a real date.
 */
export function parseScheduledBackupName(scheduleName: string, backupName: string): Date | undefined {
  const prefix = `${scheduleName}-`;
  if (!backupName.startsWith(prefix)) return undefined;
  const ts = backupName.slice(prefix.length);
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(ts);
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Date.UTC rolls 2024-02-30 over to March; a round trip detects that.
  return formatBackupTimestamp(at) === ts ? at : undefined;
}
