// The built-in key manager: key-encryption keys held in a Secret the location references
// (spec.encryption.keySecretRef). Each data entry of the Secret is one key, its entry name the key
// id; keySecretRef.key names the one new backups are wrapped with. Rotation: add an entry, point
// keySecretRef.key at it; backups wrapped with an older entry stay readable while it is listed.
// Wrapping is AES-256-GCM with a random nonce, the context as associated data.
import crypto from 'node:crypto';
import type { KeyManager } from '../plugin/api/index.js';
import { DATA_KEY_BYTES } from './chunked.js';
import { KeyUnavailableError } from './errors.js';
import { missingSecretEntry } from '../util/secretEntries.js';

export const SECRET_KEY_MANAGER = 'stowage.dev/secret';
const WRAP_VERSION = 1;

/** A 256-bit key from a Secret entry: 32 raw bytes, or 32 bytes in base64 or hex text. Undefined otherwise. */
export function parseKeyMaterial(value: Buffer): Buffer | undefined {
  if (value.length === DATA_KEY_BYTES) return Buffer.from(value);
  const text = value.toString('utf8').trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(text) || /^[A-Za-z0-9_-]{43}=?$/.test(text)) {
    const b = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (b.length === DATA_KEY_BYTES) return b;
  }
  return undefined;
}

export interface SecretKeys {
  /** `namespace/name` of the Secret, for messages. */
  secret: string;
  /** The entry new backups are wrapped with. */
  current: string;
  /** Every entry of the Secret, decoded from its base64 `data`. */
  data: Record<string, Buffer>;
}

/**
 * Checks a Secret's keys: the current one must exist and every entry must be a 256-bit key.
 * Returns the problems (empty: usable). Messages name entries, never their values.
 */
export function secretKeyProblems(keys: SecretKeys): string[] {
  const missing = missingSecretEntry(keys.secret, keys.current, keys.data);
  const problems: string[] = missing !== undefined ? [missing] : [];
  for (const [id, v] of Object.entries(keys.data)) {
    if (parseKeyMaterial(v) === undefined) {
      problems.push(`key "${id}" of Secret ${keys.secret} is not a 256-bit key: give 32 random bytes, or their base64 or hex (e.g. openssl rand -base64 32)`);
    }
  }
  return problems;
}

function keyNamed(keys: SecretKeys, id: string): Buffer {
  const raw = keys.data[id];
  if (raw === undefined) {
    const listed = Object.keys(keys.data).sort().map((k) => `"${k}"`).join(', ');
    throw new KeyUnavailableError('unknown-key', `the data key is wrapped with key "${id}", which Secret ${keys.secret} no longer lists (it lists ${listed === '' ? 'none' : listed}); put that key back to read this backup`);
  }
  const key = parseKeyMaterial(raw);
  if (key === undefined) throw new KeyUnavailableError('unknown-key', `key "${id}" of Secret ${keys.secret} is not a 256-bit key`);
  return key;
}

/** A KeyManager over the keys of one Secret, as read now (the caller reads the Secret per run). */
export function secretKeyManager(keys: SecretKeys): KeyManager {
  return {
    init: () => Promise.resolve(),
    wrapKey(plaintext, context) {
      const kek = keyNamed(keys, keys.current);
      const iv = crypto.randomBytes(12);
      const c = crypto.createCipheriv('aes-256-gcm', kek, iv);
      c.setAAD(Buffer.from(`${keys.current}\u0000${context}`, 'utf8'));
      const ct = Buffer.concat([Buffer.from([WRAP_VERSION]), iv, c.update(plaintext), c.final(), c.getAuthTag()]);
      return Promise.resolve({ keyId: keys.current, ciphertext: ct });
    },
    unwrapKey(keyId, ciphertext, context) {
      try {
        const kek = keyNamed(keys, keyId);
        const ct = Buffer.from(ciphertext);
        if (ct.length !== 1 + 12 + DATA_KEY_BYTES + 16 || ct[0] !== WRAP_VERSION) {
          throw new KeyUnavailableError('wrong-key', `the wrapped data key is malformed (${ct.length} bytes)`);
        }
        const d = crypto.createDecipheriv('aes-256-gcm', kek, ct.subarray(1, 13));
        d.setAAD(Buffer.from(`${keyId}\u0000${context}`, 'utf8'));
        d.setAuthTag(ct.subarray(ct.length - 16));
        try {
          return Promise.resolve(Buffer.concat([d.update(ct.subarray(13, ct.length - 16)), d.final()]));
        } catch {
          throw new KeyUnavailableError('wrong-key', `the data key does not unwrap with key "${keyId}" of Secret ${keys.secret}: that entry holds another key than the one the backup was made with, or the wrapped key was altered or moved from another backup`);
        }
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    },
  };
}
