// The MutatingWebhookConfiguration that sends creates and updates of the stamped kinds in the
// server namespace to this server, and the start-up step that puts the CA bundle into it. The
// server never creates the configuration (deploy/, the chart or the test harness do, with
// webhookConfiguration() below): its RBAC has only get and patch on that one name.
import { GROUP } from '../apis/v1/index.js';
import { isInvalid, isNotFound, type DynamicClient, type ResourceRef } from '../kube/index.js';
import { STAMPED_RESOURCES } from './admission.js';

export const MUTATING_WEBHOOK_CONFIGURATIONS = {
  group: 'admissionregistration.k8s.io', version: 'v1', resource: 'mutatingwebhookconfigurations', namespaced: false,
} as const satisfies ResourceRef;

export const WEBHOOK_NAME = 'requester.stowage.dev';
export const WEBHOOK_SERVICE_NAME = 'stowage-webhook';
export const WEBHOOK_PATH = '/mutate';

export type ClientConfig =
  | { url: string; caBundle?: string }
  | { service: { namespace: string; name: string; path?: string; port?: number }; caBundle?: string };

export interface MutatingWebhookConfiguration {
  apiVersion: 'admissionregistration.k8s.io/v1';
  kind: 'MutatingWebhookConfiguration';
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string> };
  webhooks?: Array<{ name: string; clientConfig: ClientConfig } & Record<string, unknown>>;
}

/** The Service clientConfig deploy/ and the chart use. */
export const serviceClientConfig = (namespace: string): ClientConfig => ({ service: { namespace, name: WEBHOOK_SERVICE_NAME, path: WEBHOOK_PATH, port: 443 } });

/**
 * The configuration for a server in `namespace`: one webhook, for the five stamped kinds (not
 * their status), in that namespace only, failing closed: when the server cannot be reached,
 * nothing of these kinds is created unstamped.
 */
export function webhookConfiguration(o: { name: string; namespace: string; clientConfig: ClientConfig }): MutatingWebhookConfiguration {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: o.name, labels: { 'app.kubernetes.io/name': 'stowage', 'app.kubernetes.io/component': 'webhook' } },
    webhooks: [{
      name: WEBHOOK_NAME,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      matchPolicy: 'Equivalent',
      // Kubernetes 1.21+ labels every namespace with its name; older clusters need the label set.
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': o.namespace } },
      rules: [{
        apiGroups: [GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'],
        resources: [...STAMPED_RESOURCES.keys()], scope: 'Namespaced',
      }],
      clientConfig: o.clientConfig,
    }],
  };
}

/** The configuration named `name`, or a start-up error with the fix. */
export async function readWebhookConfiguration(client: DynamicClient, name: string): Promise<MutatingWebhookConfiguration> {
  try {
    return await client.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
  } catch (err) {
    if (isNotFound(err)) {
      throw new Error(`the MutatingWebhookConfiguration ${name} does not exist; install it first (kubectl apply -f deploy/, or the chart), or name another with --webhook-configuration-name`, { cause: err });
    }
    throw err;
  }
}

/** The Service the configuration's webhooks call, when they call one. */
export function serviceOf(cfg: MutatingWebhookConfiguration): { name: string; namespace: string } | undefined {
  for (const w of cfg.webhooks ?? []) {
    if ('service' in w.clientConfig) return { name: w.clientConfig.service.name, namespace: w.clientConfig.service.namespace };
  }
  return undefined;
}

/**
 * Puts `caBundle` (PEM) into every webhook of configuration `name`, and `url` too when given
 * (a server outside the cluster). A patch is sent only when something differs, so replicas and
 * restarts with the same certificate leave the object alone.
 */
export async function publishCaBundle(client: DynamicClient, name: string, caBundle: string, url?: string): Promise<{ changed: boolean }> {
  const encoded = Buffer.from(caBundle, 'utf8').toString('base64');
  for (let attempt = 0; ; attempt++) {
    const cfg = await readWebhookConfiguration(client, name);
    const webhooks = cfg.webhooks ?? [];
    if (webhooks.length === 0) throw new Error(`the MutatingWebhookConfiguration ${name} has no webhooks; reinstall it (kubectl apply -f deploy/)`);
    const ops: unknown[] = [];
    webhooks.forEach((w, i) => {
      const cc = w.clientConfig as { url?: string; service?: unknown; caBundle?: string };
      const want = url !== undefined && url !== '';
      if (cc.caBundle === encoded && (!want || (cc.url === url && cc.service === undefined))) return;
      // The test pins the index to the webhook it was read as, should the list change meanwhile.
      ops.push({ op: 'test', path: `/webhooks/${i}/name`, value: w.name });
      ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: encoded });
      if (want) {
        if (cc.service !== undefined) ops.push({ op: 'remove', path: `/webhooks/${i}/clientConfig/service` });
        ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/url`, value: url });
      }
    });
    if (ops.length === 0) return { changed: false };
    try {
      await client.patch(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name, ops, 'json');
      return { changed: true };
    } catch (err) {
      // A failed test (the list changed under us) is a 422; read again once or twice.
      if (attempt < 2 && isInvalid(err)) continue;
      throw err;
    }
  }
}
