// Renewal of the webhook certificate while the server runs (every replica). Each check reads the
// Secret: once a third of the certificate's lifetime is left, the first replica to look replaces
// it (the others read what it stored), and each replica publishes the CA bundle, which holds the
// new certificate and every earlier one still valid. A replica switches to serving the new
// certificate only once half of the renewal window has passed, so the API server has long had the
// bundle that trusts it; until the old certificate expires, the bundle still trusts the old one.
import type winston from 'winston';
import type { DynamicClient } from '../kube/index.js';
import { systemClock, type TimerClock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { ensureTlsIdentity, expiryOf, renewBeforeMs, type TlsIdentity } from './certs.js';
import { publishCaBundle } from './configuration.js';

export interface RenewalOptions {
  client: DynamicClient;
  namespace: string;
  secretName: string;
  names: readonly string[];
  configurationName: string;
  /** --webhook-url, '' when the configuration names a Service. */
  url: string;
  lifetimeMs: number;
  /** The identity served now. */
  serving: TlsIdentity;
  /** Switches the server to `id` (new connections; open ones finish on the old one). */
  serve(id: TlsIdentity): void;
  logger: winston.Logger;
  /** Times the checks and says when a certificate is due (the server's clock, which tests move). */
  clock?: TimerClock;
}

export interface CertificateRenewal {
  /** When the certificate served now expires (ms since the epoch). */
  servingExpiry(): number;
  /** One check now (the timer runs them too): renew, publish, switch as due. */
  check(): Promise<void>;
  stop(): void;
}

/** How often each replica checks: often enough for the shortest lifetime, at most every 10 minutes. */
export const checkIntervalMs = (lifetimeMs: number): number => Math.min(10 * 60_000, Math.max(1000, Math.floor(lifetimeMs / 30)));

/**
 * Whether a replica serving a certificate that expires at `servingExpiry` switches to `stored`, a
 * newer one: once less than half of the renewal window (a sixth of the lifetime) is left.
 */
export function switchDue(servingExpiry: number, stored: TlsIdentity, serving: TlsIdentity, now: number, lifetimeMs: number): boolean {
  if (stored.cert === serving.cert) return false;
  return servingExpiry - now < renewBeforeMs(lifetimeMs) / 2;
}

export function startCertificateRenewal(o: RenewalOptions): CertificateRenewal {
  const clock = o.clock ?? systemClock;
  const now = (): Date => clock.now();
  let serving = o.serving;
  let servingExpiry = expiryOf(serving.cert) ?? 0;
  let running: Promise<void> | undefined;

  const once = async (): Promise<void> => {
    const stored = await ensureTlsIdentity(o.client, o.namespace, o.secretName, o.names, now, o.lifetimeMs);
    if (stored.origin === 'replaced') {
      o.logger.info(`admission webhook certificate: renewed in Secret ${o.namespace}/${o.secretName} (${stored.replacedBecause ?? ''}); the previous one stays in the CA bundle until it expires`);
    }
    // The bundle of the stored certificate holds the served one too while that is valid.
    const published = await publishCaBundle(o.client, o.configurationName, stored.caBundle, o.url === '' ? undefined : o.url);
    if (published.changed) o.logger.info(`admission webhook: CA bundle republished to MutatingWebhookConfiguration ${o.configurationName}`);
    if (switchDue(servingExpiry, stored, serving, now().getTime(), o.lifetimeMs)) {
      serving = stored;
      servingExpiry = expiryOf(stored.cert) ?? 0;
      o.serve(stored);
      o.logger.info(`admission webhook: serving the renewed certificate, valid until ${new Date(servingExpiry).toISOString()}`);
    }
  };

  const check = (): Promise<void> => {
    running ??= once()
      .catch((err: unknown) => {
        o.logger.warn(`admission webhook certificate: renewal check failed (retried in ${checkIntervalMs(o.lifetimeMs)} ms): ${errorMessage(err)}`);
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  // Checks on the clock's time, not setInterval's: a test that moves the clock past a renewal
  // point gets the check that falls due there at once.
  const stopping = new AbortController();
  void (async () => {
    for (;;) {
      await clock.sleep(checkIntervalMs(o.lifetimeMs), stopping.signal);
      await check();
    }
  })().catch(() => undefined);

  return {
    servingExpiry: () => servingExpiry,
    check,
    stop: () => {
      stopping.abort();
    },
  };
}
