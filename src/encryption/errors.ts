// What goes wrong reading an encrypted object or unwrapping its key, each with a message that says
// which object and why; `reason` lets callers and tests tell the cases apart.
export class DecryptionError extends Error {
  override readonly name = 'DecryptionError';
  constructor(
    readonly reason: 'not-encrypted' | 'malformed' | 'truncated' | 'reordered' | 'tampered',
    message: string,
  ) {
    super(message);
  }
}

/** A data key that cannot be unwrapped; defined beside the KeyManager interface, which plugins implement. */
export { KeyUnavailableError } from '../plugin/api/keyManager.js';
