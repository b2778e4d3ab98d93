// What a real node changes on the machine, captured before it starts and put back after it stops:
// the kubelet rewrites kernel sysctls, the CNI bridge turns on ip_forward, kube-proxy fills the
// iptables tables, and the kubelet, containerd and CNI use global paths whatever their root dirs say
// (docs: ../../../shared/design/real-node.md, "Host side effects").
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Sysctls the kubelet or the bridge plugin set; restored to their values before the node started. */
export const SYSCTLS = [
  'vm.overcommit_memory',
  'kernel.panic',
  'kernel.panic_on_oops',
  'net.ipv4.ip_forward',
  'net.bridge.bridge-nf-call-iptables',
  'net.ipv4.conf.all.route_localnet',
  'net.ipv4.vs.conntrack',
] as const;

/** Paths the node's processes create outside its work dir, removed at teardown when they were absent before. */
export const GLOBAL_PATHS = [
  '/var/lib/kubelet',
  '/var/log/pods',
  '/var/log/containers',
  '/run/containerd',
  '/var/lib/cni',
  '/etc/cni',
  '/run/netns',
  '/var/run/netns',
  '/run/kubernetes',
] as const;

export interface HostSnapshot {
  sysctls: Map<string, string>;
  /** `nft list ruleset`: Debian's iptables is the nft variant, so this holds kube-proxy's and the kubelet's rules too. */
  ruleset: string;
  existingPaths: Set<string>;
  links: Set<string>;
  mounts: Set<string>;
  /** Attached loop devices, "<device> <backing file>" (the CSI driver's ext4 volumes use them). */
  loops: Set<string>;
}

function sysctlFile(name: string): string {
  return path.join('/proc/sys', ...name.split('.'));
}

function readSysctl(name: string): string | undefined {
  try {
    return fs.readFileSync(sysctlFile(name), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function links(): Set<string> {
  return new Set(fs.readdirSync('/sys/class/net'));
}

function mountPoints(): Set<string> {
  return new Set(fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m !== ''));
}

function loopDevices(): Set<string> {
  const r = spawnSync('losetup', ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`losetup --list failed: ${(r.stderr || r.error?.message || '').trim()}`);
  return new Set(r.stdout.split('\n').filter((l) => l !== ''));
}

function nftRuleset(): string {
  const r = spawnSync('nft', ['list', 'ruleset'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`nft list ruleset failed: ${(r.stderr || r.error?.message || '').trim()}`);
  // Rule counters change on their own; compare rules only.
  return r.stdout.replace(/counter packets \d+ bytes \d+/g, 'counter');
}

export function snapshotHost(): HostSnapshot {
  const sysctls = new Map<string, string>();
  for (const s of SYSCTLS) {
    const v = readSysctl(s);
    if (v !== undefined) sysctls.set(s, v);
  }
  return { sysctls, ruleset: nftRuleset(), existingPaths: new Set(GLOBAL_PATHS.filter((p) => fs.existsSync(p))), links: links(), mounts: mountPoints(), loops: loopDevices() };
}

/** What differs between two snapshots, one line each (empty: the machine is as it was). */
export function hostChanges(before: HostSnapshot, after: HostSnapshot): string[] {
  const out: string[] = [];
  for (const [name, value] of before.sysctls) {
    if (after.sysctls.get(name) !== value) out.push(`sysctl ${name} is ${after.sysctls.get(name) ?? '(gone)'}, was ${value}`);
  }
  if (after.ruleset !== before.ruleset) out.push('the nft ruleset differs');
  for (const l of after.links) if (!before.links.has(l)) out.push(`network link ${l} was added`);
  for (const l of before.links) if (!after.links.has(l)) out.push(`network link ${l} is gone`);
  for (const m of after.mounts) if (!before.mounts.has(m)) out.push(`mount ${m} was added`);
  for (const l of after.loops) if (!before.loops.has(l)) out.push(`loop device ${l} was attached`);
  for (const p of after.existingPaths) if (!before.existingPaths.has(p)) out.push(`${p} was created`);
  for (const p of before.existingPaths) if (!after.existingPaths.has(p)) out.push(`${p} is gone`);
  return out;
}

/**
 * Puts the machine back as `before` found it. Returns what could not be restored (empty when all
 * was); the caller fails with that list rather than leaving the machine changed silently.
 */
export function restoreHost(before: HostSnapshot, opts: { cgroupRoots: string[] }): string[] {
  const problems: string[] = [];
  // Mounts under the node's paths first (the kubelet bind-mounts its root; pods leave volume mounts).
  const added = [...mountPoints()].filter((m) => !before.mounts.has(m)).sort((a, b) => b.length - a.length);
  for (const m of added) {
    const r = spawnSync('umount', ['-l', m], { encoding: 'utf8' });
    if (r.status !== 0) problems.push(`umount ${m}: ${r.stderr.trim()}`);
  }
  for (const l of loopDevices()) {
    if (before.loops.has(l)) continue;
    const dev = l.split(' ')[0] ?? '';
    const r = spawnSync('losetup', ['--detach', dev], { encoding: 'utf8' });
    if (r.status !== 0) problems.push(`losetup --detach ${dev}: ${r.stderr.trim()}`);
  }
  for (const link of links()) {
    if (before.links.has(link)) continue;
    const r = spawnSync('ip', ['link', 'delete', link], { encoding: 'utf8' });
    // veth peers vanish with their bridge side; only a link still present is a problem.
    if (r.status !== 0 && fs.existsSync(`/sys/class/net/${link}`)) problems.push(`ip link delete ${link}: ${r.stderr.trim()}`);
  }
  if (nftRuleset() !== before.ruleset) {
    const r = spawnSync('nft', ['-f', '-'], { input: `flush ruleset\n${before.ruleset}`, encoding: 'utf8' });
    if (r.status !== 0) problems.push(`nft restore of the ruleset: ${r.stderr.trim()}`);
    else if (nftRuleset() !== before.ruleset) problems.push('the nft ruleset differs from before the node started after restoring it');
  }
  for (const [name, value] of before.sysctls) {
    if (readSysctl(name) === value) continue;
    try {
      fs.writeFileSync(sysctlFile(name), value);
    } catch (e) {
      problems.push(`sysctl ${name}=${value}: ${(e as Error).message}`);
    }
  }
  for (const root of opts.cgroupRoots) removeCgroupTree(root, problems);
  for (const p of GLOBAL_PATHS) {
    if (before.existingPaths.has(p)) continue;
    try {
      fs.rmSync(p, { recursive: true, force: true });
    } catch (e) {
      problems.push(`rm -r ${p}: ${(e as Error).message}`);
    }
  }
  return problems;
}

/** cgroup v1 mounts one hierarchy per controller set; v2 one tree. */
export function cgroupHierarchies(): string[] {
  const base = '/sys/fs/cgroup';
  if (fs.existsSync(path.join(base, 'cgroup.controllers'))) return [base];
  return fs.readdirSync(base).map((d) => path.join(base, d)).filter((d) => {
    try {
      return fs.lstatSync(d).isDirectory() && !fs.lstatSync(d).isSymbolicLink();
    } catch {
      return false;
    }
  });
}

/** Creates `root` (e.g. /stowage-node) in every hierarchy: the kubelet refuses a cgroupRoot that does not exist. */
export function createCgroupRoot(root: string): void {
  for (const h of cgroupHierarchies()) {
    const dir = path.join(h, root);
    fs.mkdirSync(dir, { recursive: true });
    // cpuset children start empty, and a task cannot join a cpuset with no cpus or mems.
    for (const f of ['cpuset.cpus', 'cpuset.mems']) {
      const parent = path.join(h, f);
      if (fs.existsSync(parent) && fs.existsSync(path.join(dir, f)) && fs.readFileSync(path.join(dir, f), 'utf8').trim() === '') {
        fs.writeFileSync(path.join(dir, f), fs.readFileSync(parent, 'utf8').trim());
      }
    }
  }
}

/** Removes a cgroup directory tree bottom-up (rmdir only: cgroup files cannot be unlinked). */
function removeCgroupTree(root: string, problems: string[]): void {
  for (const h of cgroupHierarchies()) {
    const top = path.join(h, root);
    if (!fs.existsSync(top)) continue;
    const dirs: string[] = [];
    const walk = (d: string): void => {
      dirs.push(d);
      for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
    };
    walk(top);
    for (const d of dirs.reverse()) {
      try {
        fs.rmdirSync(d);
      } catch (e) {
        problems.push(`rmdir ${d}: ${(e as Error).message}`);
      }
    }
  }
}

/** Runs a command, throwing its stderr on failure (for setup steps whose failure must say why). */
export function run(cmd: string, args: string[], input?: string): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${(err.stderr ?? '').trim() || err.message}`);
  }
}
