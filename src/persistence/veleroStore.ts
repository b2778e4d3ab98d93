// A location whose bucket holds Velero's backups, read through the BackupStore interface. Velero's
// keys for a backup's tarball, log and resource list are Stowage's own (backups/<b>/<b>.tar.gz,
// <b>-logs.gz, <b>-resource-list.json.gz); what marks a backup whole is velero-backup.json (a
// velero.io/v1 Backup, plain JSON) instead of stowage-backup.json, and there is no manifest.
// Stowage never writes into such a bucket: every write and delete of this store rejects, so no
// controller path can touch it, whatever it asks for.
import type { DownloadTargetKind } from '../apis/v1/index.js';
import { errorMessage } from '../util/errors.js';
import { mapLimit } from '../util/concurrency.js';
import { createBackupStore, LocationValidationError, MAX_METADATA_BYTES, type BackupStore, type BackupStoreOptions } from './backupStore.js';
import { parseJson, readAllCapped } from './codec.js';
import { BACKUP_METADATA_FILE, BACKUPS_DIR, backupKeys, normalizePrefix, relativeDir } from './layout.js';
import type { RunResults, ScopedMessages } from './results.js';

export const VELERO_METADATA_FILE = 'velero-backup.json';
/** The directories Velero keeps at the top level of its prefix (its object store layout); kopia/ and restic/ hold volume data. */
export const VELERO_TOP_LEVEL_DIRS: readonly string[] = ['backups/', 'restores/', 'restic/', 'kopia/', 'metadata/', 'plugins/'];
/** How many backup directories layout detection looks into (in name order): enough to tell, bounded for a huge bucket. */
export const DETECTION_SAMPLE = 20;

export class VeleroWriteRefusedError extends Error {
  override readonly name = 'VeleroWriteRefusedError';
}

export interface VeleroStore extends BackupStore {
  readonly velero: true;
  /** velero-backup.json of `backup`, parsed; undefined when there is none. */
  getVeleroBackup(backup: string): Promise<unknown>;
}

export function isVeleroStore(store: BackupStore): store is VeleroStore {
  return (store as Partial<VeleroStore>).velero === true;
}

export function veleroMetadataKey(prefix: string, backup: string): string {
  return `${backupKeys(prefix, backup).dir}${VELERO_METADATA_FILE}`;
}

/**
 * Velero's backup results (`{velero: [], cluster: [], namespaces: {}}` per kind) in Stowage's
 * form: Velero's own messages count as the cluster's.
 */
function fromVeleroResults(v: unknown): RunResults {
  const scoped = (x: unknown): ScopedMessages => {
    const o = typeof x === 'object' && x !== null ? (x as Record<string, unknown>) : {};
    const strings = (l: unknown): string[] => (Array.isArray(l) ? l.filter((m): m is string => typeof m === 'string') : []);
    const ns = typeof o.namespaces === 'object' && o.namespaces !== null ? (o.namespaces as Record<string, unknown>) : {};
    return { cluster: [...strings(o.velero), ...strings(o.cluster)], namespaces: Object.fromEntries(Object.entries(ns).map(([k, l]) => [k, strings(l)])) };
  };
  const o = typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  return { warnings: scoped(o.warnings), errors: scoped(o.errors) };
}

export function createVeleroStore(opts: BackupStoreOptions): VeleroStore {
  const { objectStore: os, bucket } = opts;
  const prefix = normalizePrefix(opts.prefix);
  const concurrency = opts.concurrency ?? 8;
  const inner = createBackupStore({ ...opts, key: 'unencrypted', fullNames: true });
  const where = `bucket "${bucket}"${prefix === '' ? '' : ` under prefix "${prefix}"`}`;
  const refuse = (what: string) => (): Promise<never> =>
    Promise.reject(new VeleroWriteRefusedError(`${where} holds Velero's backups, and Stowage never writes into it: ${what} refused`));
  return {
    ...inner,
    velero: true,
    // Velero's backups are never encrypted by Stowage: the key stays 'unencrypted' whatever is asked.
    withKey: () => createVeleroStore(opts),
    putTarball: refuse('writing a backup tarball'),
    putLog: refuse('writing a backup log'),
    putResourceList: refuse('writing a resource list'),
    putResults: refuse('writing backup results'),
    putManifest: refuse('writing a manifest'),
    putBackupMetadata: refuse('writing backup metadata'),
    completeBackup: refuse('writing a backup'),
    deleteBackup: refuse('deleting a backup'),
    putRestoreLog: refuse('writing a restore log'),
    putRestoreResults: refuse('writing restore results'),
    putRestoreResourceList: refuse('writing a restore resource list'),
    completeRestore: refuse("writing a restore's artifacts"),
    deleteRestore: refuse("deleting a restore's artifacts"),
    // Not Stowage's backups: no stowage-backup.json and no manifest, even if a file of that name is there.
    getBackupMetadata: () => Promise.resolve(undefined),
    getBackupEnvelope: () => Promise.resolve(undefined),
    getManifest: () => Promise.resolve(undefined),
    getManifestStream: () => Promise.resolve(undefined),
    async getResults(b) {
      const raw = await inner.getResults(b);
      return raw === undefined ? undefined : fromVeleroResults(raw);
    },
    async getVeleroBackup(b) {
      const k = veleroMetadataKey(prefix, b);
      let stream: AsyncIterable<Uint8Array>;
      try {
        stream = await os.getObject(bucket, k);
      } catch (err) {
        if ((err as { code?: unknown }).code === 'NotFound') return undefined;
        throw err;
      }
      return parseJson(await readAllCapped(stream, MAX_METADATA_BYTES, k), k);
    },
    async listBackupNames() {
      const under = `${prefix}${BACKUPS_DIR}`;
      const names = (await os.listCommonPrefixes(bucket, under, '/')).map((d) => relativeDir(d, under)).filter((n) => n !== '' && !n.includes('/'));
      const whole = await mapLimit(names, concurrency, (n) => os.objectExists(bucket, veleroMetadataKey(prefix, n)));
      return names.filter((_, i) => whole[i]).sort();
    },
    async validate() {
      const dirs = await listTopLevel(opts);
      const unknown = dirs.filter((d) => !VELERO_TOP_LEVEL_DIRS.includes(d));
      if (unknown.length > 0) {
        throw new LocationValidationError(
          `${where} holds ${unknown.map((d) => `"${d}"`).join(', ')} at its top level, which Velero's layout does not have; ` +
            `a Velero location holds only ${VELERO_TOP_LEVEL_DIRS.join(', ')}`,
        );
      }
    },
  };
}

/** The top-level directories of the location's prefix (`backups/`), sorted; rejects naming the bucket when it is unreachable. */
async function listTopLevel(opts: BackupStoreOptions): Promise<string[]> {
  const prefix = normalizePrefix(opts.prefix);
  try {
    return (await opts.objectStore.listCommonPrefixes(opts.bucket, prefix, '/')).map((d) => `${relativeDir(d, prefix)}/`).sort();
  } catch (err) {
    throw new LocationValidationError(`bucket "${opts.bucket}"${prefix === '' ? '' : ` under prefix "${prefix}"`} is not reachable: ${errorMessage(err)}`, { cause: err });
  }
}

export interface DetectedLayout {
  layout: 'Stowage' | 'Velero';
  reason: string;
}

/**
 * Whose layout the bucket holds, for a location that does not say (spec.velero unset). Velero's
 * when a backup directory (of the first DETECTION_SAMPLE) has velero-backup.json and none of them
 * has stowage-backup.json, or when Velero's own top-level directories are there and no Stowage
 * backup is. Anything else (an empty bucket included) is Stowage's.
 */
export async function detectLayout(opts: BackupStoreOptions): Promise<DetectedLayout> {
  const { objectStore: os, bucket } = opts;
  const prefix = normalizePrefix(opts.prefix);
  const top = await listTopLevel(opts);
  const under = `${prefix}${BACKUPS_DIR}`;
  // backups/ is listed whatever the top level showed: some S3-compatible stores leave directories out of a delimited listing of the root.
  const names = (await os.listCommonPrefixes(bucket, under, '/')).map((d) => relativeDir(d, under)).filter((n) => n !== '' && !n.includes('/')).sort().slice(0, DETECTION_SAMPLE);
  const markers = await mapLimit(names, opts.concurrency ?? 8, async (n) => ({
    name: n,
    stowage: await os.objectExists(bucket, `${backupKeys(prefix, n).dir}${BACKUP_METADATA_FILE}`),
    velero: await os.objectExists(bucket, veleroMetadataKey(prefix, n)),
  }));
  const ours = markers.find((m) => m.stowage);
  if (ours !== undefined) return { layout: 'Stowage', reason: `detected: backups/${ours.name}/${BACKUP_METADATA_FILE} is Stowage's` };
  const theirs = markers.find((m) => m.velero);
  if (theirs !== undefined) return { layout: 'Velero', reason: `detected: backups/${theirs.name}/${VELERO_METADATA_FILE} is Velero's, and no backup here is Stowage's` };
  const veleroDir = top.find((d) => VELERO_TOP_LEVEL_DIRS.includes(d) && d !== BACKUPS_DIR && d !== 'restores/');
  if (veleroDir !== undefined) return { layout: 'Velero', reason: `detected: Velero's top-level directory "${veleroDir}" is there, and no backup here is Stowage's` };
  return { layout: 'Stowage', reason: 'detected: no Velero backup found' };
}

/** Why a download target of a Velero backup (or of a restore from one) does not exist, or undefined when Velero's layout has it. */
export function veleroMissingArtifact(kind: DownloadTargetKind, name: string): string | undefined {
  if (kind === 'BackupManifest') return `backup "${name}" was made by Velero, which writes no manifest`;
  if (kind.startsWith('Restore')) {
    return `restore "${name}" read a backup in a Velero location, which Stowage never writes into, so its artifacts were not uploaded: ` +
      'its log lines are in the Stowage server\'s log, and its warnings and errors in its status.messages';
  }
  return undefined;
}
