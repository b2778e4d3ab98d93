// The node's runtime pieces from Debian's archive: containerd, runc, the CNI plugins, iptables for
// kube-proxy, busybox for the images, buildah for the shipped Dockerfile. Not kubernetes-client: it
// collides with the machine's own /usr/bin/kubectl (real-node.md, trap 1).
import { spawnSync } from 'node:child_process';

export const NODE_PACKAGES = [
  'containerd',
  'runc',
  'containernetworking-plugins',
  'busybox-static',
  'iptables',
  'conntrack',
  // nft: the whole ruleset is saved before the node starts and put back after.
  'nftables',
  'buildah',
] as const;

function missing(pkgs: readonly string[]): string[] {
  return pkgs.filter((p) => {
    const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', p], { encoding: 'utf8' });
    return !(r.status === 0 && r.stdout.includes('install ok installed'));
  });
}

function apt(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error?.message ?? ''}` };
}

/** Installs whatever of NODE_PACKAGES is missing; throws with apt's own reason when it cannot. */
export function ensureNodePackages(log: (line: string) => void): void {
  const need = missing(NODE_PACKAGES);
  if (need.length === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`the real node needs root to install ${need.join(' ')} (running as uid ${process.getuid?.()})`);
  const t0 = Date.now();
  log(`=== node: apt-get install ${need.join(' ')}`);
  let r = apt(['install', '-y', '--no-install-recommends', ...need]);
  if (!r.ok) {
    // A fresh machine's package lists may be empty or stale.
    log('=== node: apt-get update (install failed with the current package lists)');
    const u = apt(['update']);
    if (!u.ok) throw new Error(`apt-get update failed: ${lastLines(u.out)}`);
    r = apt(['install', '-y', '--no-install-recommends', ...need]);
  }
  if (!r.ok) throw new Error(`apt-get install ${need.join(' ')} failed: ${lastLines(r.out)}`);
  const still = missing(need);
  if (still.length > 0) throw new Error(`apt-get reported success but ${still.join(' ')} is not installed`);
  log(`=== node: packages installed (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
}

function lastLines(s: string): string {
  return s.trim().split('\n').slice(-4).join(' | ');
}
