// The admission webhook for a `stowage server` running on this host against the local control
// plane (tests, the demo, the benchmark): the API server calls it by URL on a loopback port.
// Per server namespace: a MutatingWebhookConfiguration `stowage-<ns>` (it selects the namespace by
// the kubernetes.io/metadata.name label the API server sets), created as admin, which a restarted
// server of the namespace reuses (it publishes its own port and CA bundle into it; the most
// recently started server of a namespace is the one the API server calls).
import net from 'node:net';
import { RESOURCES, newBackup } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION } from '../../src/auth/index.js';
import { isAlreadyExists, isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { MUTATING_WEBHOOK_CONFIGURATIONS, webhookConfiguration } from '../../src/webhook/index.js';
import { errorMessage } from '../../src/util/errors.js';

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

export interface LocalWebhook {
  /** The server flags that make it serve the webhook on a fresh port. */
  args: string[];
  name: string;
  /** Whether this call created the configuration (the caller deletes it when done). */
  created: boolean;
}

/** Creates the configuration if it does not exist yet. */
export async function prepareLocalWebhook(admin: DynamicClient, namespace: string, name = webhookConfigurationNameFor(namespace)): Promise<LocalWebhook> {
  const port = await freeLoopbackPort();
  const url = `https://127.0.0.1:${port}/mutate`;
  let created = false;
  try {
    await admin.create(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, webhookConfiguration({ name, namespace, clientConfig: { url } }));
    created = true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  return { name, created, args: ['--webhook-address', `127.0.0.1:${port}`, '--webhook-url', url, '--webhook-configuration-name', name] };
}

/**
 * Resolves once the API server calls the webhook for `namespace`: a dry-run Backup comes back
 * stamped. (A configuration change reaches the API server's webhook cache a moment after the
 * patch; creating objects right away would race it.)
 */
export async function waitForLocalWebhook(admin: DynamicClient, namespace: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'the dry-run Backup came back without a stamp';
  while (Date.now() < deadline) {
    try {
      const probe = await admin.create<KubeObject>(RESOURCES.Backup, namespace, newBackup('webhook-probe', namespace, {}), { dryRun: true });
      if (probe.metadata?.annotations?.[REQUESTER_ANNOTATION] !== undefined) return;
      last = 'the dry-run Backup came back without a stamp';
    } catch (err) {
      last = errorMessage(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the API server did not call the admission webhook for ${namespace} within ${timeoutMs} ms: ${last}`);
}

/**
 * Takes the namespace out of the webhook's scope (its configuration goes) and resolves once the API server no longer calls it: for a server in trust mode cluster-admin,
 * which serves no webhook, in a namespace a requester-mode server used before.
 */
export async function removeLocalWebhook(admin: DynamicClient, namespace: string, name = webhookConfigurationNameFor(namespace), timeoutMs = 30_000): Promise<void> {
  await admin.delete(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name).catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const probe = await admin.create<KubeObject>(RESOURCES.Backup, namespace, newBackup('webhook-probe', namespace, {}), { dryRun: true });
      if (probe.metadata?.annotations?.[REQUESTER_ANNOTATION] === undefined) return;
      last = 'the dry-run Backup still came back stamped';
    } catch (err) {
      last = errorMessage(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the API server still calls the admission webhook for ${namespace} after ${timeoutMs} ms: ${last}`);
}
