/** Why an archive was refused. Stable codes: the restore controller and tests match on them. */
export type ArchiveErrorReason =
  | 'corrupt'
  | 'path-traversal'
  | 'absolute-path'
  | 'invalid-path'
  | 'link-entry'
  | 'unsupported-entry'
  | 'entry-too-large'
  | 'total-size-exceeded'
  | 'too-many-entries'
  | 'duplicate-entry'
  | 'missing-version'
  | 'unknown-version'
  | 'invalid-json'
  | 'invalid-item'
  | 'path-mismatch'
  | 'conflicting-copies';

/** A refused or unreadable archive. The message names the offending entry where there is one. */
export class ArchiveError extends Error {
  override readonly name = 'ArchiveError';
  constructor(
    readonly reason: ArchiveErrorReason,
    message: string,
    readonly entry?: string,
  ) {
    super(message);
  }
}

export function isArchiveError(err: unknown): err is ArchiveError {
  return err instanceof ArchiveError;
}
