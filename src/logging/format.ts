// Line rendering shared by the server and run loggers, plus the secret-scrubbing winston format.

import winston from 'winston';
import { createRedactor, errorMessage, sanitizeMessage } from '../util/errors.js';

/** winston's (triple-beam's) well-known symbols, registered globally by name. */
export const LEVEL = Symbol.for('level');
export const MESSAGE = Symbol.for('message');
export const SPLAT = Symbol.for('splat');

/** npm levels, most severe first: the levels every Stowage logger uses. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(v: string): v is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(v);
}

/**
 * Maps level names from other ecosystems (logrus, go-hclog, pino) onto npm levels, so plugin
 * lines keep their severity; unknown names become 'info'.
 */
export function normalizeLevel(level: unknown): LogLevel {
  const l = typeof level === 'string' ? level.trim().toLowerCase() : '';
  if (isLogLevel(l)) return l;
  switch (l) {
    case 'warning':
      return 'warn';
    case 'fatal':
    case 'panic':
    case 'critical':
    case 'crit':
    case 'err':
      return 'error';
    case 'trace':
      return 'debug';
    default:
      return 'info';
  }
}

/** JSON.stringify that survives cycles, BigInt and Errors (rendered as their message). */
export function safeStringify(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error) return errorMessage(v);
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[Circular]';
      seen.add(v);
    }
    return v;
  });
}

/** The non-reserved fields of a winston info object, in insertion order. */
export function infoFields(info: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(info).filter(([k, v]) => k !== 'level' && k !== 'message' && v !== undefined);
}

function logfmtValue(v: unknown): string {
  const s =
    typeof v === 'string'
      ? v
      : v instanceof Error
        ? errorMessage(v)
        : typeof v === 'object' && v !== null
          ? safeStringify(v)
          : String(v);
  return s === '' || /[\s"=]/.test(s) ? JSON.stringify(s) : s;
}

/** `time level message key=value ...`: one readable line. */
export function renderText(time: string, level: string, message: string, fields: Array<[string, unknown]>): string {
  const kv = fields.map(([k, v]) => `${k}=${logfmtValue(v)}`).join(' ');
  const msg = message.replace(/\r?\n/g, '\\n');
  return `${time} ${level.padEnd(5)} ${msg}${kv ? ` ${kv}` : ''}`;
}

/** `{"time":..,"level":..,"msg":..,...fields}`: one JSON line. */
export function renderJson(time: string, level: string, message: string, fields: Array<[string, unknown]>): string {
  const rec: Record<string, unknown> = { time, level, msg: message };
  for (const [k, v] of fields) if (!(k in rec)) rec[k] = v;
  return safeStringify(rec);
}

// ---- secrets ----------------------------------------------------------------------------------

/** Shorter values carry little secrecy, and scrubbing them would mangle every line. */
export const MIN_SECRET_LENGTH = 4;

/** Secret values to scrub from log lines. A child set also scrubs its parent's values. */
export interface SecretSet {
  /** Registers a value (ignored when shorter than MIN_SECRET_LENGTH). */
  add(value: string): void;
  /** Scrubs registered values (and their encodings) plus well-known credential shapes. */
  scrub(text: string): string;
  /** Changes whenever this set or a parent gains a value. */
  version(): number;
  values(): string[];
}

export function createSecretSet(parent?: SecretSet): SecretSet {
  const own = new Set<string>();
  let ownVersion = 0;
  let cacheKey = -1;
  let redactor: (text: string) => string = (t) => t;
  const version = (): number => ownVersion + (parent ? parent.version() * 1_000_003 : 0);
  const values = (): string[] => [...(parent?.values() ?? []), ...own];
  return {
    add(value: string): void {
      if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH || own.has(value)) return;
      own.add(value);
      ownVersion++;
    },
    scrub(text: string): string {
      const v = version();
      if (v !== cacheKey) {
        redactor = createRedactor(values());
        cacheKey = v;
      }
      return redactor(sanitizeMessage(text));
    },
    version,
    values,
  };
}

const MAX_DEPTH = 8;

/** A scrubbed copy of any value: strings scrubbed, Errors turned into scrubbed messages. */
export function scrubValue(value: unknown, scrub: (s: string) => string, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return scrub(value);
  if (value instanceof Error) return scrub(errorMessage(value));
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return `[${value.byteLength} bytes]`;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Truncated]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, scrub, depth + 1, seen));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = scrubValue(v, scrub, depth + 1, seen);
  return out;
}

/** A winston format that scrubs every string field of every line (defence in depth for Secret data). */
export function redactFormat(secrets?: SecretSet): winston.Logform.Format {
  const scrub = secrets ? (s: string): string => secrets.scrub(s) : sanitizeMessage;
  return winston.format((info) => {
    const rec = info as Record<string, unknown>;
    for (const key of Object.keys(rec)) {
      if (key === 'level') continue;
      rec[key] = scrubValue(rec[key], scrub);
    }
    // logger.error(err) makes the Error itself the info object; its message is not enumerable.
    if (typeof rec.message === 'string' && !Object.keys(rec).includes('message')) rec.message = scrub(rec.message);
    return info;
  })();
}
