// Routes plugin stderr lines: a JSON line stamped with a run goes to that run's logger (so it lands
// in the backup's own log), tagged with the plugin name; anything else goes to the server logger.
import type { Logger } from 'winston';
import type { RunIdentity } from '../api/index.js';

const LEVELS = new Set(['error', 'warn', 'info', 'debug']);
const LEVEL_ALIASES: Record<string, string> = { warning: 'warn', trace: 'debug', fatal: 'error', panic: 'error', verbose: 'debug' };
/** Fields a plugin may not set on the re-logged entry. */
const RESERVED = new Set(['level', 'msg', 'message', 'time', 'run', 'plugin', 'logSource', 'timestamp']);

export function runKey(run: RunIdentity): string {
  return `${run.kind}/${run.namespace}/${run.name}`;
}

function levelOf(v: unknown): string {
  if (typeof v !== 'string') return 'info';
  const l = v.toLowerCase();
  return LEVELS.has(l) ? l : (LEVEL_ALIASES[l] ?? 'info');
}

function asRun(v: unknown): RunIdentity | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const r = v as Record<string, unknown>;
  if (typeof r.kind !== 'string' || typeof r.name !== 'string') return undefined;
  return { kind: r.kind, namespace: typeof r.namespace === 'string' ? r.namespace : '', name: r.name };
}

export class LogRouter {
  private readonly runs = new Map<string, Logger[]>();

  constructor(private readonly server: Logger) {}

  /** Sends lines stamped with `run` to `logger` until the returned function is called. */
  register(run: RunIdentity, logger: Logger): () => void {
    const key = runKey(run);
    const list = this.runs.get(key) ?? [];
    list.push(logger);
    this.runs.set(key, list);
    return () => {
      const cur = this.runs.get(key);
      if (cur === undefined) return;
      const i = cur.lastIndexOf(logger);
      if (i >= 0) cur.splice(i, 1);
      if (cur.length === 0) this.runs.delete(key);
    };
  }

  /** One stderr line of the plugin process `pid` of `executable`. */
  route(executable: string, pid: number, line: string): void {
    if (line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      this.server.warn(line, { logSource: 'plugin', pluginExecutable: executable, pluginPid: pid });
      return;
    }
    const entry = parsed as Record<string, unknown>;
    const fields: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(entry)) if (!RESERVED.has(k)) fields[k] = v;
    fields.logSource = 'plugin';
    fields.plugin = typeof entry.plugin === 'string' && entry.plugin !== '' ? entry.plugin : executable;
    fields.pluginPid = pid;
    const run = asRun(entry.run);
    const target = (run !== undefined ? this.runs.get(runKey(run))?.at(-1) : undefined) ?? this.server;
    // In the server log, a line still says which run it was about (also after that run ended).
    if (run !== undefined && target === this.server) fields.run = runKey(run);
    const msg = typeof entry.msg === 'string' ? entry.msg : typeof entry.message === 'string' ? entry.message : '';
    target.log(levelOf(entry.level), msg, fields);
  }
}
