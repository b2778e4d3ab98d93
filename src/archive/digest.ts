// The SHA-256 of an entry's bytes, as the manifest names it: shared by the writer and the reader.
import { hash } from 'node:crypto';

/** Hex SHA-256 in one call: a Hash object per item kept its native context until V8 collected the wrapper. */
export function sha256Hex(data: Uint8Array | string): string {
  return hash('sha256', data, 'hex');
}
