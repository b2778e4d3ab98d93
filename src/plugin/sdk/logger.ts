// The plugin's logger: JSON lines on stderr. Inside a call, each line carries the plugin name and
// the identity of the run that made the call, so the host can route it into that run's log.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RunIdentity } from '../api/index.js';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

export type LogFields = Record<string, unknown>;

export interface PluginLogger {
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
}

export interface CallScope {
  plugin: string;
  method: string;
  run: RunIdentity | undefined;
  /** Aborted when the host cancels the call. */
  signal?: AbortSignal;
  /** The call's own outage window (ms), when the host gave it one. */
  outageWindowMs?: number;
}

const scope = new AsyncLocalStorage<CallScope>();
let threshold: LogLevel = 'info';
let write: (line: string) => void = (line) => {
  process.stderr.write(line);
};

export function setLogLevel(level: string | undefined): void {
  if (level !== undefined && level in RANK) threshold = level as LogLevel;
}

/** Replaces the sink (tests); the default is process.stderr. */
export function setLogSink(sink: (line: string) => void): void {
  write = sink;
}

/** Runs `fn` with `s` as the current call, so log lines inside it carry its plugin and run. */
export function inCallScope<T>(s: CallScope, fn: () => Promise<T>): Promise<T> {
  return scope.run(s, fn);
}

/**
 * The current call's cancel signal, aborted when the host cancels the call (a canceled run, a
 * stopping server): a store that waits (an outage, a slow upload) stops waiting when it aborts.
 */
export function callSignal(): AbortSignal | undefined {
  return scope.getStore()?.signal;
}

/**
 * The outage window of the current call: `processWindowMs` unless the host asked this call for a
 * shorter one (a canceled run's clean-up asks for 0: fail at once while the store is down).
 */
export function callOutageWindow(processWindowMs: number): number {
  const own = scope.getStore()?.outageWindowMs;
  return own === undefined ? processWindowMs : Math.min(own, processWindowMs);
}

function emit(level: LogLevel, msg: string, fields: LogFields | undefined): void {
  if (RANK[level] > RANK[threshold]) return;
  const current = scope.getStore();
  const line: LogFields = { time: new Date().toISOString(), level, msg, ...fields };
  if (current !== undefined) {
    line.plugin = current.plugin;
    if (current.run !== undefined) line.run = current.run;
  }
  let text: string;
  try {
    text = JSON.stringify(line);
  } catch {
    text = JSON.stringify({ time: line.time, level, msg, plugin: line.plugin, run: line.run, note: 'fields were not serialisable' });
  }
  write(`${text}\n`);
}

/** Logs through stderr; inside a call the line is stamped with the plugin name and run identity. */
export const log: PluginLogger = {
  error: (msg, fields) => emit('error', msg, fields),
  warn: (msg, fields) => emit('warn', msg, fields),
  info: (msg, fields) => emit('info', msg, fields),
  debug: (msg, fields) => emit('debug', msg, fields),
};
