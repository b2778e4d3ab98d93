// The identity test servers run as: by default the deployed ServiceAccount `stowage` of their
// namespace with exactly the generated RBAC of their trust mode (src/rbac/rules.ts through
// deploy/), using its real token, so every scenario that starts a server proves those rules
// suffice. Bindings the harness made go after the test file that made them.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll } from 'vitest';
import type { TrustMode } from '../../src/config/index.js';
import { loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { installServerIdentity, type ServerIdentity } from '../deploy/manifests.js';

const installed = new Map<string, ServerIdentity>();
// Top level on purpose, as in webhook.ts: registered in every file that starts a server.
afterAll(async () => {
  for (const identity of installed.values()) await identity.remove().catch(() => undefined);
  installed.clear();
});

/**
 * A kubeconfig for the ServiceAccount of `namespace` with `mode`'s rules, written into `dir`.
 * STOWAGE_TEST_SERVER_IDENTITY=kubeconfig runs servers with the test's own kubeconfig instead
 * (to tell a rule problem from a code problem).
 */
export async function serviceAccountKubeconfig(
  admin: DynamicClient, adminKubeconfigPath: string, namespace: string, mode: TrustMode, dir: string, webhookConfigurationName: string,
): Promise<string | undefined> {
  if (process.env.STOWAGE_TEST_SERVER_IDENTITY === 'kubeconfig') return undefined;
  const key = `${admin.server}/${namespace}/${mode}/${webhookConfigurationName}`;
  const kubeconfigPath = path.join(dir, `serviceaccount-${mode}.kubeconfig`);
  const known = installed.get(key);
  if (known !== undefined && fs.existsSync(known.kubeconfigPath)) return known.kubeconfigPath;
  const identity = await installServerIdentity(admin, loadKubeConfig(adminKubeconfigPath), { namespace, trustMode: mode, kubeconfigPath, webhookConfigurationName });
  installed.set(key, identity);
  return identity.kubeconfigPath;
}
