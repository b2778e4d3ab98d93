import type { PluginConfig } from './objectStore.js';

/** The size of a backup's data key: what a KeyManager wraps and must unwrap back to. */
export const DATA_KEY_BYTES = 32;

/**
 * A key manager: wraps and unwraps backups' data keys with a key-encryption key it holds (a KMS, an
 * HSM, a Secret). The data key never leaves the server except to it, and the key-encryption key
 * never reaches the server. Stateful like an ObjectStore: Init once per configuration, replayed
 * after a restart.
 */
export interface KeyManager {
  init(config: PluginConfig): Promise<void>;
  /**
   * Wraps `plaintext` (a 32-byte data key) with the current key-encryption key. `context` names
   * what the key is for (`backup/<name>/data-key`) and must be given again to unwrap.
   * Returns the id of the key used, which unwrap is handed back.
   */
  wrapKey(plaintext: Uint8Array, context: string): Promise<{ keyId: string; ciphertext: Uint8Array }>;
  /**
   * Unwraps what wrapKey returned. Rejects with a KeyUnavailableError (below):
   * reason 'unknown-key' when `keyId` is no longer held, 'wrong-key' when the ciphertext does not
   * open under it (altered, or another context). A plugin's refusals reach the host as the same.
   */
  unwrapKey(keyId: string, ciphertext: Uint8Array, context: string): Promise<Uint8Array>;
}

export type KeyUnavailableReason = 'unknown-key' | 'wrong-key' | 'key-manager';

/**
 * A data key that cannot be unwrapped: its key-encryption key is gone, or is not the one it was
 * wrapped with ('key-manager': the key manager itself failed). Defined with the interface, so
 * KeyManager plugins throw the very class the server catches; encryption/errors.ts re-exports it.
 */
export class KeyUnavailableError extends Error {
  override readonly name = 'KeyUnavailableError';
  constructor(
    readonly reason: KeyUnavailableReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
