// Signing keys held in one Secret (a location's spec.signing.keySecretRef): each data entry is one
// key; keySecretRef.key names the one new backups are signed with. An entry is
//   - an Ed25519 private key (PKCS#8 PEM): signs, and verifies with its public half;
//   - an Ed25519 public key (SPKI PEM): verifies only (a disaster-recovery cluster's copy);
//   - anything else of 32 bytes or more: an HMAC-SHA256 key (signs and verifies).
// A PEM entry is never used as an HMAC key: a public key is no secret, so a signature file naming
// it as an HMAC key would be forgeable by anyone (algorithm confusion).
// Key ids: an HMAC key's is its entry name (the Secret is copied whole to verify elsewhere); an
// Ed25519 key's is the fingerprint of its public half, so any cluster holding that half finds it
// whatever the entry is called there.
import crypto, { type KeyObject } from 'node:crypto';
import { missingSecretEntry } from '../util/secretEntries.js';

export const HMAC_ALGORITHM = 'HMAC-SHA256';
export const ED25519_ALGORITHM = 'Ed25519';
export type SignatureAlgorithm = typeof HMAC_ALGORITHM | typeof ED25519_ALGORITHM;
export const MIN_HMAC_KEY_BYTES = 32;

export type SigningKey =
  | { algorithm: typeof HMAC_ALGORITHM; entry: string; id: string; secret: Buffer }
  | { algorithm: typeof ED25519_ALGORITHM; entry: string; id: string; publicKey: KeyObject; privateKey?: KeyObject };

export interface SigningKeys {
  /** `namespace/name` of the Secret, for messages. */
  secret: string;
  /** The entry new backups are signed with. */
  current: string;
  /** Every entry of the Secret, decoded from its base64 `data`. */
  data: Record<string, Buffer>;
}

/** `ed25519:` and the first 16 bytes (hex) of the SHA-256 of the raw 32-byte public key. */
export function ed25519Fingerprint(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: 'jwk' });
  const raw = Buffer.from(jwk.x ?? '', 'base64url');
  return `ed25519:${crypto.createHash('sha256').update(raw).digest('hex').slice(0, 32)}`;
}

function pemKind(text: string): 'private' | 'public' | undefined {
  if (/-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----/.test(text)) return 'private';
  if (/-----BEGIN PUBLIC KEY-----/.test(text)) return 'public';
  return undefined;
}

/** One entry as a key, or what is wrong with it (never its value). */
export function parseSigningKey(entry: string, value: Buffer, secret: string): SigningKey | { problem: string } {
  const text = value.toString('utf8');
  const kind = pemKind(text);
  const where = `key "${entry}" of Secret ${secret}`;
  if (kind !== undefined) {
    try {
      const privateKey = kind === 'private' ? crypto.createPrivateKey(text) : undefined;
      const publicKey = privateKey !== undefined ? crypto.createPublicKey(privateKey) : crypto.createPublicKey(text);
      if (publicKey.asymmetricKeyType !== 'ed25519') {
        return { problem: `${where} is a ${publicKey.asymmetricKeyType ?? 'unknown'} key; signing keys in PEM must be Ed25519 (openssl genpkey -algorithm ed25519)` };
      }
      return { algorithm: ED25519_ALGORITHM, entry, id: ed25519Fingerprint(publicKey), publicKey, ...(privateKey !== undefined ? { privateKey } : {}) };
    } catch {
      return { problem: `${where} looks like a PEM ${kind} key but cannot be read as one` };
    }
  }
  // Text keys are taken without surrounding whitespace: a key file saved with a final newline is the same key.
  const secretBytes = /^[\x20-\x7e\s]*$/.test(text) ? Buffer.from(text.trim(), 'utf8') : Buffer.from(value);
  if (secretBytes.length < MIN_HMAC_KEY_BYTES) {
    return { problem: `${where} is neither an Ed25519 PEM key nor an HMAC key of at least ${MIN_HMAC_KEY_BYTES} bytes (e.g. openssl rand -base64 32)` };
  }
  return { algorithm: HMAC_ALGORITHM, entry, id: entry, secret: secretBytes };
}

/** Every problem of the Secret's keys (empty: usable): the current entry must exist and every entry be a key. */
export function signingKeyProblems(keys: SigningKeys): string[] {
  const missing = missingSecretEntry(keys.secret, keys.current, keys.data);
  const problems: string[] = missing !== undefined ? [missing] : [];
  for (const [entry, v] of Object.entries(keys.data)) {
    const k = parseSigningKey(entry, v, keys.secret);
    if ('problem' in k) problems.push(k.problem);
  }
  return problems;
}

/** Every usable key of the Secret (entries that are not keys are left out: signingKeyProblems names them). */
export function signingKeysOf(keys: SigningKeys): SigningKey[] {
  const out: SigningKey[] = [];
  for (const [entry, v] of Object.entries(keys.data)) {
    const k = parseSigningKey(entry, v, keys.secret);
    if (!('problem' in k)) out.push(k);
  }
  return out;
}

/** The key new backups are signed with, or undefined when the current entry is missing or invalid. */
export function currentSigningKey(keys: SigningKeys): SigningKey | undefined {
  const v = keys.data[keys.current];
  if (v === undefined) return undefined;
  const k = parseSigningKey(keys.current, v, keys.secret);
  return 'problem' in k ? undefined : k;
}

/** Whether the key can sign (an Ed25519 public key alone only verifies). */
export function canSign(key: SigningKey): boolean {
  return key.algorithm === HMAC_ALGORITHM || key.privateKey !== undefined;
}
