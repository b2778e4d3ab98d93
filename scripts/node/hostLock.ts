// One real node per machine: it owns the machine's containerd, kubelet, iptables rules and cgroups,
// so a second one would tear the first one's state down. Every user of the real node (test files run
// in parallel by vitest, a demo beside a test run, two checkouts) takes this lock for the node's whole
// life, and waits for it otherwise. flock(1) holds it in a child whose stdin is our pipe: when this
// process ends, however it ends, the pipe closes and the lock goes with it.
import { spawn, type ChildProcess } from 'node:child_process';

/** The lock file; outside any checkout, since two checkouts share the one machine. */
export const REAL_NODE_LOCK = '/run/lock/stowage-real-node.lock';

export interface HostLock {
  release(): Promise<void>;
}

/** Takes the machine's real-node lock, waiting for its holder (logged every 30 s) as long as it holds it. */
export async function takeRealNodeLock(log: (line: string) => void, file = REAL_NODE_LOCK): Promise<HostLock> {
  const t0 = Date.now();
  const child: ChildProcess = spawn('flock', ['--exclusive', file, 'sh', '-c', 'echo held; exec cat >/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const beat = setInterval(() => log(`=== real node: waiting for ${file}, held by another real-node user (${Math.round((Date.now() - t0) / 1000)}s)`), 30_000);
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (c: Buffer) => { if (c.toString().includes('held')) resolve(); });
      child.once('error', (err) => reject(new Error(`could not run flock(1) for ${file}: ${err.message}`)));
      child.once('exit', (code) => reject(new Error(`flock(1) on ${file} ended (exit ${code}) before taking the lock: ${stderr.trim()}`)));
    });
  } finally {
    clearInterval(beat);
  }
  if (Date.now() - t0 > 1000) log(`=== real node: lock ${file} taken after ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  return {
    release: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.stdin?.end();
    }),
  };
}
