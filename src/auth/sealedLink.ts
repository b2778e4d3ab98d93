// Download links sealed to the one who asked. Anyone with `get` on DownloadRequests can read their
// status, so the link there must be useless to them: the client puts a one-time X25519 public key
// in spec.publicKey, and the server writes the link encrypted to it (ECDH with a one-time key of its
// own, HKDF-SHA256, AES-256-GCM). The request's identity (namespace/name and target) is bound into
// the key derivation and the GCM tag, so a sealed link copied into another request's status does not
// open there. node:crypto only.
import crypto from 'node:crypto';
import type { DownloadRequest, SealedDownloadURL } from '../apis/v1/index.js';

export const SEAL_ALGORITHM = 'X25519-HKDF-SHA256-AES-256-GCM';
const INFO_PREFIX = 'stowage.dev download link v1\u0000';

/** What a sealed link is bound to: the request it answers. */
export function sealContext(dr: Pick<DownloadRequest, 'metadata' | 'spec'>): string {
  return `DownloadRequest ${dr.metadata.namespace ?? ''}/${dr.metadata.name} ${dr.spec.target.kind} ${dr.spec.target.name}`;
}

/** Parses spec.publicKey: an X25519 key, base64 of its SPKI DER form. */
export function parseLinkPublicKey(b64: string): crypto.KeyObject | { error: string } {
  const bad = { error: 'spec.publicKey is not an X25519 public key (base64 of its SPKI DER form)' };
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return bad;
  let key: crypto.KeyObject;
  try {
    key = crypto.createPublicKey({ key: Buffer.from(b64, 'base64'), format: 'der', type: 'spki' });
  } catch {
    return bad;
  }
  return key.asymmetricKeyType === 'x25519' ? key : bad;
}

function spki(key: crypto.KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' });
}

function aesKey(shared: Buffer, ephemeral: Buffer, recipient: Buffer, context: string): Buffer {
  // Both public keys salt the derivation, so the key is specific to this exchange.
  return Buffer.from(crypto.hkdfSync('sha256', shared, Buffer.concat([ephemeral, recipient]), INFO_PREFIX + context, 32));
}

/** Encrypts `url` to `recipient` for the request `context` names. */
export function sealLink(recipient: crypto.KeyObject, url: string, context: string): SealedDownloadURL {
  const eph = crypto.generateKeyPairSync('x25519');
  const shared = crypto.diffieHellman({ privateKey: eph.privateKey, publicKey: recipient });
  const ephDer = spki(eph.publicKey);
  const key = aesKey(shared, ephDer, spki(recipient), context);
  const nonce = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ct = Buffer.concat([cipher.update(url, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { algorithm: SEAL_ALGORITHM, ephemeralPublicKey: ephDer.toString('base64'), nonce: nonce.toString('base64'), ciphertext: ct.toString('base64') };
}

export interface LinkKey {
  /** For spec.publicKey. */
  publicKey: string;
  /** The link, or why it cannot be opened. */
  open(sealed: SealedDownloadURL, context: string): string | { error: string };
}

/** A one-time key pair for one DownloadRequest; the private half never leaves this process. */
export function createLinkKey(): LinkKey {
  const pair = crypto.generateKeyPairSync('x25519');
  const ownDer = spki(pair.publicKey);
  return {
    publicKey: ownDer.toString('base64'),
    open(sealed, context) {
      if (sealed.algorithm !== SEAL_ALGORITHM) return { error: `the download link is sealed with ${sealed.algorithm}, which this client does not know (expected ${SEAL_ALGORITHM})` };
      const eph = parseLinkPublicKey(sealed.ephemeralPublicKey);
      if ('error' in eph) return { error: "the sealed download link's ephemeralPublicKey is not an X25519 public key" };
      const nonce = Buffer.from(sealed.nonce, 'base64');
      const body = Buffer.from(sealed.ciphertext, 'base64');
      if (nonce.length !== 12 || body.length < 16) return { error: 'the sealed download link is malformed' };
      const key = aesKey(crypto.diffieHellman({ privateKey: pair.privateKey, publicKey: eph }), spki(eph), ownDer, context);
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, nonce);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - 16));
      try {
        return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8');
      } catch {
        return { error: 'the sealed download link does not open with this request\'s key (it was sealed for another key or request, or altered)' };
      }
    },
  };
}
