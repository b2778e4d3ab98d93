// The toy KMS: AES-256-GCM wrapping of data keys. A wrapped key is
//   version (1 byte) | nonce (12) | encrypted data key | tag (16)
// with the key id and the context bound in as associated data, so a wrapped key moved to another
// backup, or relabelled with another key id, does not unwrap.
import crypto from 'node:crypto';
import { KeyUnavailableError } from 'stowage/plugin-sdk';

const VERSION = 1;
const NONCE = 12;
const TAG = 16;

function aad(keyId, context) {
  return Buffer.from(`file-kms/v${VERSION}\u0000${keyId}\u0000${context}`, 'utf8');
}

export function wrap(keys, keyId, plaintext, context) {
  const kek = keys.get(keyId);
  if (kek === undefined) throw new Error(`file-kms: no key "${keyId}"`);
  const nonce = crypto.randomBytes(NONCE);
  const c = crypto.createCipheriv('aes-256-gcm', kek, nonce);
  c.setAAD(aad(keyId, context));
  return Buffer.concat([Buffer.from([VERSION]), nonce, c.update(plaintext), c.final(), c.getAuthTag()]);
}

/** Refuses with KeyUnavailableError: 'unknown-key' for an id not held, 'wrong-key' when it does not open. */
export function unwrap(keys, keyId, ciphertext, context) {
  const kek = keys.get(keyId);
  if (kek === undefined) {
    throw new KeyUnavailableError('unknown-key', `file-kms holds no key "${keyId}" (it holds ${[...keys.keys()].sort().join(', ')}); list that key again to read what it wrapped`);
  }
  const ct = Buffer.from(ciphertext);
  if (ct.length <= 1 + NONCE + TAG || ct[0] !== VERSION) {
    throw new KeyUnavailableError('wrong-key', `the wrapped key is not a file-kms v${VERSION} wrapping (${ct.length} bytes)`);
  }
  const d = crypto.createDecipheriv('aes-256-gcm', kek, ct.subarray(1, 1 + NONCE));
  d.setAAD(aad(keyId, context));
  d.setAuthTag(ct.subarray(ct.length - TAG));
  try {
    return Buffer.concat([d.update(ct.subarray(1 + NONCE, ct.length - TAG)), d.final()]);
  } catch {
    throw new KeyUnavailableError('wrong-key', `the wrapped key does not open under key "${keyId}": it was altered, wrapped for another context, or that id now names another key`);
  }
}
