// The admission webhook of test servers in requester mode (scripts/cluster/webhook.ts does the
// work); configurations the harness creates are deleted after the test file that made them.
import { afterAll } from 'vitest';
import type { DynamicClient } from '../../src/kube/index.js';
import { MUTATING_WEBHOOK_CONFIGURATIONS, type MutatingWebhookConfiguration } from '../../src/webhook/index.js';
import { prepareLocalWebhook, removeLocalWebhook, waitForLocalWebhook } from '../../scripts/cluster/webhook.js';

import { webhookConfigurationNameFor } from '../../scripts/cluster/webhook.js';

export { webhookConfigurationNameFor };

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

/** The server flags for the namespace's webhook, creating its configuration when missing. */
export async function prepareWebhook(admin: DynamicClient, namespace: string, name?: string): Promise<string[]> {
  const w = await prepareLocalWebhook(admin, namespace, name);
  if (w.created) created.set(w.name, admin);
  return w.args;
}

export const waitForWebhook = (admin: DynamicClient, namespace: string): Promise<void> => waitForLocalWebhook(admin, namespace);

/** No webhook for the namespace any more (a cluster-admin server serves none; or a test of what runs unstamped). */
export const removeWebhook = (admin: DynamicClient, namespace: string): Promise<void> => removeLocalWebhook(admin, namespace);

/**
 * Deletes the namespace's webhook configuration (as an operator might) and resolves once the API
 * server no longer calls it; the function returned puts it back as it was (the server's CA bundle
 * and URL in it) and resolves once the API server calls it again.
 */
export async function suspendWebhook(admin: DynamicClient, namespace: string, name = webhookConfigurationNameFor(namespace)): Promise<() => Promise<void>> {
  const saved = await admin.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
  await removeLocalWebhook(admin, namespace, name);
  return async () => {
    await admin.create(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, { ...saved, metadata: { name: saved.metadata.name, labels: saved.metadata.labels } });
    await waitForLocalWebhook(admin, namespace);
  };
}
