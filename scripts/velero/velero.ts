// Velero (server and CLI) and its AWS object-store plugin, built from the Go module proxy into the
// stowage cache by build.sh, for the benchmark's peer rows only: never shipped, never in a test.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { cacheRoot } from '../cluster/paths.js';

/** The current 1.18 release, and the plugin release made for it. */
export const VELERO_VERSION = 'v1.18.3';
export const AWS_PLUGIN_VERSION = 'v1.14.3';

export interface VeleroBinaries {
  /** The `velero` binary (server and CLI in one). */
  velero: string;
  /** The directory holding velero-plugin-for-aws, for `velero server --plugin-dir`. */
  pluginDir: string;
  version: string;
  awsPluginVersion: string;
  /** How long ensureVelero took: a build, or only the check that the cache holds one. */
  seconds: number;
}

export function veleroDir(root = cacheRoot()): string {
  return path.join(root, `velero-${VELERO_VERSION}`);
}

/** The version the binary reports (`velero version --client-only`), or why it does not run. */
function clientVersion(bin: string): { version?: string; error?: string } {
  const r = spawnSync(bin, ['version', '--client-only'], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) return { error: (r.error?.message ?? r.stderr.trim()) || `exit ${r.status ?? r.signal}` };
  return { version: /Version:\s*(\S+)/.exec(r.stdout)?.[1] ?? '' };
}

/**
 * Builds velero and velero-plugin-for-aws once (flock'd, so concurrent runs build once; a few
 * minutes with a warm Go cache, much longer cold) and returns their paths. A failed build or a
 * binary that does not run throws with the reason.
 */
export async function ensureVelero(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`), root = cacheRoot()): Promise<VeleroBinaries> {
  const t0 = performance.now();
  const script = path.join(import.meta.dirname, 'build.sh');
  let tail = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('bash', [script, root, VELERO_VERSION, AWS_PLUGIN_VERSION], { stdio: ['ignore', 'pipe', 'pipe'] });
    const take = (chunk: Buffer): void => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      // Progress lines only: go's "downloading" chatter would drown the benchmark's log.
      for (const line of text.split('\n')) if (line.startsWith('[velero')) log(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    const reason = /BUILD FAILED: (.+)/.exec(tail)?.[1] ?? (tail.trim().split('\n').slice(-3).join(' | ') || `build.sh exited ${code ?? 'on a signal'} without a word`);
    const goLines = tail.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('[velero') && !l.startsWith('go: downloading')).slice(-6).join(' | ');
    throw new Error(`building Velero ${VELERO_VERSION} failed (cache ${veleroDir(root)}): ${reason}${goLines !== '' ? ` — ${goLines}` : ''}`);
  }
  const dir = veleroDir(root);
  const velero = path.join(dir, 'velero');
  const v = clientVersion(velero);
  if (v.error !== undefined) throw new Error(`${velero} does not run: ${v.error}`);
  if (v.version !== VELERO_VERSION) throw new Error(`${velero} reports version ${JSON.stringify(v.version)}, not ${VELERO_VERSION}: remove ${dir} and run again`);
  return { velero, pluginDir: path.join(dir, 'plugins'), version: VELERO_VERSION, awsPluginVersion: AWS_PLUGIN_VERSION, seconds: (performance.now() - t0) / 1000 };
}
