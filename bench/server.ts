// Runs the built `stowage server` (dist/cli/bin.js) as its own tracked process, the way a user
// runs it: a fresh process per measured phase, so its peak RSS belongs to that phase alone.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { spawnTracked, type Spawned } from '../scripts/cluster/procs.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const SERVER_BIN = path.join(ROOT, 'dist/cli/bin.js');

/**
 * Copies dist/ (or another build, `from`: the commit before a change, for an A/B) into `workDir` and
 * checks that the copy loads: the run then uses one consistent build even if dist/ is rebuilt
 * meanwhile (a shared checkout). Returns the copy's dist directory.
 */
export function snapshotDist(workDir: string, from = path.join(ROOT, 'dist')): string {
  const bin = path.join(from, 'cli/bin.js');
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run npm run build first`);
  const dist = path.join(workDir, 'dist');
  fs.rmSync(dist, { recursive: true, force: true });
  fs.cpSync(from, dist, { recursive: true });
  // Dependencies resolve from the copy through this link (the work directory may be outside the repository).
  const modules = path.join(workDir, 'node_modules');
  if (!fs.existsSync(modules)) fs.symlinkSync(path.join(ROOT, 'node_modules'), modules, 'dir');
  // Importing the whole CLI finds a half-written build (a missing export) before anything is measured.
  const check = spawnSync(process.execPath, [path.join(dist, 'cli/bin.js'), '--help'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (check.status !== 0) throw new Error(`dist/ does not load (a build in progress?); run npm run build and try again:\n${check.stderr.slice(-2000)}`);
  return dist;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(full));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** The server runs from dist/: build it when it is missing or older than src/ (a fresh clone has none). */
export function ensureBuilt(): void {
  const built = fs.existsSync(SERVER_BIN) ? fs.statSync(SERVER_BIN).mtimeMs : 0;
  if (built >= newestMtime(path.join(ROOT, 'src'))) return;
  process.stderr.write(`[bench] ${built === 0 ? 'dist/ is missing' : 'src/ is newer than dist/'}: npm run build\n`);
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}

/** The server's Deployment; the chart's defaults render the same container. */
const DEPLOYMENT = path.join(ROOT, 'deploy/30-deployment.yaml');

/** The server container's memory limit in deploy/30-deployment.yaml (the chart's default is the same), in MiB. */
export function deployedMemoryLimitMiB(): number {
  const m = /\blimits:\s*\n\s*memory:\s*(\d+)(Mi|Gi)\b/.exec(fs.readFileSync(DEPLOYMENT, 'utf8'));
  if (m === null) throw new Error(`no memory limit (limits: memory: <n>Mi|Gi) found in ${DEPLOYMENT}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

/**
 * Node flags that size the V8 heap as Node 20 does by itself in a container with this memory limit
 * (it reads the cgroup limit): an old generation of half the limit (at least 256 MiB) and semi-spaces
 * of 1/128 of that (at most 16 MiB). Checked on Node 20.20 in a 1 GiB memory cgroup: heap_size_limit is
 * 524 MiB there and with these flags. Without them, on a machine without a limit, V8 sizes the heap
 * from all of the machine's memory and lets it grow up to 4x what survived the last full collection.
 */
export function heapFlagsForMemoryLimit(limitMiB: number): string[] {
  const oldSpace = Math.max(256, Math.floor(limitMiB / 2));
  const semiSpace = Math.min(16, Math.max(1, Math.floor(oldSpace / 128)));
  return [`--max-old-space-size=${oldSpace}`, `--max-semi-space-size=${semiSpace}`];
}

let deploymentEnvCache: ReadonlyMap<string, string> | undefined;

/** The plain `name:`/`value:` environment of the server container in deploy/30-deployment.yaml, read once. */
function deploymentEnv(): ReadonlyMap<string, string> {
  deploymentEnvCache ??= new Map(
    [...fs.readFileSync(DEPLOYMENT, 'utf8').matchAll(/-\s*name:\s*(\w+)\s*\n\s*value:\s*"?([^"\n]*)"?/g)].map((m) => [m[1] ?? '', (m[2] ?? '').trim()]),
  );
  return deploymentEnvCache;
}

/** The flags in the NODE_OPTIONS that deploy/30-deployment.yaml gives the server (the chart's default is the same). */
export function deployedNodeOptions(): string[] {
  return (deploymentEnv().get('NODE_OPTIONS') ?? '').split(/\s+/).filter((f) => f !== '');
}

/**
 * The allocator settings deploy/30-deployment.yaml gives the server (MALLOC_*, glibc's; the chart's
 * default and the image's ENV are the same): every benchmark server runs with them, as the
 * container would.
 */
export function deployedServerEnv(): Record<string, string> {
  return Object.fromEntries([...deploymentEnv()].filter(([k]) => k.startsWith('MALLOC_')));
}

/**
 * The server's node flags in the deployed container: the heap Node derives from the memory limit,
 * with any flag the deployment's NODE_OPTIONS sets explicitly taking the place of the derived one
 * (an explicit V8 flag wins over Node's sizing there too).
 */
export function deployedServerFlags(limitMiB: number, nodeOptions: readonly string[]): string[] {
  const nameOf = (flag: string): string => flag.split('=')[0] ?? flag;
  const explicit = new Set(nodeOptions.map(nameOf));
  return [...heapFlagsForMemoryLimit(limitMiB).filter((f) => !explicit.has(nameOf(f))), ...nodeOptions];
}

/** The server's flags for a run with this container memory limit (0: none, V8's own sizing). */
export function serverHeapFlags(limitMiB: number): string[] {
  return limitMiB > 0 ? deployedServerFlags(limitMiB, deployedNodeOptions()) : [];
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
  /** Extra server flags (the webhook's). */
  args?: readonly string[];
  /** Extra environment variables (bench/heapSampler.mjs's file). */
  env?: Readonly<Record<string, string>>;
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
    ...(opts.args ?? []),
  ];
  // An inherited NODE_OPTIONS (a test runner's loader) must not change what is measured.
  const proc: Spawned = spawnTracked(process.execPath, args, opts.logFile, { ...process.env, ...deployedServerEnv(), ...opts.env, NODE_OPTIONS: '' });
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
