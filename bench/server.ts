// Runs the built `stowage server` (dist/cli/bin.js) as its own tracked process, the way a user
// runs it: a fresh process per measured phase, so its peak RSS belongs to that phase alone.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { spawnTracked, type Spawned } from '../scripts/cluster/procs.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const SERVER_BIN = path.join(ROOT, 'dist/cli/bin.js');

/**
 * Copies dist/ into `workDir` and checks that the copy loads: the run then uses one consistent build
 * even if dist/ is rebuilt meanwhile (a shared checkout). Returns the copy's dist directory.
 */
export function snapshotDist(workDir: string): string {
  if (!fs.existsSync(SERVER_BIN)) throw new Error(`${SERVER_BIN} is missing: run npm run build first`);
  const dist = path.join(workDir, 'dist');
  fs.rmSync(dist, { recursive: true, force: true });
  fs.cpSync(path.join(ROOT, 'dist'), dist, { recursive: true });
  // Dependencies resolve from the copy through this link (the work directory may be outside the repository).
  const modules = path.join(workDir, 'node_modules');
  if (!fs.existsSync(modules)) fs.symlinkSync(path.join(ROOT, 'node_modules'), modules, 'dir');
  // Importing the whole CLI finds a half-written build (a missing export) before anything is measured.
  const check = spawnSync(process.execPath, [path.join(dist, 'cli/bin.js'), '--help'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (check.status !== 0) throw new Error(`dist/ does not load (a build in progress?); run npm run build and try again:\n${check.stderr.slice(-2000)}`);
  return dist;
}

export interface BenchServerOptions {
  /** The dist directory to run (a snapshotDist copy). */
  dist: string;
  kubeconfigPath: string;
  namespace: string;
  /** Its stdout and stderr go here. */
  logFile: string;
  scratchDir: string;
  pluginDir?: string;
  /** Extra node flags (--cpu-prof for profiling; NODE_OPTIONS may not carry it). */
  nodeArgs?: readonly string[];
}

export interface BenchServer {
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

function tail(file: string, bytes = 3000): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-bytes);
  } catch {
    return '(no output)';
  }
}

/** Starts the server and resolves once it leads (its controllers run). */
export async function startBenchServer(opts: BenchServerOptions): Promise<BenchServer> {
  fs.mkdirSync(opts.scratchDir, { recursive: true });
  fs.writeFileSync(opts.logFile, '');
  const args = [
    ...(opts.nodeArgs ?? []),
    path.join(opts.dist, 'cli/bin.js'), 'server',
    '--kubeconfig', opts.kubeconfigPath,
    '--namespace', opts.namespace,
    '--metrics-address', '127.0.0.1:0',
    '--scratch-dir', opts.scratchDir,
    '--plugin-idle-timeout', '30m',
    ...(opts.pluginDir !== undefined ? ['--plugin-dir', opts.pluginDir] : []),
  ];
  // An inherited NODE_OPTIONS (a test runner's loader) must not change what is measured.
  const proc: Spawned = spawnTracked(process.execPath, args, opts.logFile, { ...process.env, NODE_OPTIONS: '' });
  const pid = proc.child.pid;
  if (pid === undefined) throw new Error('the server did not start');
  const server: BenchServer = { pid, logFile: opts.logFile, stop: () => proc.stop(30_000) };
  const deadline = Date.now() + 120_000;
  try {
    for (;;) {
      if (fs.readFileSync(opts.logFile, 'utf8').includes('became the leader')) return server;
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`the server exited before it led:\n${tail(opts.logFile)}`);
      if (Date.now() > deadline) throw new Error(`the server did not become the leader within 120 s:\n${tail(opts.logFile)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await proc.stop(5000);
    throw err;
  }
}
