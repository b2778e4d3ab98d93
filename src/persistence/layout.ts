// Every object-storage key Stowage uses (DESIGN.md "Object storage layout"), under bucket/prefix/:
//   backups/<b>/<b>.tar.gz, <b>-logs.gz, <b>-resource-list.json.gz, <b>-results.gz,
//               <b>-manifest.json.gz, <b>-signature.json (a signing location's),
//               stowage-backup.json (written last)
//   restores/<r>/restore-<r>-logs.gz, restore-<r>-results.gz, restore-<r>-resource-list.json.gz
// A name so long that a file name built from it would pass 255 bytes (the most a path segment may
// have on MinIO and on file systems) names its files by a short fixed form inside its folder, which
// already names the run: backups/<b>/backup.tar.gz, backup-logs.gz, ...; restores/<r>/restore-logs.gz,
// ... All of a run's files take the same form. Velero's layout always uses the full form, and what
// was written in the full form before is still read (backupStore.ts tries it second).
import type { StoredDownloadTargetKind } from '../apis/v1/index.js';

export const BACKUPS_DIR = 'backups/';
export const RESTORES_DIR = 'restores/';
/** The only directories allowed at the top level of a location's prefix. */
export const TOP_LEVEL_DIRS: readonly string[] = [BACKUPS_DIR, RESTORES_DIR];
export const BACKUP_METADATA_FILE = 'stowage-backup.json';

/** '' or 'a/b/': no leading slash, exactly one trailing slash. */
export function normalizePrefix(prefix: string | undefined): string {
  const p = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return p === '' ? '' : `${p}/`;
}

// Names come from Kubernetes object names, but a key must never escape its directory whatever it gets.
function checkName(kind: string, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\\')) {
    throw new Error(`invalid ${kind} name for an object-store key: ${JSON.stringify(name)}`);
  }
  return name;
}

export interface BackupKeys {
  dir: string;
  tarball: string;
  log: string;
  resourceList: string;
  results: string;
  manifest: string;
  /** The manifest's signature (a signing location's backups), written before stowage-backup.json. */
  signature: string;
  /** stowage-backup.json: its presence marks a whole backup. */
  metadata: string;
}

export interface RestoreKeys {
  dir: string;
  log: string;
  results: string;
  resourceList: string;
}

/** The most bytes a key segment may have on the stores Stowage is tested on (MinIO, file systems). */
export const MAX_SEGMENT_BYTES = 255;
/** The most bytes an object key may have (S3's limit, which MinIO keeps too). */
export const MAX_KEY_BYTES = 1024;

/**
 * Why a run's keys cannot be stored (a key or one of its segments too long for the store), or
 * undefined when they can. A run checks this before it writes anything to the cluster.
 */
export function unstorableKeys(kind: 'backup' | 'restore', keys: readonly string[]): string | undefined {
  const bytes = Math.max(0, ...keys.map((k) => Buffer.byteLength(k)));
  if (bytes > MAX_KEY_BYTES) {
    return `its files cannot be stored: a key would be ${bytes} bytes long (the location's prefix, the ${kind}'s name and a file name), more than the ${MAX_KEY_BYTES} bytes an object key may have; use a shorter ${kind} name or a location with a shorter prefix`;
  }
  for (const key of keys) {
    const seg = key.split('/').find((x) => Buffer.byteLength(x) > MAX_SEGMENT_BYTES);
    if (seg !== undefined) {
      // Names and file names always fit (the short form above), so the part is the prefix's; it is quoted by its head to say which.
      return `its files cannot be stored: a part of the key between slashes ("${seg.slice(0, 24)}…") would be ${Buffer.byteLength(seg)} bytes long, more than the ${MAX_SEGMENT_BYTES} bytes a store may take; use a location whose prefix has shorter parts`;
    }
  }
  return undefined;
}

/** The longest file-name suffixes the layout appends to a run's name. */
const LONGEST_BACKUP_FILE = (b: string): string => `${b}-resource-list.json.gz`;
const LONGEST_RESTORE_FILE = (r: string): string => `restore-${r}-resource-list.json.gz`;

/**
 * 'full': every file is named by the run's name (Velero's layout, and Stowage's for names that fit).
 * 'auto': the short fixed form when a full file name would not fit in a segment.
 */
export type KeyForm = 'auto' | 'full';

/** Whether a backup's files are named by the short fixed form (its name is too long for the full one). */
export function shortBackupFiles(backup: string): boolean {
  return Buffer.byteLength(LONGEST_BACKUP_FILE(backup)) > MAX_SEGMENT_BYTES;
}

/** Whether a restore's files are named by the short fixed form. */
export function shortRestoreFiles(restore: string): boolean {
  return Buffer.byteLength(LONGEST_RESTORE_FILE(restore)) > MAX_SEGMENT_BYTES;
}

export function backupKeys(prefix: string, backup: string, form: KeyForm = 'auto'): BackupKeys {
  const name = checkName('backup', backup);
  const dir = `${normalizePrefix(prefix)}${BACKUPS_DIR}${name}/`;
  const b = form === 'auto' && shortBackupFiles(name) ? 'backup' : name;
  return {
    dir,
    tarball: `${dir}${b}.tar.gz`,
    log: `${dir}${b}-logs.gz`,
    resourceList: `${dir}${b}-resource-list.json.gz`,
    results: `${dir}${b}-results.gz`,
    manifest: `${dir}${b}-manifest.json.gz`,
    signature: `${dir}${b}-signature.json`,
    metadata: `${dir}${BACKUP_METADATA_FILE}`,
  };
}

export function restoreKeys(prefix: string, restore: string, form: KeyForm = 'auto'): RestoreKeys {
  const name = checkName('restore', restore);
  const dir = `${normalizePrefix(prefix)}${RESTORES_DIR}${name}/`;
  const stem = form === 'auto' && shortRestoreFiles(name) ? 'restore' : `restore-${name}`;
  return {
    dir,
    log: `${dir}${stem}-logs.gz`,
    results: `${dir}${stem}-results.gz`,
    resourceList: `${dir}${stem}-resource-list.json.gz`,
  };
}

/** The key a DownloadRequest target points at. */
export function downloadKey(prefix: string, kind: StoredDownloadTargetKind, name: string, form: KeyForm = 'auto'): string {
  switch (kind) {
    case 'BackupContents': return backupKeys(prefix, name, form).tarball;
    case 'BackupLog': return backupKeys(prefix, name, form).log;
    case 'BackupResourceList': return backupKeys(prefix, name, form).resourceList;
    case 'BackupResults': return backupKeys(prefix, name, form).results;
    case 'BackupManifest': return backupKeys(prefix, name, form).manifest;
    case 'RestoreLog': return restoreKeys(prefix, name, form).log;
    case 'RestoreResults': return restoreKeys(prefix, name, form).results;
    case 'RestoreResourceList': return restoreKeys(prefix, name, form).resourceList;
  }
}

/**
 * The "directory" name a listCommonPrefixes result stands for, relative to `under`. Stores may
 * return full keys (`pre/backups/b1/`, as S3 does) or names relative to the listed prefix (`b1/`).
 */
export function relativeDir(entry: string, under: string): string {
  const rel = under !== '' && entry.startsWith(under) ? entry.slice(under.length) : entry;
  return rel.replace(/\/+$/, '');
}
