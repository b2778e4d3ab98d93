// The webhook's certificate Secret and CA bundle publishing against the real API server: the
// install creates the Secret empty and the server fills it once, the next replica reuses it, it is
// replaced when it no longer names what is needed, settled when two replicas start together; a
// missing Secret is an error (the server creates none); the configuration is patched only when
// something differs.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CORE, ensureCrds, isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import {
  MUTATING_WEBHOOK_CONFIGURATIONS, ensureTlsIdentity, liveCertificates, publishCaBundle, serviceClientConfig, webhookConfiguration, type MutatingWebhookConfiguration,
} from '../../src/webhook/index.js';
import { uniqueName } from '../support/kube.js';
import { BIN, ensureNamespace, testClient } from '../support/server.js';

let admin: DynamicClient;
let ns: string;
const configs: string[] = [];

beforeAll(async () => {
  admin = testClient(inject('cluster').kubeconfigPath);
  ns = uniqueName('webhook-tls');
  await ensureNamespace(admin, ns);
});

afterAll(async () => {
  for (const name of configs) await admin.delete(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name).catch(() => undefined);
});

const sans = (pem: string): string | undefined => new crypto.X509Certificate(pem).subjectAltName;

/** The empty Secret deploy/25-webhook-tls.yaml and the chart create. */
const installSecret = (name: string): Promise<unknown> => admin.create(CORE.secrets, ns, { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name } });

describe('ensureTlsIdentity', () => {
  it('fills the Secret the install created, and the next start reuses it', async () => {
    const names = ['127.0.0.1', 'localhost'];
    await installSecret('a-webhook-tls');
    const first = await ensureTlsIdentity(admin, ns, 'a-webhook-tls', names);
    expect(first).toMatchObject({ origin: 'replaced', replacedBecause: 'it holds no certificate yet' });
    const secret = await admin.get<{ type: string; data: Record<string, string> }>(CORE.secrets, ns, 'a-webhook-tls');
    expect(secret.type).toBe('Opaque');
    expect(Buffer.from(secret.data['tls.crt'] ?? '', 'base64').toString()).toBe(first.cert);
    const second = await ensureTlsIdentity(admin, ns, 'a-webhook-tls', names);
    expect(second).toMatchObject({ origin: 'reused', cert: first.cert, key: first.key, caBundle: first.cert });
    // The seal key is made with the first certificate, stored beside it and read back, never made again.
    expect(first.sealKey).toHaveLength(32);
    expect(secret.data['seal.key']).toBe(first.sealKey.toString('base64'));
    expect(second.sealKey.equals(first.sealKey)).toBe(true);
  });

  it('adds a seal key to a Secret filled before seals existed, keeping its certificate', async () => {
    const names = ['127.0.0.1', 'localhost'];
    await installSecret('s-webhook-tls');
    const filled = await ensureTlsIdentity(admin, ns, 's-webhook-tls', names);
    const stored = await admin.get<KubeObject & { data: Record<string, string> }>(CORE.secrets, ns, 's-webhook-tls');
    const { 'seal.key': _key, ...older } = stored.data;
    await admin.replace(CORE.secrets, ns, 's-webhook-tls', { ...stored, data: older });
    const upgraded = await ensureTlsIdentity(admin, ns, 's-webhook-tls', names);
    expect(upgraded).toMatchObject({ origin: 'reused', cert: filled.cert });
    expect(upgraded.sealKey.equals(filled.sealKey)).toBe(false);
    const after = await admin.get<KubeObject & { data: Record<string, string> }>(CORE.secrets, ns, 's-webhook-tls');
    expect(after.data['seal.key']).toBe(upgraded.sealKey.toString('base64'));
    expect(after.data['ca.crt']).toBe(stored.data['ca.crt']);
  });

  it('creates no Secret: a missing one is an error naming the install', async () => {
    await expect(ensureTlsIdentity(admin, ns, 'missing-webhook-tls', ['127.0.0.1'])).rejects.toThrow(
      `the Secret ${ns}/missing-webhook-tls for the webhook certificate does not exist; the install creates it (kubectl apply -f deploy/, or the chart): the server creates no Secrets`,
    );
    await expect(admin.get(CORE.secrets, ns, 'missing-webhook-tls')).rejects.toSatisfy(isNotFound);
  });

  it('replaces a certificate that does not name a needed host, keeping the old one in the CA bundle while it is valid', async () => {
    await installSecret('b-webhook-tls');
    const narrow = await ensureTlsIdentity(admin, ns, 'b-webhook-tls', ['127.0.0.1']);
    const wider = await ensureTlsIdentity(admin, ns, 'b-webhook-tls', ['127.0.0.1', 'localhost', 'stowage-webhook.x.svc']);
    expect(wider.origin).toBe('replaced');
    expect(wider.replacedBecause).toBe('it does not name localhost, stowage-webhook.x.svc');
    expect(sans(wider.cert)).toBe('IP Address:127.0.0.1, DNS:localhost, DNS:stowage-webhook.x.svc');
    // A replica still serving the old certificate stays trusted until it restarts.
    expect(liveCertificates(wider.caBundle)).toEqual([wider.cert, narrow.cert]);
    const again = await ensureTlsIdentity(admin, ns, 'b-webhook-tls', ['127.0.0.1', 'localhost', 'stowage-webhook.x.svc']);
    expect(again).toMatchObject({ origin: 'reused', cert: wider.cert, caBundle: wider.caBundle });
    // Replacing the certificate (as renewal does) keeps the seal key: stamps sealed before still pass.
    expect(wider.sealKey.equals(narrow.sealKey)).toBe(true);
    expect(again.sealKey.equals(narrow.sealKey)).toBe(true);
  });

  it('gives two replicas starting together the same certificate', async () => {
    const names = ['127.0.0.1', 'localhost'];
    await installSecret('c-webhook-tls');
    const [a, b] = await Promise.all([ensureTlsIdentity(admin, ns, 'c-webhook-tls', names), ensureTlsIdentity(admin, ns, 'c-webhook-tls', names)]);
    expect(a.cert).toBe(b.cert);
    expect(a.sealKey.equals(b.sealKey)).toBe(true);
    expect([a.origin, b.origin].sort()).toEqual(['replaced', 'reused']);
  });
});

describe('publishCaBundle', () => {
  it('refuses a missing configuration with the fix', async () => {
    await expect(publishCaBundle(admin, uniqueName('stowage-missing'), 'pem')).rejects.toThrow(/^the MutatingWebhookConfiguration stowage-missing-\w+ does not exist; install it first \(kubectl apply -f deploy\/, or the chart\), or name another with --webhook-configuration-name$/);
  });

  it('puts the CA bundle (and the URL when given) into every webhook, once', async () => {
    const name = uniqueName('stowage-publish');
    configs.push(name);
    await admin.create(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, webhookConfiguration({ name, namespace: ns, clientConfig: serviceClientConfig(ns) }));
    await installSecret('d-webhook-tls');
    const pem = (await ensureTlsIdentity(admin, ns, 'd-webhook-tls', ['127.0.0.1'])).caBundle;
    expect(await publishCaBundle(admin, name, pem)).toEqual({ changed: true });
    let cfg = await admin.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
    expect(cfg.webhooks?.[0]?.clientConfig).toEqual({ service: { namespace: ns, name: 'stowage-webhook', path: '/mutate', port: 443 }, caBundle: Buffer.from(pem).toString('base64') });
    expect(await publishCaBundle(admin, name, pem)).toEqual({ changed: false });
    // A server outside the cluster: the URL replaces the Service.
    expect(await publishCaBundle(admin, name, pem, 'https://127.0.0.1:9443/mutate')).toEqual({ changed: true });
    cfg = await admin.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
    expect(cfg.webhooks?.[0]?.clientConfig).toEqual({ url: 'https://127.0.0.1:9443/mutate', caBundle: Buffer.from(pem).toString('base64') });
    // What the API server keeps of the rest is what deploy/ and the chart install.
    expect(cfg.webhooks?.[0]).toMatchObject({
      name: 'requester.stowage.dev', admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Fail', timeoutSeconds: 10, matchPolicy: 'Equivalent',
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      rules: [{ apiGroups: ['stowage.dev'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['backups', 'restores', 'downloadrequests', 'deletebackuprequests', 'schedules'], scope: 'Namespaced' }],
    });
    await admin.delete(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
    await expect(admin.get(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name)).rejects.toSatisfy(isNotFound);
  });
});

describe('stowage server in trust mode requester', () => {
  const run = (args: string[]): { status: number | null; out: string } => {
    const r = spawnSync(process.execPath, [BIN, 'server', '--kubeconfig', inject('cluster').kubeconfigPath, '--namespace', ns, '--metrics-address', '127.0.0.1:0', ...args], { encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  };

  it('does not start without its webhook configuration, and says how to install it', async () => {
    await ensureCrds(admin);
    const missing = uniqueName('stowage-none');
    const r = run(['--webhook-address', '127.0.0.1:0', '--webhook-configuration-name', missing]);
    expect(r.status).toBe(1);
    expect(r.out).toContain(`cannot start the admission webhook: the MutatingWebhookConfiguration ${missing} does not exist; install it first (kubectl apply -f deploy/, or the chart), or name another with --webhook-configuration-name`);
  });

  it('refuses an empty --webhook-address as a configuration error', () => {
    const r = run(['--webhook-address', '']);
    expect(r.status).toBe(2);
    expect(r.out).toContain('--webhook-address is empty, but trust mode requester needs the admission webhook to record who created each run (give an address like ":9443", or use --trust-mode cluster-admin)');
  });
});
