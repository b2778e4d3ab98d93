// Printing: `-o table|json|yaml`, aligned tables, timestamps, ages, byte sizes.
import { Option } from 'commander';
import YAML from 'yaml';
import { UsageError } from './errors.js';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function outputOption(): Option {
  return new Option('-o, --output <format>', 'output format: table, json or yaml').default('table');
}

export function parseOutputFormat(value: unknown): OutputFormat {
  const v = typeof value === 'string' ? value.toLowerCase() : 'table';
  // kubectl users type -o wide and -o yml; accept the obvious spellings.
  if (v === 'wide' || v === 'table' || v === '') return 'table';
  if (v === 'yml') return 'yaml';
  if ((OUTPUT_FORMATS as readonly string[]).includes(v)) return v as OutputFormat;
  throw new UsageError(`unknown output format "${String(value)}" (use table, json or yaml)`);
}

/** Writes text to stdout (one trailing newline ensured). */
export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** JSON or YAML of any value, as kubectl prints objects. */
export function formatData(value: unknown, format: 'json' | 'yaml'): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  return YAML.stringify(value, { lineWidth: 0 });
}

/** Columns separated by three spaces, padded to the widest cell; the last column is not padded. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/** `2025-11-29 16:04:05 +0000 UTC`-style absolute time, or `<none>`. */
export function formatTimestamp(ts: string | undefined): string {
  if (ts === undefined || ts === '') return '<none>';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  return `${d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, '')} UTC`;
}

/** kubectl-style short duration: 45s, 12m, 3h, 29d. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/** Age of a timestamp relative to now, or `<unknown>`. */
export function age(ts: string | undefined, now = Date.now()): string {
  if (ts === undefined) return '<unknown>';
  const t = Date.parse(ts);
  return Number.isNaN(t) ? '<unknown>' : shortDuration(now - t);
}

/** Time left until a timestamp: `29d`, or `expired`; `n/a` when unset. */
export function timeLeft(ts: string | undefined, now = Date.now()): string {
  if (ts === undefined || ts === '') return 'n/a';
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return ts;
  return t <= now ? 'expired' : shortDuration(t - now);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** `a, b, c` or `<none>`; `*` when the list is empty and emptyMeansAll. */
export function listOrNone(items: readonly string[] | undefined, emptyMeansAll = false): string {
  if (items === undefined || items.length === 0) return emptyMeansAll ? '*' : '<none>';
  return items.join(', ');
}

export function mapOrNone(m: Readonly<Record<string, string>> | undefined, sep = '='): string {
  const entries = Object.entries(m ?? {});
  if (entries.length === 0) return '<none>';
  return entries.map(([k, v]) => `${k}${sep}${v}`).join(', ');
}

/** Aligned `Key:  value` lines for describe output. */
export function formatFields(fields: ReadonlyArray<readonly [string, string]>, indent = ''): string {
  const width = Math.max(0, ...fields.map(([k]) => k.length + 1));
  return fields.map(([k, v]) => `${indent}${`${k}:`.padEnd(width)}  ${v}`).join('\n') + '\n';
}
