// Validation of object keys and bucket names for the filesystem store: nothing may escape the root.
import { LONG_NAME_PREFIX } from './longNames.js';

export class UnsafeKeyError extends Error {
  override readonly name = 'UnsafeKeyError';
}

/** Prefix of in-progress upload files; keys may not use it, and listings skip it. */
export const TEMP_PREFIX = '.stowage-tmp-';

export function checkBucket(bucket: string): void {
  if (bucket === '' || bucket === '.' || bucket === '..' || /[/\\\0]/.test(bucket)) {
    throw new UnsafeKeyError(`bucket name ${JSON.stringify(bucket)} is not allowed (no slashes, not "." or "..")`);
  }
}

/** The key's path segments; throws for keys that are empty, absolute, or climb out with "..". */
export function keySegments(key: string): string[] {
  const bad = (why: string): never => {
    throw new UnsafeKeyError(`object key ${JSON.stringify(key)} is refused: ${why}`);
  };
  if (key === '') bad('it is empty');
  if (key.includes('\0')) bad('it contains a NUL byte');
  if (key.startsWith('/')) bad('it is absolute');
  if (key.includes('\\')) bad('it contains a backslash');
  const segments = key.split('/');
  for (const s of segments) {
    if (s === '..' || s === '.') bad(`it contains a "${s}" segment`);
    if (s === '') bad('it contains an empty segment');
    if (s.startsWith(TEMP_PREFIX)) bad(`segments may not start with ${TEMP_PREFIX}`);
    if (s.startsWith(LONG_NAME_PREFIX)) bad(`segments may not start with ${LONG_NAME_PREFIX}`);
  }
  return segments;
}
