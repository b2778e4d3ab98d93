// BackupStore: backups and restores' artifacts in one location (an ObjectStore, a bucket, a prefix).
// All keys come from layout.ts. stowage-backup.json is written last and deleted first, so a backup
// is visible to sync only while it is whole. A store seals what it writes with one backup's data
// key, or not at all (sealing.ts): `withKey` gives the same location under another key.
import { createReadStream } from 'node:fs';
import type { Backup, StoredDownloadTargetKind } from '../apis/v1/index.js';
import { parseManifest, type AnyManifest, type BackupManifest } from '../archive/index.js';
import { replayableBody, type ObjectStore } from '../plugin/api/index.js';
import { errorMessage } from '../util/errors.js';
import { mapLimit } from '../util/concurrency.js';
import { parseSignatureFile, type SignatureFile } from '../signing/index.js';
import { bytesOf, gunzipCapped, gzipJson, jsonSha256, parseJson, readAllCapped, readGzipJson, sha256Of } from './codec.js';
import {
  BACKUPS_DIR, backupKeys, downloadKey, normalizePrefix, relativeDir, restoreKeys, TOP_LEVEL_DIRS, type BackupKeys, type KeyForm,
} from './layout.js';
import type { ResourceList, RunResults } from './results.js';
import { marker, openBody, openEnvelope, parseEnvelope, sealBody, type ArtifactKey, type ArtifactRef, type BackupEnvelope } from './sealing.js';

export interface BackupStoreOptions {
  objectStore: ObjectStore;
  bucket: string;
  prefix?: string;
  /** Largest JSON artifact (manifest, results, resource list, metadata) read back, inflated. Default 256 MiB. */
  maxArtifactBytes?: number;
  /** Parallel object-store calls for list/delete fan-out. Default 8. */
  concurrency?: number;
  /** What the artifacts written and read are sealed with. Default 'unencrypted'. */
  key?: ArtifactKey;
  /** Every file named by the full run name, however long (Velero's layout; layout.ts). Default false. */
  fullNames?: boolean;
}

/** What completeBackup writes; `backup` (stowage-backup.json) goes last. */
export interface BackupArtifacts {
  resourceList: ResourceList;
  results: RunResults;
  manifest?: AnyManifest;
  backup: Backup;
  /**
   * Signs the backup (a signing location's): given the SHA-256 of the manifest's and the resource
   * list's JSON as stored, the signature file, written beside them and before stowage-backup.json.
   */
  sign?: (digests: ArtifactDigests) => SignatureFile;
}

/** SHA-256 (hex) of the JSON text of the manifest and the resource list: what their inflated bytes hash to. */
export interface ArtifactDigests {
  manifestSha256: string;
  resourceListSha256: string;
}

/** What completeRestore writes under restores/<r>/. */
export interface RestoreArtifacts {
  results: RunResults;
  resourceList: ResourceList;
}

/** Which step of completeBackup failed: the message alone names it, `step` lets callers tell them apart. */
export class ArtifactWriteError extends Error {
  override readonly name = 'ArtifactWriteError';
  constructor(readonly step: 'artifacts' | 'signature' | 'beforeMarker' | 'marker', message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

export interface BackupStore {
  readonly bucket: string;
  /** Normalised prefix: '' or 'a/b/'. */
  readonly prefix: string;
  /** What this store seals and opens artifacts with: one backup's key (and its restores'), or none. */
  readonly key: ArtifactKey;
  /** The same location, sealing and opening with `key`. */
  withKey(key: ArtifactKey): BackupStore;
  /** An artifact's bytes as this store writes them (for a copy kept elsewhere first, e.g. the log spool). */
  seal(ref: ArtifactRef, body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array>;
  /** An artifact's stored bytes opened, as this store reads them. */
  open(ref: ArtifactRef, stored: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array>;
  keys(backup: string): BackupKeys;
  putTarball(backup: string, body: AsyncIterable<Uint8Array>): Promise<void>;
  /** Uploads a run log file, already gzipped by the run logger. */
  putLog(backup: string, gzFile: string): Promise<void>;
  putResourceList(backup: string, list: ResourceList): Promise<void>;
  putResults(backup: string, results: RunResults): Promise<void>;
  putManifest(backup: string, manifest: AnyManifest): Promise<void>;
  putSignature(backup: string, file: SignatureFile): Promise<void>;
  /** Writes stowage-backup.json. Call it last: it marks the backup whole. */
  putBackupMetadata(backup: string, obj: Backup): Promise<void>;
  /**
   * Resource list, results and manifest at once (each waited for), then `beforeMarker` (the
   * controller ends and uploads the run's log there), then stowage-backup.json, strictly last: any
   * failure before it leaves no marker, so the backup is never seen whole when it is not. Rejects
   * with an ArtifactWriteError naming the step.
   */
  completeBackup(backup: string, artifacts: BackupArtifacts, beforeMarker?: () => Promise<void>): Promise<void>;
  /**
   * Undefined when the backup has no stowage-backup.json. An encrypted backup's needs its key
   * (this store's); without it this rejects naming the key it needs.
   */
  getBackupMetadata(backup: string): Promise<Backup | undefined>;
  /** stowage-backup.json without opening it: the Backup, or an encrypted backup's wrapped key. Needs no key. */
  getBackupEnvelope(backup: string): Promise<BackupEnvelope | undefined>;
  getTarball(backup: string): Promise<AsyncIterable<Uint8Array>>;
  /** Undefined when the backup has no manifest (e.g. a backup made by Velero). */
  getManifest(backup: string): Promise<BackupManifest | undefined>;
  /** The manifest's JSON bytes as they are inflated (see ManifestStream); undefined when there is none. */
  getManifestStream(backup: string): Promise<AsyncIterable<Uint8Array> | undefined>;
  getResourceList(backup: string): Promise<ResourceList | undefined>;
  /** The signature file; undefined when there is none. Rejects when it is malformed (SignatureError). */
  getSignature(backup: string): Promise<SignatureFile | undefined>;
  /** SHA-256 (hex) of the inflated JSON of the manifest or the resource list, as stored; undefined when there is none. */
  artifactSha256(backup: string, artifact: 'manifest' | 'resource-list'): Promise<string | undefined>;
  getResults(backup: string): Promise<RunResults | undefined>;
  /** Names of the whole backups: those with a stowage-backup.json. */
  listBackupNames(): Promise<string[]>;
  /** Every key stored under the backup's directory (backups/<b>/), in either layout: what is left of its data. */
  storedKeys(backup: string): Promise<string[]>;
  /** Deletes stowage-backup.json first, then every other key of the backup, then the named restores' keys. */
  deleteBackup(backup: string, restores?: readonly string[]): Promise<void>;
  putRestoreLog(restore: string, gzFile: string): Promise<void>;
  putRestoreResults(restore: string, results: RunResults): Promise<void>;
  putRestoreResourceList(restore: string, list: ResourceList): Promise<void>;
  /** Results and resource list of a restore, at once (each waited for). */
  completeRestore(restore: string, artifacts: RestoreArtifacts): Promise<void>;
  getRestoreResults(restore: string): Promise<RunResults | undefined>;
  deleteRestore(restore: string): Promise<void>;
  signedURL(kind: StoredDownloadTargetKind, name: string, ttlSeconds: number): Promise<string>;
  /**
   * Checks the bucket is reachable and nothing but backups/ and restores/ sits at the top level of
   * the prefix. Rejects with a message saying which.
   */
  validate(): Promise<void>;
}

export class LocationValidationError extends Error {
  override readonly name = 'LocationValidationError';
}

export function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'NotFound';
}

/**
 * The most of a stowage-backup.json that is read: the sealed envelope (base64) of the largest
 * Backup the API server stores (about 1.5 MiB), with room to spare. Backup sync reads whatever the
 * bucket holds, so a planted giant costs it no more than this.
 */
export const MAX_METADATA_BYTES = 2.5 * 1024 * 1024;

export function createBackupStore(opts: BackupStoreOptions): BackupStore {
  const { objectStore: os, bucket } = opts;
  const key = opts.key ?? 'unencrypted';
  const prefix = normalizePrefix(opts.prefix);
  const maxBytes = opts.maxArtifactBytes ?? 256 * 1024 * 1024;
  const concurrency = opts.concurrency ?? 8;
  const where = `bucket "${bucket}"${prefix === '' ? '' : ` under prefix "${prefix}"`}`;

  const form: KeyForm = opts.fullNames === true ? 'full' : 'auto';
  const keys = (b: string): BackupKeys => backupKeys(prefix, b, form);
  // A long-named run stored before the short form (on a store with no segment limit) is read where it was written.
  const backupRead = (b: string, pick: (k: BackupKeys) => string): string[] => [...new Set([pick(keys(b)), pick(backupKeys(prefix, b, 'full'))])];
  const restoreRead = (r: string, pick: (k: ReturnType<typeof restoreKeys>) => string): string[] =>
    [...new Set([pick(restoreKeys(prefix, r, form)), pick(restoreKeys(prefix, r, 'full'))])];
  const put = (k: string, ref: ArtifactRef, body: AsyncIterable<Uint8Array>): Promise<void> => os.putObject(bucket, k, sealBody(key, ref, body));
  // Re-opened on every attempt, so the plugin host can replay the upload after a plugin restart.
  const putFile = (k: string, ref: ArtifactRef, file: string): Promise<void> => put(k, ref, replayableBody(() => createReadStream(file)));

  /** The first of `ks` that exists, read; undefined when none does. */
  async function getOptional<T>(ks: string | string[], read: (s: AsyncIterable<Uint8Array>, k: string) => Promise<T>): Promise<T | undefined> {
    for (const k of typeof ks === 'string' ? [ks] : ks) {
      let stream: AsyncIterable<Uint8Array>;
      try {
        stream = await os.getObject(bucket, k);
      } catch (err) {
        if (isNotFound(err)) continue;
        throw err;
      }
      return read(stream, k);
    }
    return undefined;
  }
  const getGzipJson = <T>(ks: string[], ref: ArtifactRef, check: (v: unknown) => T = (v) => v as T): Promise<T | undefined> =>
    getOptional(ks, async (s, k) => check(await readGzipJson(openBody(key, ref, s), maxBytes, k)));
  /** The first of `ks` that exists; the first when none does (a name that fits has only one). */
  async function existing(ks: string[]): Promise<string> {
    if (ks.length > 1) for (const k of ks) if (await os.objectExists(bucket, k)) return k;
    return ks[0] ?? '';
  }

  async function deleteAll(dir: string): Promise<void> {
    const all = await os.listObjects(bucket, dir);
    await mapLimit(all, concurrency, (k) => os.deleteObject(bucket, k));
  }

  const store: BackupStore = {
    bucket,
    prefix,
    key,
    withKey: (k) => createBackupStore({ ...opts, key: k }),
    seal: (ref, body) => sealBody(key, ref, body),
    open: (ref, stored) => openBody(key, ref, stored),
    keys,
    putTarball: (b, body) => put(keys(b).tarball, { backup: b, artifact: 'tarball' }, body),
    putLog: (b, file) => putFile(keys(b).log, { backup: b, artifact: 'log' }, file),
    putResourceList: (b, list) => put(keys(b).resourceList, { backup: b, artifact: 'resource-list' }, gzipJson(list)),
    putResults: (b, results) => put(keys(b).results, { backup: b, artifact: 'results' }, gzipJson(results)),
    putManifest: (b, m) => put(keys(b).manifest, { backup: b, artifact: 'manifest' }, gzipJson(m)),
    putSignature: (b, file) => put(keys(b).signature, { backup: b, artifact: 'signature' }, bytesOf(Buffer.from(`${JSON.stringify(file, null, 2)}\n`))),
    putBackupMetadata: async (b, obj) => os.putObject(bucket, keys(b).metadata, bytesOf(await marker(key, b, obj))),
    async completeBackup(b, a, beforeMarker) {
      // The three are independent, so they upload at once (the manifest alone is ~6 MB gzipped at 50k items).
      const artifacts = allOrFirstError('artifacts', "uploading the backup's artifacts failed", [
        store.putResourceList(b, a.resourceList),
        store.putResults(b, a.results),
        ...(a.manifest !== undefined ? [store.putManifest(b, a.manifest)] : []),
      ]);
      // The signature is made from the manifest and resource list in memory, not from their uploads,
      // so it uploads beside them: signing adds no round trip of its own before the marker.
      const signature = (async (): Promise<void> => {
        if (a.sign === undefined) return;
        try {
          if (a.manifest === undefined) throw new Error('a signed backup needs its manifest');
          await store.putSignature(b, a.sign({ manifestSha256: jsonSha256(a.manifest), resourceListSha256: jsonSha256(a.resourceList) }));
        } catch (err) {
          throw new ArtifactWriteError('signature', `signing the backup failed: ${errorMessage(err)}`, { cause: err });
        }
      })();
      await settleAll([artifacts, signature]);
      if (beforeMarker !== undefined) {
        try {
          await beforeMarker();
        } catch (err) {
          throw new ArtifactWriteError('beforeMarker', errorMessage(err), { cause: err });
        }
      }
      try {
        await store.putBackupMetadata(b, a.backup);
      } catch (err) {
        throw new ArtifactWriteError('marker', `writing stowage-backup.json failed: ${errorMessage(err)}`, { cause: err });
      }
    },
    async getBackupMetadata(b) {
      const envelope = await store.getBackupEnvelope(b);
      return envelope === undefined ? undefined : openEnvelope(key, envelope, b);
    },
    getBackupEnvelope: (b) =>
      getOptional(keys(b).metadata, async (s) => parseEnvelope(parseJson(await readAllCapped(s, Math.min(maxBytes, MAX_METADATA_BYTES), keys(b).metadata), keys(b).metadata), b)),
    async getTarball(b) {
      const ks = backupRead(b, (k) => k.tarball);
      const found = await getOptional(ks, (s) => Promise.resolve(s));
      // Not found anywhere: the current key's own NotFound, as callers expect.
      return openBody(key, { backup: b, artifact: 'tarball' }, found ?? await os.getObject(bucket, keys(b).tarball));
    },
    getManifest: (b) => getGzipJson(backupRead(b, (k) => k.manifest), { backup: b, artifact: 'manifest' }, parseManifest),
    getManifestStream: (b) => getOptional(backupRead(b, (k) => k.manifest), (s, k) => Promise.resolve(gunzipCapped(openBody(key, { backup: b, artifact: 'manifest' }, s), maxBytes, k))),
    getResourceList: (b) => getGzipJson<ResourceList>(backupRead(b, (k) => k.resourceList), { backup: b, artifact: 'resource-list' }),
    getResults: (b) => getGzipJson<RunResults>(backupRead(b, (k) => k.results), { backup: b, artifact: 'results' }),
    getSignature: (b) => getOptional(backupRead(b, (k) => k.signature), async (s) => {
      const what = `the signature of backup "${b}"`;
      return parseSignatureFile(parseJson(await readAllCapped(openBody(key, { backup: b, artifact: 'signature' }, s), MAX_METADATA_BYTES, what), what), what);
    }),
    artifactSha256: (b, artifact) => {
      const ks = backupRead(b, (k) => (artifact === 'manifest' ? k.manifest : k.resourceList));
      return getOptional(ks, (s, k) => sha256Of(gunzipCapped(openBody(key, { backup: b, artifact }, s), maxBytes, k)));
    },
    storedKeys: async (b) => (await os.listObjects(bucket, keys(b).dir)).sort(),
    async listBackupNames() {
      const under = `${prefix}${BACKUPS_DIR}`;
      const dirs = await os.listCommonPrefixes(bucket, under, '/');
      const names = dirs.map((d) => relativeDir(d, under)).filter((n) => n !== '' && !n.includes('/'));
      const whole = await mapLimit(names, concurrency, (n) => os.objectExists(bucket, keys(n).metadata));
      return names.filter((_, i) => whole[i]).sort();
    },
    async deleteBackup(b, restores = []) {
      const k = keys(b);
      // Metadata first: a half-deleted backup must not be synced back into the cluster.
      if (await os.objectExists(bucket, k.metadata)) await os.deleteObject(bucket, k.metadata);
      await deleteAll(k.dir);
      for (const r of restores) await deleteAll(restoreKeys(prefix, r).dir);
    },
    putRestoreLog: (r, file) => putFile(restoreKeys(prefix, r, form).log, { restore: r, artifact: 'log' }, file),
    putRestoreResults: (r, results) => put(restoreKeys(prefix, r, form).results, { restore: r, artifact: 'results' }, gzipJson(results)),
    putRestoreResourceList: (r, list) => put(restoreKeys(prefix, r, form).resourceList, { restore: r, artifact: 'resource-list' }, gzipJson(list)),
    completeRestore: (r, a) => allOrFirstError('artifacts', "uploading the restore's artifacts failed", [
      store.putRestoreResults(r, a.results),
      store.putRestoreResourceList(r, a.resourceList),
    ]),
    getRestoreResults: (r) => getGzipJson<RunResults>(restoreRead(r, (k) => k.results), { restore: r, artifact: 'results' }),
    deleteRestore: (r) => deleteAll(restoreKeys(prefix, r).dir),
    signedURL: async (kind, name, ttl) => os.createSignedURL(bucket, await existing([...new Set([downloadKey(prefix, kind, name, form), downloadKey(prefix, kind, name, 'full')])]), ttl),
    async validate() {
      let dirs: string[];
      try {
        dirs = await os.listCommonPrefixes(bucket, prefix, '/');
      } catch (err) {
        throw new LocationValidationError(`${where} is not reachable: ${errorMessage(err)}`, { cause: err });
      }
      const unknown = dirs.map((d) => `${relativeDir(d, prefix)}/`).filter((d) => !TOP_LEVEL_DIRS.includes(d));
      if (unknown.length > 0) {
        const list = unknown.sort().map((d) => `"${d}"`).join(', ');
        throw new LocationValidationError(
          `${where} holds unexpected ${unknown.length === 1 ? 'directory' : 'directories'} ${list} at its top level; ` +
            `only ${TOP_LEVEL_DIRS.join(' and ')} may be there (give the location its own bucket or prefix)`,
        );
      }
    },
  };
  return store;
}

/** Waits for every one to settle, then throws the first one's error: nothing is still being written when a caller hears of it. */
async function settleAll(work: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((u): u is PromiseRejectedResult => u.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** settleAll for the artifact uploads, the failure named as the artifacts step's. */
async function allOrFirstError(step: 'artifacts', what: string, uploads: Promise<void>[]): Promise<void> {
  try {
    await settleAll(uploads);
  } catch (err) {
    throw new ArtifactWriteError(step, `${what}: ${errorMessage(err)}`, { cause: err });
  }
}
