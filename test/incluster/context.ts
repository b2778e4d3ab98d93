// What every real-node suite shares. The real node is one per machine (scripts/node/hostLock.ts),
// so all suites that need pods run in the one file test/incluster/node.test.ts, on the one cluster
// its beforeAll starts: a feature suite is a function that registers its describe blocks, called
// from that file (see the list before its teardown), and reads the cluster from inCluster().
import { spawnSync } from 'node:child_process';
import type * as k8s from '@kubernetes/client-node';
import { kubectlPath } from '../../scripts/node/node.js';
import type { RealCluster } from '../../scripts/node/realCluster.js';
import { waitUntil } from '../support/kube.js';

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

/** Waits for exactly `count` Ready, not-deleting pods matching `selector` in `ns`. */
export async function podReady(ns: string, selector: string, count: number): Promise<k8s.V1Pod[]> {
  const { core } = inCluster();
  return waitUntil(`${count} Ready pod(s) ${selector} in ${ns}`, async () => {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items
      .filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return pods.length === count ? pods : undefined;
  }, 300_000, 500);
}
