import { spawnSync } from 'node:child_process';
// Helpers for the plugin integration tests: plugin directories of fixture launchers, the process
// table, and loggers that keep what they were given.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import winston from 'winston';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const FIXTURES = path.join(ROOT, 'test/fixtures/plugins');
export const BIN = path.join(ROOT, 'dist/cli/bin.js');
export const RUN = { kind: 'backup', namespace: 'stowage', name: 'plugin-test' };

/** The tests run the built SDK and CLI (npm test builds first). */
export function requireBuilt(): void {
  for (const f of ['dist/plugin/sdk/index.js', 'dist/plugin/host/index.js', 'dist/cli/bin.js']) {
    if (!fs.existsSync(path.join(ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` before these tests`);
  }
}

const made: string[] = [];

export function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `stowage-${prefix}-`));
  made.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/**
 * A plugin directory holding one executable launcher per entry (name -> fixture file), each
 * importing the fixture; launcher paths are unique, so the process table tells tests apart. A
 * plugin gets a minimal environment, so `env` is set by the launchers themselves.
 */
export function pluginDir(launchers: Record<string, string>, env: Record<string, string> = {}): { dir: string; path: (name: string) => string } {
  const dir = tempDir('plugins');
  const setEnv = Object.entries(env).map(([k, v]) => `process.env[${JSON.stringify(k)}] = ${JSON.stringify(v)};\n`).join('');
  for (const [name, fixture] of Object.entries(launchers)) {
    const url = pathToFileURL(path.isAbsolute(fixture) ? fixture : path.join(FIXTURES, fixture)).href;
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!${process.execPath}\n${setEnv}import(${JSON.stringify(url)}).catch((e) => { console.error(e); process.exit(1); });\n`);
    fs.chmodSync(file, 0o755);
  }
  return { dir, path: (name) => path.join(fs.realpathSync(dir), name) };
}

/**
 * A command serving the built-ins (`run-plugins` as src/cli/runPlugins.ts registers it) through a
 * uniquely named link, so the process table tells this pool's process apart from others.
 */
export function selfCommand(): { command: string[]; link: string } {
  const link = path.join(tempDir('self'), 'stowage-run-plugins.mjs');
  fs.symlinkSync(path.join(FIXTURES, 'run-plugins.mjs'), link);
  return { command: [process.execPath, link, 'run-plugins'], link };
}

/** Pids of live (non-zombie) processes whose command line contains `needle`. */
/** examples/file-kms installed (its own npm install, offline, once); returns its plugin executable. */
export function installFileKms(): string {
  const example = path.join(ROOT, 'examples/file-kms');
  if (!fs.existsSync(path.join(example, 'node_modules/stowage/package.json'))) {
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--offline'], { cwd: example, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`npm install in ${example} failed: ${r.stderr}`);
  }
  return path.join(example, 'bin/stowage-file-kms.js');
}

export function livePids(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (!cmdline.includes(needle)) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && state !== 'X') pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

/** Samples the process table every `everyMs` and remembers the most processes seen at once. */
export function sampleProcesses(needle: string, everyMs = 10): { max: () => number; samples: () => number; stop: () => void } {
  let max = 0;
  let samples = 0;
  const timer = setInterval(() => {
    max = Math.max(max, livePids(needle).length);
    samples++;
  }, everyMs);
  return { max: () => max, samples: () => samples, stop: () => clearInterval(timer) };
}

export interface LogEntry {
  level: string;
  message: string;
  [k: string]: unknown;
}

/** A winston logger that keeps every entry (JSON) for assertions. */
export function memoryLogger(level = 'debug'): { logger: winston.Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') entries.push(JSON.parse(line) as LogEntry);
      cb();
    },
  });
  const logger = winston.createLogger({ level, format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { logger, entries };
}

export async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function configMap(name: string, namespace = 'default'): { apiVersion: string; kind: string; metadata: { name: string; namespace: string } } {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } };
}

/** Pids of the live children of `parent`. */
export function childPids(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === parent && state !== 'Z' && state !== 'X') pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

/** True while `pid` is a live (non-zombie) process. */
export function pidAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}
