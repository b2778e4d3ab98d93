// A real etcd + kube-apiserver + kube-controller-manager (the release in paths.ts) on loopback, for
// tests, benchmarks and the demo. Each start gets a fresh etcd data directory; stop() leaves no
// process behind. Flags are kept as name → value maps so a variant (a real node) can override them.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawnTracked, type Spawned } from './procs.js';
import { provision, type Binaries } from './provision.js';

export interface ControlPlane {
  /** Kubeconfig authenticating as the admin (system:masters). */
  kubeconfigPath: string;
  /** Kubeconfig authenticating as the unprivileged user `tester` (no RBAC grants). */
  userKubeconfigPath: string;
  server: string;
  adminToken: string;
  userToken: string;
  /**
   * Team users for requester-rights tests, with no RBAC grants of their own (tests bind them):
   * alice in group team-a, bob in group team-b, carol in group team-c.
   */
  teamUsers: TeamUser[];
  /** Directory holding the service-account key, certificates and process logs. */
  workDir: string;
  /** Set in node mode: what scripts/node/node.ts needs to join a kubelet, kube-proxy and scheduler. */
  node?: NodeAccess;
  /** Stops kube-apiserver only (etcd keeps the data); see startApiserver. */
  stopApiserver(): Promise<void>;
  /** Starts kube-apiserver again on the same port and waits for /readyz. */
  startApiserver(): Promise<void>;
  stop(): Promise<void>;
}

export interface TeamUser {
  name: string;
  uid: string;
  groups: string[];
  token: string;
  kubeconfigPath: string;
}

const TEAM_USERS: readonly { name: string; groups: string[] }[] = [
  { name: 'alice', groups: ['team-a'] },
  { name: 'bob', groups: ['team-b'] },
  // Only test/auth/backupRights.test.ts grants carol rights (its backup of * must see no other file's).
  { name: 'carol', groups: ['team-c'] },
];

/**
 * Node mode: the apiserver listens on the machine's own address (pods reach it there, through the
 * `kubernetes` Service), the ServiceAccount admission plugin mounts tokens, the Node authorizer
 * admits a kubelet, and kcm's node lifecycle controller lifts the not-ready taint (real-node.md,
 * traps 3, 4, 10).
 */
export interface NodeMode {
  /** A non-loopback address of this machine (the kubelet rejects loopback node IPs). */
  ip: string;
  /** The Node's name; the kubelet authenticates as system:node:<nodeName>. */
  nodeName: string;
}

export interface NodeAccess extends NodeMode {
  /** PEM file of the apiserver's serving certificate, the CA in every kubeconfig below. */
  caFile: string;
  kubeletKubeconfig: string;
  proxyKubeconfig: string;
  schedulerKubeconfig: string;
}

/** Node mode's changes to apiserverFlags. */
export function nodeApiserverFlags(flags: Flags, node: NodeMode): Flags {
  const f = new Map(flags);
  f.set('bind-address', node.ip);
  f.set('advertise-address', node.ip);
  f.set('authorization-mode', 'Node,RBAC');
  f.delete('disable-admission-plugins');
  // The default (lease) reconciler keeps the `kubernetes` Service's endpoint at <ip>:<port>, which
  // is how pods reach the API server through kube-proxy.
  f.delete('endpoint-reconciler-type');
  // logs/exec dial the kubelet at the node's InternalIP (there is no DNS name for the node).
  f.set('kubelet-preferred-address-types', 'InternalIP');
  return f;
}

/**
 * Node mode's changes to controllerManagerFlags: the node lifecycle and taint controllers run, and
 * the PV binder, which hands claims to a CSI provisioner and binds them to its volumes (csi.ts).
 */
export function nodeControllerManagerFlags(flags: Flags): Flags {
  const f = new Map(flags);
  const keep = new Set(['-node-lifecycle-controller', '-taint-eviction-controller', '-persistentvolume-binder-controller']);
  f.set('controllers', (f.get('controllers') ?? '*').split(',').filter((c) => !keep.has(c)).join(','));
  return f;
}

export interface StartOptions {
  node?: NodeMode;
  /** Run kube-controller-manager (namespace deletion, GC, Deployments). Default true. */
  controllerManager?: boolean;
  /** Keep workDir after stop() (for debugging). Default false. */
  keepWorkDir?: boolean;
  readyTimeoutMs?: number;
  /**
   * etcd without fsync (--unsafe-no-fsync), for a control plane whose data is thrown away at the
   * end of the test (largeObjects writes 600 MiB): a crash may lose writes, which such a test never
   * reads again. Default false.
   */
  noFsync?: boolean;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function lastLines(file: string, n = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

/** GET a path on the apiserver with a bearer token; resolves the status code (0 on connection error). */
export function apiGet(server: string, token: string, p: string): Promise<number> {
  return new Promise((resolve) => {
    const req = https.get(
      `${server}${p}`,
      { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

async function waitFor(what: string, proc: Spawned, logFile: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void proc.exited.then((c) => (exitCode = c));
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`${what} exited (code ${exitCode}) during startup:\n${lastLines(logFile)}`);
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms:\n${lastLines(logFile)}`);
}

function kubeconfig(server: string, user: string, token: string, caFile: string | undefined): string {
  const cluster = caFile
    ? `    certificate-authority-data: ${fs.readFileSync(caFile).toString('base64')}\n`
    : '    insecure-skip-tls-verify: true\n';
  return `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: ${server}
${cluster}users:
- name: ${user}
  user:
    token: ${token}
contexts:
- name: ${user}@local
  context:
    cluster: local
    user: ${user}
current-context: ${user}@local
`;
}

/** Command-line flags as name → value, in order; `toArgs` renders them as `--name=value`. */
export type Flags = Map<string, string>;
export const toArgs = (flags: Flags): string[] => [...flags].map(([k, v]) => `--${k}=${v}`);

/** kube-apiserver on loopback with static tokens, RBAC, and no ServiceAccount admission (no pods run). */
export function apiserverFlags(o: { etcdPort: number; certDir: string; apiPort: number; saKey: string; tokenFile: string }): Flags {
  return new Map([
    ['etcd-servers', `http://127.0.0.1:${o.etcdPort}`],
    ['cert-dir', o.certDir],
    ['secure-port', String(o.apiPort)],
    ['bind-address', '127.0.0.1'],
    ['advertise-address', '127.0.0.1'],
    // A loopback advertise address is refused by the endpoint reconciler (1.3x); no pod dials the
    // `kubernetes` Service here, so its endpoints are not kept.
    ['endpoint-reconciler-type', 'none'],
    ['service-account-issuer', 'https://kubernetes.default.svc'],
    ['service-account-key-file', o.saKey],
    ['service-account-signing-key-file', o.saKey],
    ['token-auth-file', o.tokenFile],
    ['authorization-mode', 'RBAC'],
    ['service-cluster-ip-range', '10.0.0.0/24'],
    // Pod Security admission stays on (the default since 1.25): restores meet it as in a real cluster.
    ['disable-admission-plugins', 'ServiceAccount'],
    // As real clusters do (the default refuses privileged pods outright, before Pod Security decides).
    ['allow-privileged', 'true'],
    ['max-requests-inflight', '800'],
    ['max-mutating-requests-inflight', '400'],
    ['v', '0'],
  ]);
}

/**
 * kube-controller-manager for namespace deletion, garbage collection and workload controllers.
 * Controllers that need nodes, volumes or bootstrap tokens are off: no node runs here.
 */
export function controllerManagerFlags(o: { kubeconfigPath: string; saKey: string; caFile: string | undefined }): Flags {
  const off = [
    'node-ipam-controller', 'node-lifecycle-controller', 'taint-eviction-controller', 'persistentvolume-attach-detach-controller',
    'persistentvolume-binder-controller', 'persistentvolume-expander-controller', 'ttl-controller',
    'bootstrap-signer-controller', 'token-cleaner-controller',
  ];
  const flags: Flags = new Map([
    ['kubeconfig', o.kubeconfigPath],
    ['service-account-private-key-file', o.saKey],
    ['leader-elect', 'false'],
    // No serving port: nothing scrapes it, and a fixed port would clash between parallel runs.
    ['secure-port', '0'],
    ['controllers', ['*', ...off.map((c) => `-${c}`)].join(',')],
    ['kube-api-qps', '200'],
    ['kube-api-burst', '400'],
    ['concurrent-namespace-syncs', '10'],
    ['concurrent-gc-syncs', '20'],
    ['v', '0'],
  ]);
  if (o.caFile !== undefined) flags.set('root-ca-file', o.caFile);
  return flags;
}

export async function startControlPlane(opts: StartOptions = {}): Promise<ControlPlane> {
  const bins: Binaries = await provision();
  const readyTimeout = opts.readyTimeoutMs ?? 60_000;
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-cp-'));
  const started: Spawned[] = [];
  try {
    const etcdPort = await freePort();
    const peerPort = await freePort();
    const apiPort = await freePort();
    const etcdLog = path.join(workDir, 'etcd.log');
    const etcd = spawnTracked(bins.etcd, [
      '--data-dir', path.join(workDir, 'etcd-data'),
      '--listen-client-urls', `http://127.0.0.1:${etcdPort}`,
      '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-cluster', `default=http://127.0.0.1:${peerPort}`,
      '--log-level', 'warn', '--logger', 'zap',
      '--quota-backend-bytes', String(8 * 1024 ** 3),
      ...(opts.noFsync === true ? ['--unsafe-no-fsync'] : []),
    ], etcdLog);
    started.push(etcd);
    await waitFor('etcd', etcd, etcdLog, readyTimeout, () =>
      new Promise((resolve) => {
        const s = net.connect(etcdPort, '127.0.0.1', () => { s.end(); resolve(true); });
        s.on('error', () => resolve(false));
      }));

    const saKey = path.join(workDir, 'sa.key');
    execFileSync('openssl', ['genrsa', '-out', saKey, '2048'], { stdio: 'ignore' });
    const adminToken = crypto.randomBytes(24).toString('hex');
    const userToken = crypto.randomBytes(24).toString('hex');
    const nodeTokens = { kubelet: crypto.randomBytes(24).toString('hex'), proxy: crypto.randomBytes(24).toString('hex'), scheduler: crypto.randomBytes(24).toString('hex') };
    const node = opts.node;
    // Users the bootstrap RBAC policy already binds: system:nodes (with the Node authorizer),
    // system:kube-proxy (system:node-proxier) and system:kube-scheduler.
    const nodeLines = node === undefined ? '' : `${nodeTokens.kubelet},system:node:${node.nodeName},system:node:${node.nodeName},system:nodes\n${nodeTokens.proxy},system:kube-proxy,system:kube-proxy\n${nodeTokens.scheduler},system:kube-scheduler,system:kube-scheduler\n`;
    const team = TEAM_USERS.map((u) => ({ ...u, uid: `${u.name}-uid`, token: crypto.randomBytes(24).toString('hex'), kubeconfigPath: path.join(workDir, `${u.name}.kubeconfig`) }));
    // token,user,uid,"group1,group2"
    fs.writeFileSync(path.join(workDir, 'tokens.csv'),
      `${adminToken},admin,admin,system:masters\n${userToken},tester,tester\n${nodeLines}${team.map((u) => `${u.token},${u.name},${u.uid},"${u.groups.join(',')}"\n`).join('')}`, { mode: 0o600 });
    const certDir = path.join(workDir, 'certs');
    const server = `https://${node?.ip ?? '127.0.0.1'}:${apiPort}`;
    const apiLog = path.join(workDir, 'kube-apiserver.log');
    const apiFlags = apiserverFlags({ etcdPort, certDir, apiPort, saKey, tokenFile: path.join(workDir, 'tokens.csv') });
    const apiArgs = toArgs(node === undefined ? apiFlags : nodeApiserverFlags(apiFlags, node));
    let apiserver: Spawned | undefined;
    const startApiserver = async (): Promise<void> => {
      apiserver = spawnTracked(bins.kubeApiserver, apiArgs, apiLog);
      started.push(apiserver);
      const proc = apiserver;
      await waitFor('kube-apiserver', proc, apiLog, readyTimeout, async () => (await apiGet(server, adminToken, '/readyz')) === 200);
    };
    await startApiserver();

    const certFile = path.join(certDir, 'apiserver.crt');
    const caFile = fs.existsSync(certFile) ? certFile : undefined;
    const kubeconfigPath = path.join(workDir, 'admin.kubeconfig');
    const userKubeconfigPath = path.join(workDir, 'user.kubeconfig');
    fs.writeFileSync(kubeconfigPath, kubeconfig(server, 'admin', adminToken, caFile), { mode: 0o600 });
    fs.writeFileSync(userKubeconfigPath, kubeconfig(server, 'tester', userToken, caFile), { mode: 0o600 });
    for (const u of team) fs.writeFileSync(u.kubeconfigPath, kubeconfig(server, u.name, u.token, caFile), { mode: 0o600 });

    if (opts.controllerManager !== false) {
      const kcmLog = path.join(workDir, 'kube-controller-manager.log');
      const kcmFlags = controllerManagerFlags({ kubeconfigPath, saKey, caFile });
      const kcm = spawnTracked(bins.kubeControllerManager, toArgs(node === undefined ? kcmFlags : nodeControllerManagerFlags(kcmFlags)), kcmLog);
      started.push(kcm);
      // Its controllers run once it publishes the root CA into kube-system (or it dies: bad flags).
      await waitFor('kube-controller-manager', kcm, kcmLog, readyTimeout, async () =>
        (await apiGet(server, adminToken, '/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt')) === 200);
    }

    let nodeAccess: NodeAccess | undefined;
    if (node !== undefined) {
      if (caFile === undefined) throw new Error(`node mode needs the apiserver's self-signed certificate at ${certFile}`);
      const write = (who: string, user: string, token: string): string => {
        const file = path.join(workDir, `${who}.kubeconfig`);
        fs.writeFileSync(file, kubeconfig(server, user, token, caFile), { mode: 0o600 });
        return file;
      };
      nodeAccess = {
        ...node,
        caFile,
        kubeletKubeconfig: write('kubelet', `system:node:${node.nodeName}`, nodeTokens.kubelet),
        proxyKubeconfig: write('kube-proxy', 'system:kube-proxy', nodeTokens.proxy),
        schedulerKubeconfig: write('kube-scheduler', 'system:kube-scheduler', nodeTokens.scheduler),
      };
    }

    let stopped = false;
    return {
      node: nodeAccess,
      kubeconfigPath,
      userKubeconfigPath,
      server,
      adminToken,
      userToken,
      teamUsers: team,
      workDir,
      stopApiserver: async () => {
        await apiserver?.stop();
      },
      startApiserver,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        for (const p of [...started].reverse()) await p.stop();
        if (!opts.keepWorkDir) fs.rmSync(workDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    for (const p of [...started].reverse()) await p.stop(1000);
    const keep = path.join(os.tmpdir(), `stowage-cp-failed-${Date.now()}`);
    try { fs.renameSync(workDir, keep); } catch { /* nothing to keep */ }
    throw err;
  }
}
