// A real etcd + kube-apiserver + kube-controller-manager on loopback, for tests, benchmarks and
// the demo. Each start gets a fresh etcd data directory; stop() leaves no process behind.
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
 * admits a kubelet, and kcm's nodelifecycle lifts the not-ready taint (real-node.md, traps 3, 4, 10).
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

export interface StartOptions {
  node?: NodeMode;
  /** Run kube-controller-manager (namespace deletion, GC, Deployments). Default true. */
  controllerManager?: boolean;
  /** Keep workDir after stop() (for debugging). Default false. */
  keepWorkDir?: boolean;
  readyTimeoutMs?: number;
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
    // The users the bootstrap RBAC policy already binds: system:nodes (with the Node authorizer),
    // system:kube-proxy (system:node-proxier) and system:kube-scheduler.
    const nodeLines = node === undefined ? '' : `${nodeTokens.kubelet},system:node:${node.nodeName},system:node:${node.nodeName},system:nodes\n${nodeTokens.proxy},system:kube-proxy,system:kube-proxy\n${nodeTokens.scheduler},system:kube-scheduler,system:kube-scheduler\n`;
    const team = TEAM_USERS.map((u) => ({ ...u, uid: `${u.name}-uid`, token: crypto.randomBytes(24).toString('hex'), kubeconfigPath: path.join(workDir, `${u.name}.kubeconfig`) }));
    // token,user,uid,"group1,group2"
    fs.writeFileSync(path.join(workDir, 'tokens.csv'),
      `${adminToken},admin,admin,system:masters\n${userToken},tester,tester\n${nodeLines}${team.map((u) => `${u.token},${u.name},${u.uid},"${u.groups.join(',')}"\n`).join('')}`, { mode: 0o600 });
    const certDir = path.join(workDir, 'certs');
    const host = node?.ip ?? '127.0.0.1';
    const server = `https://${host}:${apiPort}`;
    const apiLog = path.join(workDir, 'kube-apiserver.log');
    const apiArgs = [
      '--etcd-servers', `http://127.0.0.1:${etcdPort}`,
      '--cert-dir', certDir,
      '--secure-port', String(apiPort),
      '--bind-address', host,
      '--advertise-address', host,
      '--service-account-issuer', 'https://kubernetes.default.svc',
      '--service-account-key-file', saKey,
      '--service-account-signing-key-file', saKey,
      '--token-auth-file', path.join(workDir, 'tokens.csv'),
      '--service-cluster-ip-range', '10.0.0.0/24',
      ...(node === undefined
        ? ['--authorization-mode', 'RBAC', '--disable-admission-plugins', 'ServiceAccount']
        // logs/exec dial the kubelet at the node's InternalIP (no DNS name for the node here).
        : ['--authorization-mode', 'Node,RBAC', '--kubelet-preferred-address-types', 'InternalIP']),
      '--max-requests-inflight', '800',
      '--max-mutating-requests-inflight', '400',
      '-v', '0',
    ];
    let apiserver: Spawned | undefined;
    const startApiserver = async (): Promise<void> => {
      apiserver = spawnTracked(bins.kubeApiserver, apiArgs, apiLog);
      started.push(apiserver);
      const proc = apiserver;
      await waitFor('kube-apiserver', proc, apiLog, readyTimeout, async () => (await apiGet(server, adminToken, '/readyz')) === 200);
    };
    await startApiserver();

    const caFile = path.join(certDir, 'apiserver.crt');
    const kubeconfigPath = path.join(workDir, 'admin.kubeconfig');
    const userKubeconfigPath = path.join(workDir, 'user.kubeconfig');
    fs.writeFileSync(kubeconfigPath, kubeconfig(server, 'admin', adminToken, fs.existsSync(caFile) ? caFile : undefined), { mode: 0o600 });
    fs.writeFileSync(userKubeconfigPath, kubeconfig(server, 'tester', userToken, fs.existsSync(caFile) ? caFile : undefined), { mode: 0o600 });
    for (const u of team) fs.writeFileSync(u.kubeconfigPath, kubeconfig(server, u.name, u.token, fs.existsSync(caFile) ? caFile : undefined), { mode: 0o600 });

    if (opts.controllerManager !== false) {
      const kcmLog = path.join(workDir, 'kube-controller-manager.log');
      const kcm = spawnTracked(bins.kubeControllerManager, [
        '--kubeconfig', kubeconfigPath,
        '--service-account-private-key-file', saKey,
        '--root-ca-file', fs.existsSync(caFile) ? caFile : '',
        '--leader-elect=false', '--port', '0', '--secure-port', '0',
        '--controllers', `*,-nodeipam,${node === undefined ? '-nodelifecycle,' : ''}-attachdetach,-persistentvolume-binder,-persistentvolume-expander,-cloud-node-lifecycle,-route,-service,-ttl,-bootstrapsigner,-tokencleaner`,
        '--kube-api-qps', '200', '--kube-api-burst', '400',
        '--concurrent-namespace-syncs', '10', '--concurrent-gc-syncs', '20',
        '-v', '0',
      ].filter((a) => a !== ''), kcmLog);
      started.push(kcm);
      // Fail fast if it dies at once (bad flags, bad kubeconfig).
      await new Promise((r) => setTimeout(r, 500));
      if (kcm.child.exitCode !== null) throw new Error(`kube-controller-manager exited at start:\n${lastLines(kcmLog)}`);
    }

    let nodeAccess: NodeAccess | undefined;
    if (node !== undefined) {
      if (!fs.existsSync(caFile)) throw new Error(`node mode needs the apiserver's self-signed certificate at ${caFile}`);
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
