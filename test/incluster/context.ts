// What every real-node suite shares. The real node is one per machine (scripts/node/hostLock.ts),
// so all suites that need pods run in the one file test/incluster/node.test.ts, on the one cluster
// its beforeAll starts: a feature suite is a function that registers its describe blocks, called
// from that file (see the list before its teardown), and reads the cluster from inCluster().
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import type { CsiStack } from '../../scripts/node/csi.js';
import { BUSYBOX_IMAGE, kubectlPath } from '../../scripts/node/node.js';
import type { RealCluster } from '../../scripts/node/realCluster.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { ensureBuilt } from '../cli/helpers.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, testClient } from '../support/server.js';

export interface InCluster {
  cluster: RealCluster;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
}

let current: InCluster | undefined;

export function setInCluster(value: InCluster | undefined): void {
  current = value;
}

/** The running real cluster; throws when a suite runs outside test/incluster/node.test.ts. */
export function inCluster(): InCluster {
  if (current === undefined) throw new Error('the real cluster is not running: real-node suites run from test/incluster/node.test.ts, whose beforeAll starts it');
  return current;
}

export const log = (l: string): void => void process.stderr.write(`[incluster] ${l}\n`);

/** Seconds each step took, printed at the end for the note. */
export const timings: string[] = [];
export const timed = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    timings.push(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  }
};

export function kubectl(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(kubectlPath(), ['--kubeconfig', inCluster().cluster.cp.kubeconfigPath, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function kubectlOk(args: string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (exit ${r.status}): ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * kubectl without blocking this process: an in-process server serves the admission webhook from it,
 * so a synchronous kubectl that creates a Stowage object (or waits long) would stall the server.
 */
export function kubectlAsync(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectlPath(), ['--kubeconfig', inCluster().cluster.cp.kubeconfigPath, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')} failed (exit ${code}): ${err.trim()}`))));
    child.stdin.end(input ?? '');
  });
}

/** The cluster's CSI stack (scripts/node/csi.ts); throws when the cluster was started without it. */
export function csiStack(): CsiStack {
  const stack = inCluster().cluster.csi;
  if (stack === undefined) throw new Error('the real cluster was started without its CSI stack (startRealCluster({ csi: true }))');
  return stack;
}

/** Waits for claim `namespace/name` to be Bound, and returns it; the CSI driver's logs are in the failure if it never is. */
export async function claimBound(namespace: string, name: string): Promise<k8s.V1PersistentVolumeClaim> {
  const { core } = inCluster();
  return waitUntil(`PVC ${namespace}/${name} Bound`, async () => {
    const c = await core.readNamespacedPersistentVolumeClaim({ namespace, name });
    return c.status?.phase === 'Bound' ? c : undefined;
  }, 120_000, 250).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${inCluster().cluster.csi?.logs() ?? ''}`);
  });
}

/** Waits for exactly `count` Ready, not-deleting pods matching `selector` in `ns`. */
export async function podReady(ns: string, selector: string, count: number): Promise<k8s.V1Pod[]> {
  const { core } = inCluster();
  return waitUntil(`${count} Ready pod(s) ${selector} in ${ns}`, async () => {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items
      .filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return pods.length === count ? pods : undefined;
  }, 300_000, 500);
}

/** A busybox container that idles until SIGTERM, then ends at once; `mounts` are its volume mounts. */
export function idleContainer(name: string, mounts: k8s.V1VolumeMount[] = []): k8s.V1Container {
  return {
    name, image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'],
    ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
  };
}

/** A suite's Stowage: its namespace and filesystem location at once, its server and the admin's client once the suite's beforeAll has run. */
export interface SuiteStowage {
  readonly namespace: string;
  readonly location: ReturnType<typeof filesystemLocation>;
  readonly server: InProcessServer;
  readonly client: DynamicClient;
}

/**
 * Stowage's whole server in process (trust mode requester, its own ServiceAccount with the
 * generated RBAC) against the real cluster, for the describe block it is called in: a beforeAll
 * starts it in a new namespace `<prefix>-...` with a filesystem location, an afterAll stops it and
 * removes the namespace and the location's directory. `args`: the server's own flags.
 */
export function suiteStowage(prefix: string, args: string[] = []): SuiteStowage {
  const location = filesystemLocation();
  let server: InProcessServer | undefined;
  let client: DynamicClient | undefined;
  const stowage: SuiteStowage = {
    namespace: uniqueName(prefix),
    location,
    get server(): InProcessServer {
      if (server === undefined) throw new Error(`the ${prefix} server has not started (its beforeAll failed or has not run)`);
      return server;
    },
    get client(): DynamicClient {
      if (client === undefined) throw new Error(`the ${prefix} suite's client is made in its beforeAll, which has not run`);
      return client;
    },
  };
  beforeAll(async () => {
    const kubeconfigPath = inCluster().cluster.cp.kubeconfigPath;
    client = testClient(kubeconfigPath);
    // dist/ holds what the server starts its built-in plugins from (`stowage run-plugins`), and the CLI.
    await timed(`${prefix}: build dist`, () => ensureBuilt());
    server = await timed(`${prefix}: in-process server (requester mode) on the real cluster`, () => startInProcessServer({
      kubeconfigPath, namespace: stowage.namespace, location: { name: location.name, spec: location.spec }, args,
    }));
  }, 600_000);
  afterAll(async () => {
    await server?.stop();
    kubectl(['delete', 'namespace', stowage.namespace, '--wait=false']);
    fs.rmSync(location.root, { recursive: true, force: true });
  }, 120_000);
  return stowage;
}
