// Which backups to delete, and why: TTL expiry plus a schedule's grandfather-father-son keep policy.
//
// Rules (the GC controller applies them per schedule; backups without a schedule get TTL only):
// - Backups still running (phase unset, New, InProgress) or already Deleting are never chosen.
// - Successful backups (Completed, PartiallyFailed) are the restore points:
//   - without a keep policy they expire by TTL;
//   - with a keep policy (any keep* > 0) the policy alone decides for them: a backup kept by some
//     rule stays even past its TTL (so keepMonthly: 12 works without a one-year ttl), and a backup
//     no rule keeps is deleted even before its TTL.
// - Unsuccessful backups (Failed, FailedValidation, Canceled) never count toward the keep rules: they expire
//   by TTL only.
// - The last successful backup of a schedule is never deleted, whatever TTL and policy say: the
//   newest Completed one, or, when the schedule has no Completed backup, its newest PartiallyFailed one.
//
// Keep rules work like restic's `forget` (and borg's prune): keepLast N keeps the N newest;
// keepHourly/Daily/Weekly/Monthly N walk the backups newest first and keep the newest backup of
// each period (UTC hour, day, ISO week, month) until N periods have been kept. Periods without a
// backup do not count, so a schedule that paused for a week still keeps 7 daily backups.
// A backup's time is its startTimestamp, else completionTimestamp, else creationTimestamp.

import type { BackupPhase } from '../apis/v1/index.js';
import { tryParseDuration } from '../util/duration.js';

export interface RetentionBackup {
  name: string;
  phase?: BackupPhase;
  startTimestamp?: string;
  completionTimestamp?: string;
  creationTimestamp?: string;
  /** When the TTL runs out (RFC 3339). Absent: the backup does not expire by TTL. */
  expiration?: string;
}

export interface KeepPolicy {
  keepLast?: number;
  keepHourly?: number;
  keepDaily?: number;
  keepWeekly?: number;
  keepMonthly?: number;
}

export interface RetentionOptions {
  /** Protect the newest successful backup (true for a schedule's backups). */
  protectLastSuccessful: boolean;
}

export interface RetentionVerdict {
  name: string;
  /** One line saying why, e.g. "expired at 2024-01-01T00:00:00.000Z (ttl)". */
  reason: string;
}

export interface RetentionPlan {
  /** Backups to delete, oldest first. */
  delete: RetentionVerdict[];
  /** Every other backup, newest first. */
  keep: RetentionVerdict[];
}

const KEEP_RULES = ['keepHourly', 'keepDaily', 'keepWeekly', 'keepMonthly'] as const;
type BucketRule = (typeof KEEP_RULES)[number];

/** True when the policy keeps anything by rule (all zero/unset means TTL only). */
export function hasKeepPolicy(policy: KeepPolicy | undefined): boolean {
  if (policy === undefined) return false;
  return (policy.keepLast ?? 0) > 0 || KEEP_RULES.some((r) => (policy[r] ?? 0) > 0);
}

/** "keepLast=3, keepDaily=7": the rules that are set, for reasons and logs. */
export function describeKeepPolicy(policy: KeepPolicy): string {
  const parts: string[] = [];
  for (const rule of ['keepLast', ...KEEP_RULES] as const) {
    const n = policy[rule] ?? 0;
    if (n > 0) parts.push(`${rule}=${n}`);
  }
  return parts.length === 0 ? 'none' : parts.join(', ');
}

export function isSuccessful(phase: BackupPhase | undefined): boolean {
  return phase === 'Completed' || phase === 'PartiallyFailed';
}

function isRunning(phase: BackupPhase | undefined): boolean {
  return phase === undefined || phase === 'New' || phase === 'InProgress';
}

/** The time used to order backups and place them in periods; undefined when none is set or parsable. */
export function backupTime(b: RetentionBackup): Date | undefined {
  for (const text of [b.startTimestamp, b.completionTimestamp, b.creationTimestamp]) {
    if (text === undefined) continue;
    const t = Date.parse(text);
    if (!Number.isNaN(t)) return new Date(t);
  }
  return undefined;
}

/** The period a time falls into for a bucket rule, as a sortable key. */
export function periodKey(rule: BucketRule, at: Date): string {
  const y = at.getUTCFullYear();
  const m = String(at.getUTCMonth() + 1).padStart(2, '0');
  const d = String(at.getUTCDate()).padStart(2, '0');
  switch (rule) {
    case 'keepHourly':
      return `${y}-${m}-${d}T${String(at.getUTCHours()).padStart(2, '0')}`;
    case 'keepDaily':
      return `${y}-${m}-${d}`;
    case 'keepWeekly': {
      const { year, week } = isoWeek(at);
      return `${year}-W${String(week).padStart(2, '0')}`;
    }
    case 'keepMonthly':
      return `${y}-${m}`;
  }
}

/** ISO 8601 week (weeks start Monday; week 1 holds the year's first Thursday), in UTC. */
export function isoWeek(at: Date): { year: number; week: number } {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday = 0
  const thursday = new Date(day + (3 - weekday) * 86_400_000);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * 86_400_000)) + 1;
  return { year, week };
}

interface Entry {
  backup: RetentionBackup;
  time: number;
}

/** Newest first; equal times fall back to the name (scheduled names end in their timestamp). */
function newestFirst(a: Entry, b: Entry): number {
  if (a.time !== b.time) return b.time - a.time;
  return a.backup.name < b.backup.name ? 1 : a.backup.name > b.backup.name ? -1 : 0;
}

/** The newest successful backup that must survive, per the rule in the header. */
function lastSuccessful(entries: readonly Entry[]): Entry | undefined {
  return entries.find((e) => e.backup.phase === 'Completed') ?? entries.find((e) => e.backup.phase === 'PartiallyFailed');
}

/**
 * Decides, for one group of backups (one schedule's, or all unscheduled ones), which to delete and
 * why. Pure: `now` is passed in.
 */
export function planRetention(
  backups: readonly RetentionBackup[],
  policy: KeepPolicy | undefined,
  now: Date,
  options: RetentionOptions,
): RetentionPlan {
  const entries: Entry[] = backups.map((backup) => ({ backup, time: backupTime(backup)?.getTime() ?? 0 }));
  entries.sort(newestFirst);
  const usePolicy = hasKeepPolicy(policy) && policy !== undefined;
  const keptBy = usePolicy ? policyKeeps(entries, policy) : new Map<RetentionBackup, string[]>();
  const policyText = policy === undefined ? 'none' : describeKeepPolicy(policy);
  const protectedEntry = options.protectLastSuccessful ? lastSuccessful(entries) : undefined;
  const keep: RetentionVerdict[] = [];
  const del: RetentionVerdict[] = [];
  for (const e of entries) {
    const b = e.backup;
    const v = verdictOf(b, usePolicy ? keptBy.get(b) ?? null : undefined, policyText, now);
    if ('keep' in v) keep.push({ name: b.name, reason: v.keep });
    else if (e === protectedEntry) keep.push({ name: b.name, reason: `last successful backup of the schedule, never deleted (would be: ${v.delete})` });
    else del.push({ name: b.name, reason: v.delete });
  }
  del.reverse();
  return { delete: del, keep };
}

/** Reasons each successful backup is kept by the policy, e.g. ["keepLast #1", "keepDaily 2024-01-03"]. */
function policyKeeps(entries: readonly Entry[], policy: KeepPolicy): Map<RetentionBackup, string[]> {
  const keptBy = new Map<RetentionBackup, string[]>();
  const good = entries.filter((e) => isSuccessful(e.backup.phase));
  const add = (e: Entry, why: string): void => {
    const list = keptBy.get(e.backup) ?? [];
    list.push(why);
    keptBy.set(e.backup, list);
  };
  good.slice(0, Math.max(0, policy.keepLast ?? 0)).forEach((e, i) => add(e, `keepLast #${i + 1}`));
  for (const rule of KEEP_RULES) {
    const n = policy[rule] ?? 0;
    if (n <= 0) continue;
    const seen = new Set<string>();
    for (const e of good) {
      if (seen.size >= n) break;
      const key = periodKey(rule, new Date(e.time));
      if (seen.has(key)) continue;
      seen.add(key);
      add(e, `${rule} ${key}`);
    }
  }
  return keptBy;
}

/**
 * Whether one backup is kept or deleted, and why. `keptBy`: the policy's reasons to keep it (null:
 * none), or undefined when no policy applies to the group.
 */
function verdictOf(b: RetentionBackup, keptBy: string[] | null | undefined, policyText: string, now: Date): { keep: string } | { delete: string } {
  if (isRunning(b.phase)) return { keep: `still running (phase ${b.phase ?? 'unset'})` };
  if (b.phase === 'Deleting') return { keep: 'already being deleted' };
  const expiry = b.expiration === undefined ? Number.NaN : Date.parse(b.expiration);
  const expired = !Number.isNaN(expiry) && expiry <= now.getTime();
  const expiredText = expired ? `expired at ${new Date(expiry).toISOString()} (ttl)` : '';
  if (isSuccessful(b.phase) && keptBy !== undefined) {
    if (keptBy === null) return { delete: `not kept by the schedule's policy (${policyText})` };
    return { keep: `kept by policy: ${keptBy.join(', ')}${expired ? `; ttl ignored (${expiredText})` : ''}` };
  }
  if (expired) return { delete: expiredText };
  return { keep: Number.isNaN(expiry) ? 'has no expiration' : `expires at ${new Date(expiry).toISOString()}` };
}

/**
 * When a backup expires: its status.expiration, else its creation time plus its ttl (the default
 * ttl when unset or unparsable). Undefined when neither can be worked out.
 */
export function effectiveExpiration(
  backup: { creationTimestamp?: string; expiration?: string; ttl?: string },
  defaultTtlMs: number,
): string | undefined {
  if (backup.expiration !== undefined && !Number.isNaN(Date.parse(backup.expiration))) return backup.expiration;
  if (backup.creationTimestamp === undefined) return undefined;
  const created = Date.parse(backup.creationTimestamp);
  if (Number.isNaN(created)) return undefined;
  const parsed = backup.ttl === undefined ? undefined : tryParseDuration(backup.ttl);
  const ttlMs = parsed !== undefined && 'ms' in parsed ? parsed.ms : defaultTtlMs;
  return new Date(created + ttlMs).toISOString();
}
