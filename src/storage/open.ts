// A location's store as every part of the server opens it: through the plugin pool with the
// location's config and credentials (every provider, built in or not, is set up the same way:
// objectStoreConfig), refusing writes where Stowage writes nothing, and keyed for a backup.
import type winston from 'winston';
import type { Backup, BackupStorageLocation } from '../apis/v1/index.js';
import type { KubeObject } from '../kube/index.js';
import { createBackupStore, type BackupStore } from '../persistence/backupStore.js';
import { createVeleroStore } from '../persistence/veleroStore.js';
import type { ObjectStore, PluginConfig, RunIdentity } from '../plugin/api/index.js';
import type { ResourceList } from '../persistence/results.js';
import { writeCredentialFile, type PluginHandle, type RunCallOptions } from '../plugin/host/index.js';
import type { StorageContext, StoreContext } from './context.js';
import { keyedForBackup, unencryptedRefusal } from './keys.js';
import { verifyStoredSignature, type VerifiedSignature } from './signatures.js';

type Secret = KubeObject & { data?: Record<string, string> };

export function isReadOnly(bsl: BackupStorageLocation): boolean {
  return bsl.spec.accessMode === 'ReadOnly';
}

/**
 * Whether the location's bucket holds Velero's backups (read only: Stowage never writes there):
 * spec.velero when set, else what its validation detected (status.layout).
 */
export function isVeleroLocation(bsl: BackupStorageLocation): boolean {
  const v = bsl.spec.velero;
  if (v === true || v === false) return v;
  return bsl.status?.layout === 'Velero';
}

/** Why a backup cannot be written to a Velero location. */
export function veleroLocationRefusal(bsl: BackupStorageLocation): string {
  const why = bsl.spec.velero === true ? 'spec.velero is true' : (bsl.status?.layoutReason ?? 'detected at validation');
  return `backup storage location "${bsl.metadata.name}" holds Velero's backups (${why}): Stowage only reads a Velero location and never writes into it, so backups cannot be stored there`;
}

/**
 * Why Stowage writes nothing into `bsl` (undefined: it is Stowage's own writable location). A
 * Velero location is another program's, and a ReadOnly one is read only by its owner's word: no
 * put, delete or multipart abort reaches either (openObjectStore refuses them).
 */
export function writeRefusal(bsl: BackupStorageLocation): string | undefined {
  if (isVeleroLocation(bsl)) return `backup storage location "${bsl.metadata.name}" holds Velero's backups, which Stowage never writes into`;
  if (isReadOnly(bsl)) return `backup storage location "${bsl.metadata.name}" is ReadOnly, so Stowage writes nothing into it`;
  return undefined;
}

export class LocationWriteRefusedError extends Error {
  override readonly name = 'LocationWriteRefusedError';
}

/**
 * `store` with every write refused (putObject and deleteObject throw `reason`): the one place that
 * keeps a ReadOnly or Velero location untouched, whatever a controller asks. The object store
 * plugin sweeps incomplete uploads only at its first write, so it never sweeps there either.
 */
export function refuseWrites(store: ObjectStore, reason: string): ObjectStore {
  const refused = new Set<PropertyKey>(['putObject', 'deleteObject']);
  return new Proxy(store, {
    get(target, prop) {
      if (refused.has(prop)) return (_bucket: string, key: string) => Promise.reject(new LocationWriteRefusedError(`not writing ${key}: ${reason}`));
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * Writes the credential Secret's key to a private file for the location and returns its path
 * (plugin/host/credentialFiles.ts: named by a hash of the content, removed with the location).
 */
async function credentialsFile(ctx: StoreContext, bsl: BackupStorageLocation): Promise<string | undefined> {
  const ref = bsl.spec.credential;
  if (ref === undefined) return undefined;
  const secret = await ctx.client.get<Secret>({ group: '', version: 'v1', resource: 'secrets', namespaced: true }, ctx.namespace, ref.name);
  const value = secret.data?.[ref.key];
  if (value === undefined) throw new Error(`credential secret ${ctx.namespace}/${ref.name} has no key "${ref.key}"`);
  return writeCredentialFile(ctx.scratchDir, bsl.metadata.name, Buffer.from(value, 'base64'));
}

/** The location's CA bundle as PEM text (the spec holds it base64-encoded; PEM itself is accepted too). */
function caCertPem(bsl: BackupStorageLocation): string | undefined {
  const v = bsl.spec.objectStorage.caCert;
  if (v === undefined || v === '') return undefined;
  if (v.includes('-----BEGIN')) return v;
  const pem = Buffer.from(v, 'base64').toString('utf8');
  if (!pem.includes('-----BEGIN')) throw new Error(`backup storage location "${bsl.metadata.name}": objectStorage.caCert is not a base64-encoded PEM bundle`);
  return pem;
}

/**
 * The Init config of the location's object store, the same keys for every provider (Velero's):
 * the location's `config`, then `bucket` and `prefix` (without surrounding "/"), `caCert` (PEM
 * text) when the location has one, and `credentialsFile`, the path of a private copy of the
 * credential Secret's key, when it names one.
 */
export async function objectStoreConfig(ctx: StoreContext, bsl: BackupStorageLocation): Promise<PluginConfig> {
  const config: PluginConfig = { ...(bsl.spec.config ?? {}) };
  config.bucket = bsl.spec.objectStorage.bucket;
  config.prefix = (bsl.spec.objectStorage.prefix ?? '').replace(/^\/+|\/+$/g, '');
  const ca = caCertPem(bsl);
  if (ca !== undefined) config.caCert = ca;
  const creds = await credentialsFile(ctx, bsl);
  if (creds !== undefined) config.credentialsFile = creds;
  return config;
}

/**
 * The location's initialised object store (through `handle`; the caller releases the handle). The
 * pool resolves the provider, Velero's names for the built-ins included. A location Stowage does not
 * write (writeRefusal) gets a store that refuses every write.
 */
export async function openObjectStore(ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation): Promise<ObjectStore> {
  const store = await handle.objectStore(bsl.spec.provider, await objectStoreConfig(ctx, bsl));
  const refusal = writeRefusal(bsl);
  return refusal === undefined ? store : refuseWrites(store, refusal);
}

/**
 * The location's BackupStore over an object store already opened for it (unencrypted; see keys.ts
 * for its keys). A Velero location's store reads Velero's layout and refuses every write.
 */
export function backupStoreOn(objectStore: ObjectStore, bsl: BackupStorageLocation, velero = isVeleroLocation(bsl)): BackupStore {
  const opts = { objectStore, bucket: bsl.spec.objectStorage.bucket, prefix: bsl.spec.objectStorage.prefix ?? '' };
  return velero ? createVeleroStore(opts) : createBackupStore(opts);
}

/** A backup's store once it is keyed and, where the location signs, its signature holds. */
export interface VerifiedStore {
  store: BackupStore;
  /** The signature that holds (undefined: the location does not sign). */
  signature: VerifiedSignature | undefined;
}

/** What verifiedFor checks besides the key and the signature. */
export interface VerifyOptions {
  /**
   * Refuse a backup that is not encrypted where the location requires encryption (keys.ts
   * unencryptedRefusal), with an UnencryptedBackupError, before its signature is read: that refusal
   * wins over a signature's.
   */
  refuseUnencrypted?: boolean;
}

/** A backup refused because it is not encrypted where its location requires it; the message says so. */
export class UnencryptedBackupError extends Error {
  override readonly name = 'UnencryptedBackupError';
}

/** A location's store opened by withBackupStore, with the plugin handle it was opened through. */
export interface OpenedLocation {
  readonly handle: PluginHandle;
  /** The location's object store (refusing every write where Stowage writes nothing). */
  readonly objectStore: ObjectStore;
  /** Its BackupStore, not keyed: what needs no backup's key (listing, deleting, markers). */
  readonly store: BackupStore;
  /** The store keyed for `backup` (keys.ts keyedForBackup): what reads a backup's sealed artifacts. */
  keyedFor(backup: Pick<Backup, 'metadata' | 'status'>): Promise<BackupStore>;
  /**
   * keyedFor, then what `opts` asks, then the backup's signature where the location signs
   * (signatures.ts), the first failure rejecting: a SignatureError says why the signature does not hold.
   */
  verifiedFor(backup: Pick<Backup, 'metadata' | 'status'>, opts?: VerifyOptions): Promise<VerifiedStore>;
}

/** How withBackupStore opens: the plugin handle's log and call options, and what an opening that fails gives instead. */
export interface OpenOptions<T> {
  /** Where the plugins' lines for this use go (a run's own log); the server log by default. */
  logger?: winston.Logger;
  /** The plugin calls' options, read at each call (a run's: aborted with it). */
  calls?: () => RunCallOptions;
  /**
   * Called, instead of rejecting, when the location's store cannot be opened (its credentials,
   * its plugin): for callers to whom that is an outcome, not an error. Errors of `use` still reject.
   */
  openFailed?: (err: unknown) => Promise<T>;
}

/**
 * Opens `bsl`'s store through a plugin handle of its own, hands it to `use`, and releases the
 * handle when `use` is done, whatever happened: every user of a location's store opens it here
 * (runs, syncs, downloads, deletions, stale runs, a restore's validation).
 */
export async function withBackupStore<T>(
  ctx: StorageContext, bsl: BackupStorageLocation, run: RunIdentity, use: (opened: OpenedLocation) => Promise<T>, opts: OpenOptions<T> = {},
): Promise<T> {
  const handle = ctx.plugins.handle(run, opts.logger ?? ctx.logger, opts.calls);
  try {
    let objectStore: ObjectStore;
    let store: BackupStore;
    try {
      objectStore = await openObjectStore(ctx, handle, bsl);
      store = backupStoreOn(objectStore, bsl);
    } catch (err) {
      if (opts.openFailed === undefined) throw err;
      return await opts.openFailed(err);
    }
    const keyedFor = (backup: Pick<Backup, 'metadata' | 'status'>): Promise<BackupStore> => keyedForBackup(ctx, handle, bsl, store, backup);
    const verifiedFor = async (backup: Pick<Backup, 'metadata' | 'status'>, v: VerifyOptions = {}): Promise<VerifiedStore> => {
      const name = backup.metadata.name ?? '';
      const keyed = await keyedFor(backup);
      const refusal = v.refuseUnencrypted === true ? unencryptedRefusal(bsl, name, keyed.key) : undefined;
      if (refusal !== undefined) throw new UnencryptedBackupError(refusal);
      return { store: keyed, signature: await verifyStoredSignature(ctx, bsl, keyed, name) };
    };
    return await use({ handle, objectStore, store, keyedFor, verifiedFor });
  } finally {
    handle.release();
  }
}

/** The resource list backup `backup` stored in `bsl` (undefined when it holds none). */
export function readStoredResourceList(
  ctx: StorageContext, bsl: BackupStorageLocation, backup: Pick<Backup, 'metadata' | 'status'>, run: RunIdentity,
): Promise<ResourceList | undefined> {
  return withBackupStore(ctx, bsl, run, async (o) => (await o.keyedFor(backup)).getResourceList(backup.metadata.name ?? ''));
}
