// Runs provision.sh (idempotent, cached) and turns its failure into one clear error.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { K8S_VERSION, cacheRoot } from './paths.js';

export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubelet: string;
  kubeProxy: string;
  kubectl: string;
}

/** Builds (once) and returns the binaries of `version` under `root`/k8s-v<version>/bin. */
export async function provision(root = cacheRoot(), version = K8S_VERSION): Promise<Binaries> {
  const script = path.join(import.meta.dirname, 'provision.sh');
  let tail = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    // Progress lines go straight to stderr so a person watching the first build sees them.
    const child = spawn('bash', [script, root, version], { stdio: ['ignore', 'inherit', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString()).slice(-4000);
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    const reason = /PROVISIONING FAILED: (.*)/.exec(tail)?.[1] ?? tail.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`local control plane provisioning failed (cache ${root}): ${reason}`);
  }
  const bin = (name: string): string => path.join(root, `k8s-v${version}`, 'bin', name);
  return {
    etcd: bin('etcd'),
    kubeApiserver: bin('kube-apiserver'),
    kubeControllerManager: bin('kube-controller-manager'),
    kubeScheduler: bin('kube-scheduler'),
    kubelet: bin('kubelet'),
    kubeProxy: bin('kube-proxy'),
    kubectl: bin('kubectl'),
  };
}
