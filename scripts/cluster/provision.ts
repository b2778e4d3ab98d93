// Runs provision.sh (idempotent, cached) and turns its failure into one clear error.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { cacheDir } from './paths.js';

export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
}

export async function provision(dir = cacheDir()): Promise<Binaries> {
  const script = path.join(import.meta.dirname, 'provision.sh');
  let tail = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    // Progress lines go straight to stderr so a person watching the first build sees them.
    const child = spawn('bash', [script, dir], { stdio: ['ignore', 'inherit', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString()).slice(-2000);
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    const reason = /PROVISIONING FAILED: (.*)/.exec(tail)?.[1] ?? tail.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`local control plane provisioning failed (cache ${dir}): ${reason}`);
  }
  return {
    etcd: 'etcd',
    kubeApiserver: path.join(dir, 'bin', 'kube-apiserver'),
    kubeControllerManager: path.join(dir, 'bin', 'kube-controller-manager'),
  };
}
