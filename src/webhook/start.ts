// Start-up of the admission webhook on every replica (followers serve admission too): read the
// configuration (to learn the Service the API server calls), settle the TLS identity in its
// Secret, serve, then publish the CA bundle. Any failure is a start-up error with its reason.
// From then on the certificate is renewed while the server runs (renewal.ts).
import type winston from 'winston';
import { createAccessReviewer } from '../auth/index.js';
import type { DynamicClient } from '../kube/index.js';
import { systemClock, type TimerClock } from '../util/clock.js';
import type { MayImpersonate } from './admission.js';
import { DEFAULT_LIFETIME_MS, ensureTlsIdentity, servingNames, tlsSecretName } from './certs.js';
import { startCertificateRenewal } from './renewal.js';
import { publishCaBundle, readWebhookConfiguration, serviceOf } from './configuration.js';
import { startWebhookServer, type WebhookServer } from './server.js';

export interface AdmissionWebhookOptions {
  /** The server's own client; its requests should not wait out API outages (admission has 10 s). */
  client: DynamicClient;
  namespace: string;
  address: string;
  /** --webhook-url; '' when the configuration names a Service. */
  url: string;
  configurationName: string;
  /** --webhook-certificate-lifetime. */
  certificateLifetimeMs?: number;
  logger: winston.Logger;
  /** The server's clock: certificates are stamped, renewed and switched on its time. */
  clock?: TimerClock;
}

export interface AdmissionWebhook extends WebhookServer {
  /** When the certificate served now expires (ms since the epoch), for the expiry metric. */
  certificateExpiry(): number;
  /** The key stamps are sealed with (auth/seal.ts), from the TLS Secret: the controllers check seals with it. */
  readonly sealKey: Buffer;
}

/** Asks the API server whether the admission request's user may impersonate what a stamp names. */
export const impersonationReviewer = (client: DynamicClient): MayImpersonate =>
  async (user, access) => (await createAccessReviewer(client, user).review(access)).allowed;

export async function startAdmissionWebhook(o: AdmissionWebhookOptions): Promise<AdmissionWebhook> {
  const lifetimeMs = o.certificateLifetimeMs ?? DEFAULT_LIFETIME_MS;
  const cfg = await readWebhookConfiguration(o.client, o.configurationName);
  const service = o.url === '' ? serviceOf(cfg) : undefined;
  const names = servingNames({ ...(service !== undefined ? { service } : {}), url: o.url });
  const secretName = tlsSecretName(o.configurationName);
  const clock = o.clock ?? systemClock;
  const id = await ensureTlsIdentity(o.client, o.namespace, secretName, names, () => clock.now(), lifetimeMs);
  o.logger.info(
    id.origin === 'reused' ? `admission webhook certificate: reusing the one in Secret ${o.namespace}/${secretName}`
      : `admission webhook certificate: replaced the one in Secret ${o.namespace}/${secretName} (${id.replacedBecause ?? ''}) with one for ${names.join(', ')}`,
  );
  const server = await startWebhookServer({ address: o.address, identity: id, mayImpersonate: impersonationReviewer(o.client), sealer: { key: id.sealKey, now: () => new Date() }, logger: o.logger });
  try {
    await publishCaBundle(o.client, o.configurationName, id.caBundle, o.url === '' ? undefined : o.url);
  } catch (err) {
    await server.close();
    throw err;
  }
  o.logger.info(`admission webhook serving on ${server.host}:${server.port}, CA bundle published to MutatingWebhookConfiguration ${o.configurationName}`);
  const renewal = startCertificateRenewal({
    client: o.client, namespace: o.namespace, secretName, names, configurationName: o.configurationName, url: o.url, lifetimeMs,
    serving: id, serve: (next) => server.setIdentity(next), logger: o.logger, clock,
  });
  return {
    host: server.host,
    port: server.port,
    setIdentity: (next) => server.setIdentity(next),
    certificateExpiry: () => renewal.servingExpiry(),
    sealKey: id.sealKey,
    close: async () => {
      renewal.stop();
      await server.close();
    },
  };
}
