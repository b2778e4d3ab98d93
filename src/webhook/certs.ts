// The webhook's TLS identity: one self-signed certificate that is its own CA (the API server is
// given it as the caBundle), kept in a Secret in the server namespace so that every replica, and
// every restart, serves the same one. The install creates that Secret (empty); the server only
// reads and updates it by name, so its token can create no Secret (a service-account token Secret
// would be a token that never expires). Reused while more than a third of its lifetime is left and
// it names every host the API server may call; otherwise replaced, and the CA bundle (Secret key
// ca.crt) keeps the replaced certificate while it is valid. The same Secret keeps the key that
// seals requester stamps (auth/seal.ts, Secret key seal.key), made once and kept across renewals so
// every replica seals and checks with it. Keys and certificate are never logged.
import crypto from 'node:crypto';
import net from 'node:net';
import forge from 'node-forge';
import { SEAL_KEY_BYTES, createSealKey } from '../auth/index.js';
import { CORE, isConflict, isNotFound, type DynamicClient } from '../kube/index.js';

const DAY_MS = 86_400_000;
/** The default lifetime of a certificate (--webhook-certificate-lifetime). */
export const DEFAULT_LIFETIME_MS = 365 * DAY_MS;
/** How far notBefore is backdated, so an API server whose clock runs a little behind accepts it. */
const BACKDATE_MS = 5 * 60_000;

/** When a certificate of `lifetimeMs` is renewed: once less than a third of its lifetime is left. */
export const renewBeforeMs = (lifetimeMs: number): number => Math.floor(lifetimeMs / 3);

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
export function createTlsIdentity(names: readonly string[], now: Date = new Date(), lifetimeMs = DEFAULT_LIFETIME_MS): TlsIdentity {
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
  cert.validity.notBefore = new Date(now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = new Date(now.getTime() + lifetimeMs);
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
 * must match, it must have more than a third of `lifetimeMs` left and its SANs must cover every name.
 */
export function unusableBecause(id: { cert: string; key: string }, names: readonly string[], now: Date = new Date(), lifetimeMs = DEFAULT_LIFETIME_MS): string | undefined {
  if (id.cert.trim() === '' && id.key.trim() === '') return 'it holds no certificate yet';
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
  const renewBefore = renewBeforeMs(lifetimeMs);
  if (!(notAfter - now.getTime() > renewBefore)) return `it expires ${new Date(notAfter).toISOString()}, within ${formatSpan(renewBefore)} (a third of the certificate lifetime)`;
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

/** `121d 16h`, `20s`: a span for messages. */
function formatSpan(ms: number): string {
  const s = Math.round(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (s >= 3600) return `${h}h`;
  return s >= 60 ? `${Math.floor(s / 60)}m` : `${s}s`;
}

/** When the certificate `pem` expires (ms since the epoch), or undefined when it does not parse. */
export function expiryOf(pem: string): number | undefined {
  try {
    return Date.parse(new crypto.X509Certificate(pem).validTo);
  } catch {
    return undefined;
  }
}

interface TlsSecret {
  metadata: { name: string; resourceVersion?: string } & Record<string, unknown>;
  type?: string;
  data?: Record<string, string>;
}

/** The stored seal key, or undefined when there is none of the right size (it is then made anew). */
function sealKeyOf(s: TlsSecret): Buffer | undefined {
  const k = Buffer.from(s.data?.['seal.key'] ?? '', 'base64');
  return k.length === SEAL_KEY_BYTES ? k : undefined;
}

const fromSecret = (s: TlsSecret): { cert: string; key: string; caBundle: string; sealKey: Buffer | undefined } => ({
  cert: Buffer.from(s.data?.['tls.crt'] ?? '', 'base64').toString('utf8'),
  key: Buffer.from(s.data?.['tls.key'] ?? '', 'base64').toString('utf8'),
  caBundle: Buffer.from(s.data?.['ca.crt'] ?? '', 'base64').toString('utf8'),
  sealKey: sealKeyOf(s),
});

/** The stored Secret with the identity in its data; type, labels and annotations stay as the install made them (type is immutable). */
const secretBody = (stored: TlsSecret, id: TlsIdentity, sealKey: Buffer): object => ({
  ...stored,
  apiVersion: 'v1', kind: 'Secret',
  data: {
    ...stored.data,
    'tls.crt': Buffer.from(id.cert).toString('base64'), 'tls.key': Buffer.from(id.key).toString('base64'), 'ca.crt': Buffer.from(id.caBundle).toString('base64'),
    'seal.key': sealKey.toString('base64'),
  },
});

export interface EnsuredIdentity extends TlsIdentity {
  /** How it was come by, for the start-up log. */
  origin: 'reused' | 'replaced';
  /** Why the stored one was replaced. */
  replacedBecause?: string;
  /** The key that seals requester stamps (auth/seal.ts). */
  sealKey: Buffer;
}

/**
 * The identity kept in Secret `secretName` in `namespace`, made or replaced when needed. The
 * Secret must exist (the install creates it, possibly empty). Two replicas replacing it together
 * race on the update (Conflict): the loser reads what the winner stored and uses that.
 */
export async function ensureTlsIdentity(
  client: DynamicClient, namespace: string, secretName: string, names: readonly string[], now: () => Date = () => new Date(), lifetimeMs = DEFAULT_LIFETIME_MS,
): Promise<EnsuredIdentity> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let stored: TlsSecret;
    try {
      stored = await client.get<TlsSecret>(CORE.secrets, namespace, secretName);
    } catch (err) {
      if (isNotFound(err)) {
        throw new Error(`the Secret ${namespace}/${secretName} for the webhook certificate does not exist; the install creates it (kubectl apply -f deploy/, or the chart): the server creates no Secrets`, { cause: err });
      }
      throw err;
    }
    const current = fromSecret(stored);
    const why = unusableBecause(current, names, now(), lifetimeMs);
    const sealKey = current.sealKey ?? createSealKey();
    try {
      if (why === undefined) {
        const reused = { cert: current.cert, key: current.key, caBundle: bundleWith(current.cert, current.caBundle, now()) };
        // A Secret filled before seals existed gets its key now (stored.data keeps ca.crt as it was).
        if (current.sealKey === undefined) await client.replace(CORE.secrets, namespace, secretName, secretBody(stored, { ...reused, caBundle: current.caBundle }, sealKey));
        return { ...reused, origin: 'reused', sealKey };
      }
      const fresh = createTlsIdentity(names, now(), lifetimeMs);
      const id = { ...fresh, caBundle: bundleWith(fresh.cert, `${current.cert}\n${current.caBundle}`, now()) };
      await client.replace(CORE.secrets, namespace, secretName, secretBody(stored, id, sealKey));
      return { ...id, origin: 'replaced', replacedBecause: why, sealKey };
    } catch (err) {
      if (isConflict(err)) continue;
      throw err;
    }
  }
  throw new Error(`could not settle the webhook certificate in Secret ${namespace}/${secretName}: it kept changing under this server (other replicas replacing it)`);
}
