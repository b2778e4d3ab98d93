// A real CSI stack on the real node, for the tests of volume snapshots (TEST INFRASTRUCTURE ONLY):
// our own small driver (scripts/csi/driver: volumes are directories, snapshots are tars, it also
// answers the kubelet's plugin registration) and the Kubernetes CSI project's csi-provisioner,
// csi-snapshotter and snapshot-controller, built from the Go module proxy (scripts/csi/sidecars),
// all run as processes on the machine, which is the node. Recipe and traps: scripts/csi/README.md.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ControlPlane } from '../cluster/controlPlane.js';
import { spawnTracked, type Spawned } from '../cluster/procs.js';
import { cacheBase } from '../node-runtime.mjs';
import { run } from './hostState.js';
import { FILESYSTEM_PARAMETER, releaseLoopVolumes } from './loopVolumes.js';
import { kubectlPath, type RealNode } from './node.js';

const CSI_SRC = path.resolve(import.meta.dirname, '..', 'csi');
const DRIVER_SRC = path.join(CSI_SRC, 'driver');
const SIDECARS_SRC = path.join(CSI_SRC, 'sidecars');

/** The driver's name: the StorageClasses' provisioner and the VolumeSnapshotClasses' driver. */
export const CSI_DRIVER = 'csi.stowage.test';
/** Two StorageClasses of the one driver, to test a storage-class mapping on restore. */
export const CSI_STORAGE_CLASS = 'stowage-csi';
export const CSI_STORAGE_CLASS_B = 'stowage-csi-b';
/** A class whose volumes are each an ext4 image on a loop device (scripts/node/loopVolumes.ts): a pod with CAP_SYS_ADMIN may fsfreeze them. */
export const CSI_STORAGE_CLASS_EXT4 = 'stowage-csi-ext4';
/** The driver's VolumeSnapshotClass as Velero 1.14+ finds it: labelled `velero.io/csi-volumesnapshot-class: "true"`, deletionPolicy Delete. */
export const CSI_SNAPSHOT_CLASS = 'stowage-csi-snapshots';
export const VELERO_SNAPSHOT_CLASS_LABEL = 'velero.io/csi-volumesnapshot-class';

/** The driver's test knobs: VolumeSnapshotClass parameters it reads in CreateSnapshot (scripts/csi/README.md). */
export const CSI_KNOBS = {
  /** CreateSnapshot fails with this value as its message: a driver that refuses. */
  fail: 'stowage.test/fail',
  /** A Go duration ("90s"): the snapshot stays readyToUse=false that long after it is cut. */
  readyAfter: 'stowage.test/ready-after',
  /** DeleteSnapshot of a snapshot cut with this class fails with this value as its message. */
  failDelete: 'stowage.test/fail-delete',
} as const;

/** Unlabelled classes (a Backup picks them by Velero's per-driver annotation), one per knob, deletionPolicy Delete. */
export const CSI_KNOB_CLASSES = {
  refuses: { name: 'stowage-csi-refuses', parameters: { [CSI_KNOBS.fail]: 'stowage.test driver: this volume refuses to be snapshotted' } },
  slow: { name: 'stowage-csi-slow', parameters: { [CSI_KNOBS.readyAfter]: '1h' } },
  /** Ready 3 s after it is cut: a window in which a frozen volume's writers are seen to wait (freeze.suite.ts). */
  settling: { name: 'stowage-csi-settling', parameters: { [CSI_KNOBS.readyAfter]: '3s' } },
  undeletable: { name: 'stowage-csi-undeletable', parameters: { [CSI_KNOBS.failDelete]: 'stowage.test driver: this snapshot cannot be deleted' } },
} as const;

export interface CsiBinaries {
  driver: string;
  provisioner: string;
  snapshotter: string;
  snapshotController: string;
  /** The snapshot.storage.k8s.io (and groupsnapshot) CRDs of the snapshotter's release. */
  crdDir: string;
}

/** Versions of a module in the sidecars' go.mod (the one source of truth for what is built). */
function moduleVersion(mod: string): string {
  const line = fs.readFileSync(path.join(SIDECARS_SRC, 'go.mod'), 'utf8').split('\n').find((l) => l.trim().startsWith(`${mod} `));
  const v = line?.trim().split(/\s+/)[1];
  if (v === undefined) throw new Error(`${mod} is not in ${SIDECARS_SRC}/go.mod`);
  return v;
}

/** A hash of the driver's source: a change to it builds a new binary beside the old one. */
function driverHash(): string {
  const h = crypto.createHash('sha256');
  for (const f of fs.readdirSync(DRIVER_SRC).sort()) {
    if (/\.(go|mod|sum)$/.test(f)) h.update(f).update('\0').update(fs.readFileSync(path.join(DRIVER_SRC, f))).update('\0');
  }
  return h.digest('hex').slice(0, 12);
}

export function csiBinaries(): CsiBinaries {
  const provisioner = moduleVersion('github.com/kubernetes-csi/external-provisioner/v6');
  const snapshotter = moduleVersion('github.com/kubernetes-csi/external-snapshotter/v8');
  const dir = path.join(cacheBase(), `csi-provisioner-${provisioner}-snapshotter-${snapshotter}`);
  const bin = path.join(dir, 'bin');
  return {
    driver: path.join(bin, `stowage-csi-${driverHash()}`),
    provisioner: path.join(bin, 'csi-provisioner'),
    snapshotter: path.join(bin, 'csi-snapshotter'),
    snapshotController: path.join(bin, 'snapshot-controller'),
    crdDir: path.join(dir, 'crd'),
  };
}

function built(b: CsiBinaries): boolean {
  const bins = [b.driver, b.provisioner, b.snapshotter, b.snapshotController];
  return bins.every((f) => fs.existsSync(f)) && fs.existsSync(path.join(b.crdDir, '.ready'));
}

/**
 * Builds the driver and the three sidecars into the stowage cache when missing, with the module and
 * build caches the Kubernetes build shares; a flock makes two runs build once. Each binary is
 * written to a temporary name and renamed, so one that exists is whole.
 */
export async function ensureCsi(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<CsiBinaries> {
  const b = csiBinaries();
  if (built(b)) return b;
  const bin = path.dirname(b.provisioner);
  const dir = path.dirname(bin);
  fs.mkdirSync(bin, { recursive: true });
  const base = cacheBase();
  const t0 = Date.now();
  log(`=== csi: building the test CSI driver and csi-provisioner, csi-snapshotter, snapshot-controller with the Go module proxy into ${bin}`);
  const logFile = path.join(dir, 'build.log');
  const provisionerV = moduleVersion('github.com/kubernetes-csi/external-provisioner/v6');
  const snapshotterV = moduleVersion('github.com/kubernetes-csi/external-snapshotter/v8');
  const goBuild = (out: string, version: string, pkg: string): string =>
    `[ -x "${out}" ] || { go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${out}.tmp" ${pkg} && mv "${out}.tmp" "${out}"; }`;
  const script = [
    'set -e',
    `cd "${DRIVER_SRC}"`,
    goBuild(b.driver, path.basename(b.driver).replace('stowage-csi-', ''), '.'),
    `cd "${SIDECARS_SRC}"`,
    goBuild(b.provisioner, provisionerV, 'github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner'),
    goBuild(b.snapshotter, snapshotterV, 'github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter'),
    goBuild(b.snapshotController, snapshotterV, 'github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller'),
    // The CRDs ship in the snapshotter's client module (config/crd), at the release the sidecars use.
    `src=$(go mod download -json github.com/kubernetes-csi/external-snapshotter/client/v8 | sed -n 's/^[[:space:]]*"Dir": "\\(.*\\)",$/\\1/p')`,
    `[ -d "$src/config/crd" ] || { echo "no config/crd in the snapshotter's client module ($src)" >&2; exit 1; }`,
    `rm -rf "${b.crdDir}" && mkdir -p "${b.crdDir}" && cp "$src"/config/crd/*storage.k8s.io_*.yaml "${b.crdDir}/" && touch "${b.crdDir}/.ready"`,
  ].join('\n');
  const child = spawn('flock', [path.join(dir, '.build.lock'), 'sh', '-c', script], {
    stdio: ['ignore', fs.openSync(logFile, 'w'), fs.openSync(logFile, 'a')],
    env: { ...process.env, GOMODCACHE: path.join(base, 'gomod'), GOCACHE: path.join(base, 'gocache'), CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
  });
  const beat = setInterval(() => log(`=== csi: still building (${Math.round((Date.now() - t0) / 1000)}s)`), 30_000);
  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', resolve);
    child.once('error', () => resolve(null));
  }).finally(() => clearInterval(beat));
  if (code !== 0 || !built(b)) {
    const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-6).join(' | ') : '';
    throw new Error(`building the CSI stack failed (exit ${code}; is Go >= 1.26 on PATH and the Go module proxy reachable? log ${logFile}): ${tail}`);
  }
  log(`=== csi: driver and sidecars ready (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  return b;
}

export interface CsiStack {
  driver: typeof CSI_DRIVER;
  /** Where the driver keeps volumes (volumes/<handle>/) and snapshots (snapshots/<handle>.tar) on the host. */
  root: string;
  /** The directory holding a volume's data on the host (its PV's spec.csi.volumeHandle). */
  volumeDir(volumeHandle: string): string;
  /** Whether the snapshot's data is still on the host (its VolumeSnapshotContent's status.snapshotHandle). */
  snapshotExists(snapshotHandle: string): boolean;
  /** From now on DeleteSnapshot of this snapshot fails with `message` (a marker file beside it). */
  makeUndeletable(snapshotHandle: string, message: string): void;
  /** Lets DeleteSnapshot of this snapshot succeed again. */
  makeDeletable(snapshotHandle: string): void;
  /** The driver's and the sidecars' logs so far, for a failing test's message. */
  logs(): string;
  /** Stops the four processes, unmounts what the driver mounted, removes its files; resolves what could not be undone (empty: all). */
  stop(): Promise<string[]>;
}

const SNAPSHOT_ID = /^snap-[0-9a-f]{20}$/;

function snapshotClass(name: string, parameters: Record<string, string>, labels: Record<string, string> = {}): object {
  return { apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotClass', metadata: { name, labels }, driver: CSI_DRIVER, deletionPolicy: 'Delete', parameters };
}

function clusterObjects(): object[] {
  const storageClass = (name: string, parameters: Record<string, string> = {}): object => ({
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name },
    provisioner: CSI_DRIVER, reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate', parameters,
  });
  return [
    {
      apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: CSI_DRIVER },
      // No attacher runs: the kubelet publishes without a VolumeAttachment. fsGroup applies as on a disk.
      spec: { attachRequired: false, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'], fsGroupPolicy: 'File' },
    },
    storageClass(CSI_STORAGE_CLASS),
    storageClass(CSI_STORAGE_CLASS_B),
    storageClass(CSI_STORAGE_CLASS_EXT4, { [FILESYSTEM_PARAMETER]: 'ext4' }),
    snapshotClass(CSI_SNAPSHOT_CLASS, {}, { [VELERO_SNAPSHOT_CLASS_LABEL]: 'true' }),
    ...Object.values(CSI_KNOB_CLASSES).map((c) => snapshotClass(c.name, c.parameters)),
  ];
}

/** Mount points the kubelet asked the driver for (CSI volumes of pods), deepest first. */
function csiMounts(kubeletRoot: string): string[] {
  const pods = `${path.join(kubeletRoot, 'pods')}/`;
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' ') ?? '')
    .filter((m) => m.startsWith(pods) && m.includes('/volumes/kubernetes.io~csi/'))
    .sort((a, b) => b.length - a.length);
}

/**
 * Installs the snapshot CRDs and starts the driver and the sidecars as processes on the machine
 * (with the admin kubeconfig), then the CSIDriver, the StorageClasses and VolumeSnapshotClasses;
 * resolves once the kubelet has registered the driver on the node's CSINode.
 */
export async function startCsi(cluster: { cp: ControlPlane; node: RealNode }, log: (line: string) => void, binaries?: CsiBinaries): Promise<CsiStack> {
  const { cp, node } = cluster;
  const t0 = Date.now();
  const b = binaries ?? await ensureCsi(log);
  // node.ts runs the kubelet with --root-dir <workDir>/kubelet/root; plugins register under it.
  const kubeletRoot = path.join(node.workDir, 'kubelet', 'root');
  if (!fs.existsSync(path.join(kubeletRoot, 'plugins_registry'))) throw new Error(`the kubelet's plugin registry ${kubeletRoot}/plugins_registry does not exist: is the node's kubelet running?`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-csi-'));
  const root = path.join(work, 'data');
  const csiSock = path.join(kubeletRoot, 'plugins', CSI_DRIVER, 'csi.sock');
  const regSock = path.join(kubeletRoot, 'plugins_registry', `${CSI_DRIVER}-reg.sock`);
  const kubectl = (args: string[], input?: string): string => run(kubectlPath(), ['--kubeconfig', cp.kubeconfigPath, ...args], input);
  const started: { name: string; proc: Spawned; log: string }[] = [];
  const logs = (): string => started.map((s) => `--- ${s.name}\n${tail(s.log, 15)}`).join('\n');

  const stop = async (): Promise<string[]> => {
    const problems: string[] = [];
    // The driver last: the sidecars may still be calling it. SIGTERM makes it remove its sockets.
    for (const s of [...started].reverse()) await s.proc.stop(10_000);
    for (const m of csiMounts(kubeletRoot)) {
      const r = spawnSync('umount', [m], { encoding: 'utf8' });
      if (r.status !== 0) problems.push(`umount ${m}: ${r.stderr.trim()}`);
    }
    problems.push(...releaseLoopVolumes(root));
    for (const sock of [csiSock, regSock]) fs.rmSync(sock, { force: true });
    try {
      fs.rmSync(work, { recursive: true, force: true });
    } catch (e) {
      problems.push(`rm -r ${work}: ${(e as Error).message}`);
    }
    return problems;
  };

  try {
    kubectl(['apply', '--server-side', '-f', b.crdDir]);
    kubectl(['wait', '--for', 'condition=Established', '--timeout', '60s', '-f', b.crdDir]);
    const spawnLogged = (name: string, bin: string, args: string[]): Spawned => {
      const file = path.join(work, `${name}.log`);
      const proc = spawnTracked(bin, args, file);
      started.push({ name, proc, log: file });
      return proc;
    };
    const driver = spawnLogged('driver', b.driver, ['--driver-name', CSI_DRIVER, '--endpoint', csiSock, '--registration-socket', regSock, '--root', root, '--node-id', node.name]);
    const common = ['--kubeconfig', cp.kubeconfigPath, '--leader-election=false', '--kube-api-qps', '50', '--kube-api-burst', '100', '--v', '2'];
    // Retries capped at 10 s (default 5 min): a snapshot that becomes ready is seen within seconds.
    const retry = ['--retry-interval-max', '10s'];
    spawnLogged('csi-provisioner', b.provisioner, [...common, ...retry, '--csi-address', csiSock, '--timeout', '60s']);
    spawnLogged('csi-snapshotter', b.snapshotter, [...common, ...retry, '--csi-address', csiSock, '--timeout', '60s']);
    spawnLogged('snapshot-controller', b.snapshotController, [...common, ...retry]);
    kubectl(['apply', '--server-side', '-f', '-'], clusterObjects().map((o) => JSON.stringify(o)).join('\n---\n'));

    const kc = new k8s.KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const storage = kc.makeApiClient(k8s.StorageV1Api);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const dead = started.find((s) => s.proc.child.exitCode !== null);
      if (dead !== undefined) throw new Error(`${dead.name} exited (code ${dead.proc.child.exitCode}):\n${tail(dead.log, 15)}`);
      const csiNode = await storage.readCSINode({ name: node.name }).catch(() => undefined);
      // drivers is null (not []) until the first driver registers, whatever the type says.
      if ((csiNode?.spec.drivers as k8s.V1CSINodeDriver[] | null | undefined ?? []).some((d) => d.name === CSI_DRIVER && d.nodeID === node.name)) break;
      if (Date.now() > deadline) throw new Error(`the kubelet did not register ${CSI_DRIVER} on CSINode ${node.name} within 120 s:\n${logs()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    if (driver.child.exitCode !== null) throw new Error(`the driver exited after registering:\n${logs()}`);
    log(`=== csi: ${CSI_DRIVER} registered on ${node.name}; StorageClasses ${CSI_STORAGE_CLASS}, ${CSI_STORAGE_CLASS_B}; VolumeSnapshotClass ${CSI_SNAPSHOT_CLASS} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  } catch (err) {
    const left = await stop();
    throw new Error(`starting the CSI stack failed: ${(err as Error).message}${left.length > 0 ? `\n(and after stopping it: ${left.join('; ')})` : ''}`);
  }

  const snapshotPath = (handle: string, ext: string): string => {
    if (!SNAPSHOT_ID.test(handle)) throw new Error(`${handle} is not a snapshot handle of ${CSI_DRIVER}`);
    return path.join(root, 'snapshots', `${handle}${ext}`);
  };
  return {
    driver: CSI_DRIVER,
    root,
    volumeDir: (handle) => path.join(root, 'volumes', path.basename(handle)),
    snapshotExists: (handle) => fs.existsSync(snapshotPath(handle, '.tar')),
    makeUndeletable: (handle, message) => fs.writeFileSync(snapshotPath(handle, '.fail-delete'), message),
    makeDeletable: (handle) => fs.rmSync(snapshotPath(handle, '.fail-delete'), { force: true }),
    logs,
    stop,
  };
}

function tail(file: string, n: number): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}
