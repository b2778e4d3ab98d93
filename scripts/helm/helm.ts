// The real `helm` binary, built from its Go module (helm.sh/helm/v3) into the stowage cache on first
// use, with the module and build caches the Kubernetes build shares. Nothing is downloaded but Go
// modules through the Go module proxy.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cacheBase } from '../node-runtime.mjs';

export const HELM_VERSION = 'v3.21.4';

export function helmPath(): string {
  return path.join(cacheBase(), `helm-${HELM_VERSION}`, 'bin', 'helm');
}

function works(bin: string): boolean {
  const r = spawnSync(bin, ['version', '--short'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.startsWith(HELM_VERSION);
}

/** The helm binary's path, building it first when missing (a few minutes cold on 2 cores). */
export async function ensureHelm(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  const bin = helmPath();
  if (works(bin)) return bin;
  const dir = path.dirname(path.dirname(bin));
  fs.mkdirSync(path.dirname(bin), { recursive: true });
  const base = cacheBase();
  const t0 = Date.now();
  log(`=== helm: building helm.sh/helm/v3/cmd/helm@${HELM_VERSION} with the Go module proxy into ${dir}`);
  const logFile = path.join(dir, 'build.log');
  // flock: two test runs (or a demo and a test run) build it once.
  const child = spawn('flock', [path.join(dir, '.build.lock'), 'sh', '-c',
    `[ -x "$0" ] && "$0" version --short >/dev/null 2>&1 && exit 0; exec go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"`, bin], {
    stdio: ['ignore', fs.openSync(logFile, 'w'), fs.openSync(logFile, 'a')],
    env: { ...process.env, GOBIN: path.dirname(bin), GOMODCACHE: path.join(base, 'gomod'), GOCACHE: path.join(base, 'gocache'), CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
  });
  const beat = setInterval(() => log(`=== helm: still building (${Math.round((Date.now() - t0) / 1000)}s)`), 30_000);
  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', resolve);
    child.once('error', () => resolve(null));
  }).finally(() => clearInterval(beat));
  if (code !== 0 || !works(bin)) {
    const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-4).join(' | ') : '';
    throw new Error(`building helm ${HELM_VERSION} failed (exit ${code}; is Go >= 1.24 on PATH and the Go module proxy reachable?): ${tail}`);
  }
  log(`=== helm: ${HELM_VERSION} ready (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  return bin;
}

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs helm with a kubeconfig; throws with helm's own message when it fails. */
export function helm(bin: string, kubeconfig: string, args: string[], opts: { allowFail?: boolean } = {}): HelmResult {
  const r = spawnSync(bin, [...args, '--kubeconfig', kubeconfig], { encoding: 'utf8', maxBuffer: 32 << 20, env: { ...process.env, HELM_CACHE_HOME: '/tmp/stowage-helm/cache', HELM_CONFIG_HOME: '/tmp/stowage-helm/config', HELM_DATA_HOME: '/tmp/stowage-helm/data' } });
  if (r.status !== 0 && opts.allowFail !== true) throw new Error(`helm ${args.join(' ')} failed (exit ${r.status ?? r.signal}): ${r.stderr.trim()}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
