// Why a backup's signature does not hold, with a message naming the backup and the cause; `reason`
// lets callers and tests tell the cases apart.
export class SignatureError extends Error {
  override readonly name = 'SignatureError';
  constructor(
    readonly reason: 'missing' | 'malformed' | 'unknown-key' | 'bad-signature' | 'mismatch' | 'no-private-key',
    message: string,
  ) {
    super(message);
  }
}
