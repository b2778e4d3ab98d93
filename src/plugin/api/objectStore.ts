/** Configuration handed to a stateful plugin's Init (a BackupStorageLocation's `config` plus credentials). */
export type PluginConfig = Record<string, string>;

/** An object store: where backups and their artifacts live (S3, a local directory, ...). */
export interface ObjectStore {
  /** Validates and stores the configuration. Called once per instance, and replayed after a restart. */
  init(config: PluginConfig): Promise<void>;
  /**
   * Streams `body` to `bucket/key`, replacing any existing object. Rejects with an error whose `code`
   * is 'Refused' when the store will never take this request (a key it cannot hold): the host then
   * gives a spooled log up instead of retrying it.
   */
  putObject(bucket: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void>;
  /** Streams the object; rejects with an error whose `code` is 'NotFound' when it does not exist. */
  getObject(bucket: string, key: string): Promise<AsyncIterable<Uint8Array>>;
  objectExists(bucket: string, key: string): Promise<boolean>;
  /** The "directories" directly under `prefix`, each ending in `delimiter`. */
  listCommonPrefixes(bucket: string, prefix: string, delimiter: string): Promise<string[]>;
  /** Every key under `prefix`. */
  listObjects(bucket: string, prefix: string): Promise<string[]>;
  deleteObject(bucket: string, key: string): Promise<void>;
  /** A URL that allows a GET of the object until `ttlSeconds` have passed. */
  createSignedURL(bucket: string, key: string, ttlSeconds: number): Promise<string>;
}
