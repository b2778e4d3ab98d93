// The admission webhook for a test server in requester mode: the server runs on the host, so the
// API server calls it by URL on a loopback port. Per server namespace: the namespace gets the
// kubernetes.io/metadata.name label (1.20 does not set it), and a MutatingWebhookConfiguration
// `stowage-<ns>` created as admin, which a restarted server of the namespace reuses (it publishes
// its own port and CA bundle into it; the most recently started server of a namespace is the one
// the API server calls). Configurations are deleted after the test file that made them.
import net from 'node:net';
import { afterAll } from 'vitest';
import { RESOURCES, newBackup } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION } from '../../src/auth/index.js';
import { CORE, isAlreadyExists, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { MUTATING_WEBHOOK_CONFIGURATIONS, webhookConfiguration } from '../../src/webhook/index.js';
import { waitUntil } from './kube.js';

const created = new Map<string, DynamicClient>();
// Top level on purpose: registered in every test file that starts a server (modules are
// evaluated per file), so its configurations go with it; runs after the file's own afterAll.
// Best effort: a file with a control plane of its own has stopped it by now, and that one's
// objects went with it.
afterAll(async () => {
  for (const [name, client] of created) {
    await client.withOutageTimeout(0).delete(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name).catch(() => undefined);
  }
  created.clear();
});

export const webhookConfigurationNameFor = (namespace: string): string => `stowage-${namespace}`;

/** A free loopback port (bound and released: the server binds it a moment later). */
export async function freeLoopbackPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/**
 * Labels the namespace and creates the configuration if it does not exist yet; returns the
 * server flags that make the server serve it on a fresh port.
 */
export async function prepareWebhook(admin: DynamicClient, namespace: string, name = webhookConfigurationNameFor(namespace)): Promise<string[]> {
  await admin.patch(CORE.namespaces, undefined, namespace, { metadata: { labels: { 'kubernetes.io/metadata.name': namespace } } }, 'merge');
  const port = await freeLoopbackPort();
  const url = `https://127.0.0.1:${port}/mutate`;
  try {
    await admin.create(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, webhookConfiguration({ name, namespace, clientConfig: { url } }));
    created.set(name, admin);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  return ['--webhook-address', `127.0.0.1:${port}`, '--webhook-url', url, '--webhook-configuration-name', name];
}

/**
 * Resolves once the API server calls the webhook for `namespace`: a dry-run Backup comes back
 * stamped. (The configuration change reaches the API server's webhook cache a moment after the
 * patch; a test creating objects right away would race it.)
 */
export async function waitForWebhook(admin: DynamicClient, namespace: string): Promise<void> {
  await waitUntil(`the API server calling the admission webhook for ${namespace}`, async () => {
    const probe = await admin.create<KubeObject>(RESOURCES.Backup, namespace, newBackup('webhook-probe', namespace, {}), { dryRun: true });
    return probe.metadata?.annotations?.[REQUESTER_ANNOTATION] !== undefined ? true : undefined;
  }, 30_000, 200);
}
