// A real node joined to a node-mode control plane (controlPlane.ts, `node` option): containerd and
// runc run the pods, the bridge CNI plugin wires them, the kubelet runs them, kube-proxy makes
// Services route through iptables, kube-scheduler places them. Every process is tracked (procs.ts);
// stop() ends them, removes the pods' containers, and puts the machine back as snapshotHost() found it.
// The workarounds are explained in ../../../shared/design/real-node.md (its "traps").
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ControlPlane } from '../cluster/controlPlane.js';
import { freePort } from '../cluster/controlPlane.js';
import { cacheDir } from '../cluster/paths.js';
import { spawnTracked, type Spawned } from '../cluster/procs.js';
import { createCgroupRoot, restoreHost, run, snapshotHost, type HostSnapshot } from './hostState.js';
import { APP_IMAGE, APP_IMAGE_DEFAULT_NAME, appImage, BUSYBOX_IMAGE, busyboxImage, PAUSE_IMAGE, pauseImage } from './images.js';
import { ensureNodePackages } from './packages.js';

/** The node binaries, built beside kube-apiserver by provision.sh. */
export interface NodeBinaries {
  kubelet: string;
  kubeProxy: string;
  kubeScheduler: string;
}

/** kubelet, kube-proxy and kube-scheduler from the control plane's cache (same version as kube-apiserver). */
export function nodeBinaries(dir = cacheDir()): NodeBinaries {
  const bin = path.join(dir, 'bin');
  return { kubelet: path.join(bin, 'kubelet'), kubeProxy: path.join(bin, 'kube-proxy'), kubeScheduler: path.join(bin, 'kube-scheduler') };
}

/** The kubectl built with the control plane when there is one, else the machine's. */
export function kubectlPath(dir = cacheDir()): string {
  const built = path.join(dir, 'bin', 'kubectl');
  return fs.existsSync(built) ? built : 'kubectl';
}

export interface NodeOptions {
  binaries: NodeBinaries;
  /** Build and import the app image from the Dockerfile (default true). */
  appImage?: boolean;
  log?: (line: string) => void;
}

export interface RealNode {
  name: string;
  ip: string;
  /** The pods' subnet on the node's bridge. */
  podCidr: string;
  /** `ctr` against this node's containerd, namespace k8s.io: e.g. to import another image. */
  ctr(args: string[]): string;
  /** Imports a docker-archive into the node's runtime. */
  importImage(tar: string): void;
  /** The app image built from the Dockerfile: its names in the runtime and its size (the uncompressed docker-archive). */
  app?: { image: string; defaultName: string; sizeBytes: number };
  workDir: string;
  stop(): Promise<void>;
}

const CGROUP_ROOT = '/stowage-node';
const BRIDGE = 'stowbr0';
const POD_CIDR = '10.244.77.0/24';
/** containerd's CNI plugin directory from Debian's containernetworking-plugins. */
const CNI_BIN = '/usr/lib/cni';

/** The machine's first non-loopback IPv4 address: the node IP (the kubelet rejects loopback). */
export function hostIp(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('this machine has no non-loopback IPv4 address to use as the node IP');
}

function containerdConfig(dir: string): string {
  return `version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[debug]
  address = "${dir}/debug.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  enable_selinux = false
  # This VM withholds CAP_SYS_RESOURCE even from root: a negative oom_score_adj fails every sandbox.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN}"
    conf_dir = "${dir}/net.d"
`;
}

function cniConfig(ipamDir: string): string {
  return JSON.stringify({
    cniVersion: '0.4.0',
    name: 'stowage-node',
    plugins: [
      {
        type: 'bridge', bridge: BRIDGE, isGateway: true, ipMasq: true, hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_CIDR }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: ipamDir },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
      { type: 'loopback' },
    ],
  }, null, 2);
}

function kubeletConfig(ip: string, runtimeSock: string, ports: { kubelet: number; healthz: number }, logsDir: string): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${ip}
port: ${ports.kubelet}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${ports.healthz}
containerRuntimeEndpoint: unix://${runtimeSock}
cgroupDriver: cgroupfs
cgroupRoot: ${CGROUP_ROOT}
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
podLogsDir: ${logsDir}
# The apiserver reaches logs/exec anonymously: a throwaway node on a test machine only.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
`;
}

async function waitFor(what: string, proc: Spawned | undefined, logFile: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc !== undefined && proc.child.exitCode !== null) throw new Error(`${what}: the process exited (code ${proc.child.exitCode}):\n${tail(logFile)}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not happen within ${timeoutMs / 1000} s:\n${tail(logFile)}`);
}

function tail(file: string, n = 12): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts containerd, the kubelet, kube-proxy and kube-scheduler, and waits for the Node to be Ready. */
export async function startNode(cp: ControlPlane, opts: NodeOptions): Promise<RealNode> {
  const access = cp.node;
  if (access === undefined) throw new Error('startNode needs a control plane started with the node option');
  if (process.getuid?.() !== 0) throw new Error('a real node needs root (containerd, runc, iptables, cgroups)');
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const t0 = Date.now();
  for (const [name, bin] of Object.entries(opts.binaries)) {
    if (!fs.existsSync(bin)) throw new Error(`the node's ${name} binary is missing at ${bin} (provision.sh builds it beside kube-apiserver)`);
  }
  ensureNodePackages(log);
  // Before the images: buildah leaves /etc/cni/net.d/cni.lock behind (real-node.md, "Host side effects").
  const before: HostSnapshot = snapshotHost();
  const images = [pauseImage(log), busyboxImage(log)];
  const app = opts.appImage === false ? undefined : appImage(log);

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-node-'));
  const started: Spawned[] = [];
  const ctrDir = path.join(workDir, 'containerd');
  const sock = path.join(ctrDir, 'containerd.sock');
  const ctr = (args: string[]): string => run('ctr', ['--address', sock, '--namespace', 'k8s.io', ...args]);

  const stop = async (): Promise<void> => {
    const kubelet = started.find((p) => p.child.spawnargs[0] === opts.binaries.kubelet);
    await kubelet?.stop(10_000);
    // The pods' processes belong to containerd's shims, not to any tracked process group.
    if (fs.existsSync(sock)) removeAllContainers(ctr);
    for (const p of [...started].reverse()) await p.stop(10_000);
    const problems = restoreHost(before, { cgroupRoots: [CGROUP_ROOT] });
    fs.rmSync(workDir, { recursive: true, force: true });
    if (problems.length > 0) throw new Error(`the machine could not be fully restored after the node stopped:\n${problems.join('\n')}`);
  };

  try {
    fs.mkdirSync(path.join(ctrDir, 'net.d'), { recursive: true });
    fs.writeFileSync(path.join(ctrDir, 'config.toml'), containerdConfig(ctrDir));
    fs.writeFileSync(path.join(ctrDir, 'net.d', '10-stowage.conflist'), cniConfig(path.join(ctrDir, 'ipam')));
    const ctrLog = path.join(workDir, 'containerd.log');
    const containerd = spawnTracked('containerd', ['--config', path.join(ctrDir, 'config.toml')], ctrLog);
    started.push(containerd);
    await waitFor('containerd serving', containerd, ctrLog, async () => spawnSync('ctr', ['--address', sock, 'version']).status === 0, 60_000);
    for (const tar of images) ctr(['images', 'import', '--no-unpack=false', tar]);
    let sizeBytes = 0;
    if (app !== undefined) {
      ctr(['images', 'import', app.tar]);
      spawnSync('ctr', ['--address', sock, '--namespace', 'k8s.io', 'images', 'rm', APP_IMAGE_DEFAULT_NAME]);
      ctr(['images', 'tag', APP_IMAGE, APP_IMAGE_DEFAULT_NAME]);
      sizeBytes = fs.statSync(app.tar).size;
    }

    createCgroupRoot(CGROUP_ROOT);
    const kubeletDir = path.join(workDir, 'kubelet');
    fs.mkdirSync(kubeletDir, { recursive: true });
    const ports = { kubelet: await freePort(), healthz: await freePort() };
    const logsDir = path.join(workDir, 'pod-logs');
    fs.writeFileSync(path.join(kubeletDir, 'config.yaml'), kubeletConfig(access.ip, sock, ports, logsDir));
    const kubeletLog = path.join(workDir, 'kubelet.log');
    const kubelet = spawnTracked(opts.binaries.kubelet, [
      '--config', path.join(kubeletDir, 'config.yaml'),
      '--kubeconfig', access.kubeletKubeconfig,
      '--root-dir', path.join(kubeletDir, 'root'),
      // Else /var/lib/kubelet/pki, whatever --root-dir says.
      '--cert-dir', path.join(kubeletDir, 'pki'),
      '--hostname-override', access.nodeName,
      '--node-ip', access.ip,
      '--v', '1',
    ], kubeletLog);
    started.push(kubelet);

    const proxyLog = path.join(workDir, 'kube-proxy.log');
    started.push(spawnTracked(opts.binaries.kubeProxy, [
      '--kubeconfig', access.proxyKubeconfig,
      '--hostname-override', access.nodeName,
      '--proxy-mode', 'iptables',
      '--cluster-cidr', POD_CIDR,
      '--bind-address', access.ip,
      '--healthz-bind-address', `127.0.0.1:${await freePort()}`,
      '--metrics-bind-address', `127.0.0.1:${await freePort()}`,
      // 0: leave the machine's conntrack sysctls alone.
      '--conntrack-max-per-core', '0',
      '--conntrack-tcp-timeout-established', '0',
      '--conntrack-tcp-timeout-close-wait', '0',
      '--v', '1',
    ], proxyLog));

    const schedLog = path.join(workDir, 'kube-scheduler.log');
    started.push(spawnTracked(opts.binaries.kubeScheduler, [
      '--kubeconfig', access.schedulerKubeconfig,
      '--authentication-kubeconfig', access.schedulerKubeconfig,
      '--authorization-kubeconfig', access.schedulerKubeconfig,
      '--leader-elect=false',
      '--bind-address', '127.0.0.1',
      '--secure-port', String(await freePort()),
      '--v', '1',
    ], schedLog));

    const kc = new k8s.KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await waitFor(`Node ${access.nodeName} Ready`, kubelet, kubeletLog, async () => {
      const n = await core.readNode({ name: access.nodeName });
      const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      const tainted = (n.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/not-ready');
      return ready && !tainted;
    });
    log(`=== node: ${access.nodeName} Ready at ${access.ip} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
    return {
      name: access.nodeName,
      ip: access.ip,
      podCidr: POD_CIDR,
      ctr,
      importImage: (tar) => void ctr(['images', 'import', tar]),
      app: app === undefined ? undefined : { image: APP_IMAGE, defaultName: APP_IMAGE_DEFAULT_NAME, sizeBytes },
      workDir,
      stop,
    };
  } catch (err) {
    const keep = path.join(os.tmpdir(), `stowage-node-failed-${Date.now()}`);
    for (const f of ['containerd.log', 'kubelet.log', 'kube-proxy.log', 'kube-scheduler.log']) {
      try {
        fs.mkdirSync(keep, { recursive: true });
        fs.copyFileSync(path.join(workDir, f), path.join(keep, f));
      } catch { /* not started */ }
    }
    await stop().catch((e: unknown) => log(`=== node: cleanup after the failed start: ${(e as Error).message}`));
    throw new Error(`${(err as Error).message}\n(logs kept in ${keep})`);
  }
}

/** Kills and deletes every container and sandbox: their shims outlive the kubelet. */
function removeAllContainers(ctr: (args: string[]) => string): void {
  const tasks = ctr(['tasks', 'ls', '-q']).split('\n').filter((t) => t !== '');
  for (const t of tasks) tryRun(() => ctr(['tasks', 'kill', '-s', 'SIGKILL', t]));
  for (const t of tasks) tryRun(() => ctr(['tasks', 'delete', '-f', t]));
  for (const c of ctr(['containers', 'ls', '-q']).split('\n').filter((x) => x !== '')) tryRun(() => ctr(['containers', 'delete', c]));
}

function tryRun(f: () => unknown): void {
  try {
    f();
  } catch {
    // already gone
  }
}

export { BUSYBOX_IMAGE };
