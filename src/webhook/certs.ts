// The webhook's TLS identity: one self-signed certificate that is its own CA (the API server is
// given it as the caBundle), kept in a Secret in the server namespace so that every replica, and
// every restart, serves the same one. Reused while it has more than 30 days left and names every
// host the API server may call; otherwise replaced, and the CA bundle (Secret key ca.crt) keeps
// the replaced certificate while it is valid. Key and certificate are never logged.
import crypto from 'node:crypto';
import net from 'node:net';
import forge from 'node-forge';
import { CORE, isAlreadyExists, isConflict, isNotFound, type DynamicClient } from '../kube/index.js';

const DAY_MS = 86_400_000;
/** A certificate is replaced when it has less than this left. */
export const RENEW_BEFORE_MS = 30 * DAY_MS;
const VALIDITY_MS = 365 * DAY_MS;

export interface TlsIdentity {
  /** PEM. */
  cert: string;
  /** PEM (PKCS#8). */
  key: string;
  /**
   * What the webhook configuration's caBundle carries (PEM): the certificate itself, then any
   * certificate it replaced that is still valid (replicas not yet restarted still serve that one).
   */
  caBundle: string;
}

export const tlsSecretName = (webhookConfigurationName: string): string => `${webhookConfigurationName}-webhook-tls`;

/**
 * The names the serving certificate must carry: loopback always (a server outside the cluster,
 * and tests), the Service's DNS names when the configuration points at one, the host of the URL
 * when it is given.
 */
export function servingNames(o: { service?: { name: string; namespace: string }; url?: string }): string[] {
  const names = ['127.0.0.1', 'localhost'];
  if (o.service !== undefined) names.push(`${o.service.name}.${o.service.namespace}.svc`, `${o.service.name}.${o.service.namespace}.svc.cluster.local`);
  if (o.url !== undefined && o.url !== '') {
    const host = new URL(o.url).hostname.replace(/^\[(.*)\]$/, '$1');
    if (host !== '') names.push(host);
  }
  return [...new Set(names)];
}

/** A new self-signed serving certificate for `names` (IP addresses become IP SANs). */
export function createTlsIdentity(names: readonly string[], now: Date = new Date()): TlsIdentity {
  // Node makes the key (forge's pure-JS RSA generation takes seconds); forge builds the certificate.
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const fkey = forge.pki.privateKeyFromPem(keyPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(fkey.n, fkey.e);
  // A positive 127-bit serial in minimal DER: the top bit clear (not negative) and the next one set
  // (no leading zero byte, which OpenSSL refuses as "illegal padding").
  const serial = crypto.randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  cert.serialNumber = serial.toString('hex');
  // Backdated a little: an API server whose clock runs slightly behind still accepts it.
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60_000);
  cert.validity.notAfter = new Date(now.getTime() + VALIDITY_MS);
  const subject = [{ name: 'commonName', value: 'stowage-webhook' }, { name: 'organizationName', value: 'stowage.dev' }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    // Its own CA: the caBundle is this certificate, so there is no separate CA key to keep.
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: names.map((n) => (net.isIP(n) !== 0 ? { type: 7, ip: n } : { type: 2, value: n })) },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(fkey, forge.md.sha256.create());
  // forge writes CRLF line ends; LF keeps bundles comparable by text.
  const certPem = forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n');
  return { cert: certPem, key: keyPem, caBundle: certPem };
}

/**
 * Why `id` cannot be reused for `names` at `now`, or undefined when it can: it must parse, its key
 * must match, it must have more than 30 days left and its SANs must cover every name.
 */
export function unusableBecause(id: { cert: string; key: string }, names: readonly string[], now: Date = new Date()): string | undefined {
  let x: crypto.X509Certificate;
  try {
    x = new crypto.X509Certificate(id.cert);
  } catch {
    return 'the certificate does not parse';
  }
  try {
    if (!x.checkPrivateKey(crypto.createPrivateKey(id.key))) return 'the key does not match the certificate';
  } catch {
    return 'the key does not parse';
  }
  const notAfter = Date.parse(x.validTo);
  if (!(notAfter - now.getTime() > RENEW_BEFORE_MS)) return `it expires ${new Date(notAfter).toISOString()}, within ${RENEW_BEFORE_MS / DAY_MS} days`;
  if (Date.parse(x.validFrom) > now.getTime()) return `it is not valid before ${new Date(Date.parse(x.validFrom)).toISOString()}`;
  const sans = new Set((x.subjectAltName ?? '').split(', ').map((s) => s.replace(/^(DNS|IP Address):/, '')));
  const missing = names.filter((n) => !sans.has(n));
  if (missing.length > 0) return `it does not name ${missing.join(', ')}`;
  return undefined;
}

/** The certificates of a PEM bundle, less those expired at `now` (or unreadable). */
export function liveCertificates(bundle: string, now: Date = new Date()): string[] {
  const blocks = bundle.replace(/\r\n/g, '\n').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  return blocks.filter((pem) => {
    try {
      return Date.parse(new crypto.X509Certificate(pem).validTo) > now.getTime();
    } catch {
      return false;
    }
  }).map((pem) => `${pem}\n`);
}

/**
 * The CA bundle for `cert`: itself first, then the certificates of `previous` still valid, so
 * replicas still serving the certificate just replaced are trusted until they restart.
 */
function bundleWith(cert: string, previous: string, now: Date): string {
  const seen = new Set([cert.trim()]);
  const out = [cert];
  for (const pem of liveCertificates(previous, now)) {
    if (seen.has(pem.trim())) continue;
    seen.add(pem.trim());
    out.push(pem);
  }
  return out.join('');
}

interface TlsSecret {
  metadata: { name: string; resourceVersion?: string };
  type?: string;
  data?: Record<string, string>;
}

const fromSecret = (s: TlsSecret): { cert: string; key: string; caBundle: string } => ({
  cert: Buffer.from(s.data?.['tls.crt'] ?? '', 'base64').toString('utf8'),
  key: Buffer.from(s.data?.['tls.key'] ?? '', 'base64').toString('utf8'),
  caBundle: Buffer.from(s.data?.['ca.crt'] ?? '', 'base64').toString('utf8'),
});

const secretBody = (name: string, id: TlsIdentity, resourceVersion?: string): object => ({
  apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls',
  metadata: { name, labels: { 'app.kubernetes.io/name': 'stowage', 'app.kubernetes.io/component': 'webhook' }, ...(resourceVersion !== undefined ? { resourceVersion } : {}) },
  data: { 'tls.crt': Buffer.from(id.cert).toString('base64'), 'tls.key': Buffer.from(id.key).toString('base64'), 'ca.crt': Buffer.from(id.caBundle).toString('base64') },
});

export interface EnsuredIdentity extends TlsIdentity {
  /** How it was come by, for the start-up log. */
  origin: 'reused' | 'created' | 'replaced';
  /** Why the stored one was replaced. */
  replacedBecause?: string;
}

/**
 * The identity kept in Secret `secretName` in `namespace`, made or replaced when needed. Two
 * replicas starting together race on the create (AlreadyExists) or the replacement (Conflict):
 * the loser reads what the winner stored and uses that.
 */
export async function ensureTlsIdentity(
  client: DynamicClient, namespace: string, secretName: string, names: readonly string[], now: () => Date = () => new Date(),
): Promise<EnsuredIdentity> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let stored: TlsSecret | undefined;
    try {
      stored = await client.get<TlsSecret>(CORE.secrets, namespace, secretName);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (stored === undefined) {
      const id = createTlsIdentity(names, now());
      try {
        await client.create(CORE.secrets, namespace, secretBody(secretName, id));
        return { ...id, origin: 'created' };
      } catch (err) {
        if (isAlreadyExists(err)) continue;
        throw err;
      }
    }
    const current = fromSecret(stored);
    const why = unusableBecause(current, names, now());
    if (why === undefined) return { cert: current.cert, key: current.key, caBundle: bundleWith(current.cert, current.caBundle, now()), origin: 'reused' };
    const fresh = createTlsIdentity(names, now());
    const id = { ...fresh, caBundle: bundleWith(fresh.cert, `${current.cert}\n${current.caBundle}`, now()) };
    try {
      await client.replace(CORE.secrets, namespace, secretName, secretBody(secretName, id, stored.metadata.resourceVersion));
      return { ...id, origin: 'replaced', replacedBecause: why };
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) continue;
      throw err;
    }
  }
  throw new Error(`could not settle the webhook certificate in Secret ${namespace}/${secretName}: it kept changing under this server (other replicas replacing it)`);
}
