// Helpers for integration tests that talk to the real local apiserver.
import crypto from 'node:crypto';
import { inject } from 'vitest';
import * as k8s from '@kubernetes/client-node';

export function adminConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(inject('cluster').kubeconfigPath);
  return kc;
}

export function userConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(inject('cluster').userKubeconfigPath);
  return kc;
}

/** The kubeconfig of one of the test control plane's team users (alice, bob, carol: scripts/cluster/controlPlane.ts). */
export function teamUserKubeconfig(name: string): string {
  const user = inject('cluster').teamUsers.find((u) => u.name === name);
  if (user === undefined) throw new Error(`the test control plane has no team user ${name} (scripts/cluster/controlPlane.ts makes them)`);
  return user.kubeconfigPath;
}

/** A namespace name unique to this test run, so test files can share one control plane. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomBytes(3).toString('hex')}`;
}

export async function createNamespace(kc: k8s.KubeConfig, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Polls `check` until it returns a value other than undefined, or fails after timeoutMs. */
export async function waitUntil<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}
