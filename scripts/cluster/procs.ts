// Child-process bookkeeping for the local control plane: every child runs in its own process
// group, and a detached watchdog kills those groups if this process dies without cleaning up
// (SIGKILL, OOM, a crashed test runner), so no etcd or kube-* process is ever orphaned.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

const live = new Set<number>();
let watchdog: ChildProcess | undefined;
let hooksInstalled = false;

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

function killAllSync(): void {
  for (const pgid of live) killGroup(pgid, 'SIGKILL');
  live.clear();
  syncWatchdog();
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllSync);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllSync();
      process.kill(process.pid, sig);
    });
  }
}

/** Watchdog script: polls the parent; when it is gone, kills every registered process group. */
const WATCHDOG = `
parent=$1; list=$2
while kill -0 "$parent" 2>/dev/null; do sleep 0.5; done
[ -f "$list" ] && for g in $(cat "$list"); do kill -KILL -- "-$g" 2>/dev/null; done
rm -f "$list"
`;

let listFile: string | undefined;

function syncWatchdog(): void {
  if (listFile === undefined) return;
  try {
    fs.writeFileSync(listFile, [...live].join('\n'));
  } catch {
    // best effort: the exit hook still kills synchronously
  }
}

function ensureWatchdog(): void {
  if (watchdog !== undefined) return;
  listFile = `/tmp/stowage-cluster-pgids-${process.pid}`;
  fs.writeFileSync(listFile, '');
  watchdog = spawn('bash', ['-c', WATCHDOG, 'stowage-watchdog', String(process.pid), listFile], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
}

export interface Spawned {
  child: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawns a tracked child in its own process group, its output appended to logFile. */
export function spawnTracked(cmd: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): Spawned {
  installHooks();
  ensureWatchdog();
  const out = fs.openSync(logFile, 'a');
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out], env: env ?? process.env });
  fs.closeSync(out);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`cannot start ${cmd}`);
  live.add(pid);
  syncWatchdog();
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      killGroup(pid, 'SIGKILL');
      live.delete(pid);
      syncWatchdog();
      resolve(code);
    });
    child.once('error', () => resolve(null));
  });
  child.unref();
  const stop = async (graceMs = 5000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    killGroup(pid, 'SIGTERM');
    const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { child, exited, stop };
}

/**
 * Polls `isUp` (a server with no watchable state) until it answers, failing at once with the log's
 * tail when the process exits first, or when `timeoutMs` passes.
 */
export async function waitUntilServing(what: string, proc: Spawned, logFile: string, isUp: () => Promise<boolean>, timeoutMs: number, pollMs: number): Promise<void> {
  const tail = (): string => fs.readFileSync(logFile, 'utf8').slice(-1000);
  const deadline = Date.now() + timeoutMs;
  while (!(await isUp())) {
    if (proc.child.exitCode !== null) throw new Error(`${what} exited at start: ${tail()}`);
    if (Date.now() > deadline) throw new Error(`${what} did not become ready within ${timeoutMs / 1000} s: ${tail()}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
