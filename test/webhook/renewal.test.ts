// The webhook certificate is renewed while the server runs, against the real API server (the
// server as its deployed ServiceAccount, which may create no Secret): with a 45 s certificate,
// creates go on back to back across the renewal, the switch and the old certificate's expiry, and
// none fails; the CA bundle holds the old certificate beside the new one until it expires; the
// expiry metric counts down to the served certificate's notAfter. The server runs in-process on a
// movable clock: the test moves it up to the renewal and past the expiry, but lets the 7.5 s from
// the renewal to the switch pass in real time, as deployed, since that is the API server's time to
// load the new CA bundle.
import crypto from 'node:crypto';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION } from '../../src/auth/index.js';
import type { DynamicClient, KubeObject } from '../../src/kube/index.js';
import { errorMessage } from '../../src/util/errors.js';
import { MUTATING_WEBHOOK_CONFIGURATIONS, expiryOf, liveCertificates, renewBeforeMs, type MutatingWebhookConfiguration } from '../../src/webhook/index.js';
import { ensureBuilt } from '../cli/helpers.js';
import { uniqueName } from '../support/kube.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { testClient } from '../support/server.js';
import { webhookConfigurationNameFor } from '../support/webhook.js';

const LIFETIME_MS = 45_000;

let admin: DynamicClient;
let ns: string;
let server: InProcessServer;

beforeAll(async () => {
  await ensureBuilt();
  const cluster = inject('cluster');
  admin = testClient(cluster.kubeconfigPath);
  ns = uniqueName('webhook-renew');
  server = await startInProcessServer({ kubeconfigPath: cluster.kubeconfigPath, namespace: ns, args: ['--webhook-certificate-lifetime', '45s'] });
});

afterAll(async () => {
  await server?.stop();
});

/** Every certificate the configuration's CA bundle holds (expired ones too), and the URL it calls. */
async function published(): Promise<{ certs: string[]; url: URL }> {
  const cfg = await admin.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, webhookConfigurationNameFor(ns));
  const cc = cfg.webhooks?.[0]?.clientConfig as { caBundle?: string; url?: string } | undefined;
  if (cc?.url === undefined) throw new Error('the test configuration calls no URL');
  return { certs: liveCertificates(Buffer.from(cc.caBundle ?? '', 'base64').toString('utf8'), new Date(0)), url: new URL(cc.url) };
}

/** The certificate the webhook serves to a new connection, as PEM. */
async function served(url: URL): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new crypto.X509Certificate(raw).toString().replace(/\r\n/g, '\n'));
    });
    socket.once('error', reject);
  });
}

const samePem = (a: string, b: string): boolean => a.trim() === b.trim();
/** The server's time (ms since the epoch): certificates are renewed, switched and expire on it. */
const now = (): number => server.clock.now().getTime();

async function expiryMetric(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const m = /^stowage_webhook_certificate_expiry_seconds (-?[\d.e+]+)$/m.exec(text);
  if (m === null) throw new Error('the server exports no stowage_webhook_certificate_expiry_seconds');
  return Number(m[1]);
}

describe('webhook certificate renewal while the server runs', () => {
  it('renews and switches before expiry, keeps the old certificate in the bundle until it expires, and no create fails across the rollover', async () => {
    const start = await published();
    expect(start.certs).toHaveLength(1);
    const first = start.certs[0] ?? '';
    expect(samePem(await served(start.url), first)).toBe(true);
    const firstExpiry = expiryOf(first) ?? 0;
    const left = await expiryMetric();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(LIFETIME_MS / 1000);
    expect(Math.abs(left - (firstExpiry - now()) / 1000)).toBeLessThanOrEqual(2);

    // Creates back to back until the old certificate has expired and the new one is served. Between
    // creates the clock moves up to the renewal point, then stands (real time runs) until the switch,
    // then moves past the expiry. The bound only keeps a broken renewal from looping forever.
    const renewAt = firstExpiry - renewBeforeMs(LIFETIME_MS);
    const moveTowards = (to: number): void => {
      const ms = Math.min(3000, to - now());
      if (ms > 0) server.clock.advance(ms);
    };
    const failures: string[] = [];
    let creates = 0;
    let bothInBundle = false;
    let switchedBeforeExpiry = false;
    let renewed = '';
    const deadline = Date.now() + 3 * LIFETIME_MS;
    for (;;) {
      try {
        const b = await admin.create<KubeObject>(RESOURCES.Backup, ns, newBackup(`rollover-${creates}`, ns, {}), { dryRun: true });
        if (b.metadata?.annotations?.[REQUESTER_ANNOTATION] === undefined) failures.push(`create ${creates} came back unstamped`);
      } catch (err) {
        failures.push(`create ${creates} at ${new Date(now()).toISOString()} (server clock): ${errorMessage(err)}`);
      }
      creates++;
      const at = now();
      const p = await published();
      const next = p.certs.find((c) => !samePem(c, first));
      if (next !== undefined) renewed = next;
      if (at < firstExpiry && next !== undefined && p.certs.some((c) => samePem(c, first))) bothInBundle = true;
      const serving = await served(p.url);
      if (now() < firstExpiry && renewed !== '' && samePem(serving, renewed)) switchedBeforeExpiry = true;
      if (now() > firstExpiry + 1000 && renewed !== '' && samePem(serving, renewed)) break;
      if (Date.now() > deadline) throw new Error(`no rollover within ${3 * LIFETIME_MS} ms (renewed: ${renewed !== ''}); server log:\n${server.output()}`);
      const log = server.output();
      if (!log.includes('admission webhook certificate: renewed')) moveTowards(renewAt + 1);
      else if (log.includes('admission webhook: serving the renewed certificate')) moveTowards(firstExpiry + 1500);
    }
    expect(failures).toEqual([]);
    expect(creates).toBeGreaterThan(10);
    expect(bothInBundle, 'the bundle held the old and the new certificate while the old one was valid').toBe(true);
    expect(switchedBeforeExpiry, 'the new certificate was served before the old one expired').toBe(true);
    expect(server.output()).toMatch(/admission webhook certificate: renewed in Secret \S+ \(it expires .*, within 15s \(a third of the certificate lifetime\)\); the previous one stays in the CA bundle until it expires/);
    expect(server.output()).toContain('admission webhook: serving the renewed certificate, valid until');
    // The metric follows the served certificate.
    const renewedLeft = await expiryMetric();
    expect(Math.abs(renewedLeft - ((expiryOf(renewed) ?? 0) - now()) / 1000)).toBeLessThanOrEqual(2);
  });
});
