// Every object-storage key Stowage uses (DESIGN.md "Object storage layout"), under bucket/prefix/:
//   backups/<b>/<b>.tar.gz, <b>-logs.gz, <b>-resource-list.json.gz, <b>-results.gz,
//               <b>-manifest.json.gz, <b>-signature.json (a signing location's),
//               stowage-backup.json (written last)
//   restores/<r>/restore-<r>-logs.gz, restore-<r>-results.gz, restore-<r>-resource-list.json.gz
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

export function backupKeys(prefix: string, backup: string): BackupKeys {
  const b = checkName('backup', backup);
  const dir = `${normalizePrefix(prefix)}${BACKUPS_DIR}${b}/`;
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

export function restoreKeys(prefix: string, restore: string): RestoreKeys {
  const r = checkName('restore', restore);
  const dir = `${normalizePrefix(prefix)}${RESTORES_DIR}${r}/`;
  return {
    dir,
    log: `${dir}restore-${r}-logs.gz`,
    results: `${dir}restore-${r}-results.gz`,
    resourceList: `${dir}restore-${r}-resource-list.json.gz`,
  };
}

/** The key a DownloadRequest target points at. */
export function downloadKey(prefix: string, kind: StoredDownloadTargetKind, name: string): string {
  switch (kind) {
    case 'BackupContents': return backupKeys(prefix, name).tarball;
    case 'BackupLog': return backupKeys(prefix, name).log;
    case 'BackupResourceList': return backupKeys(prefix, name).resourceList;
    case 'BackupResults': return backupKeys(prefix, name).results;
    case 'BackupManifest': return backupKeys(prefix, name).manifest;
    case 'RestoreLog': return restoreKeys(prefix, name).log;
    case 'RestoreResults': return restoreKeys(prefix, name).results;
    case 'RestoreResourceList': return restoreKeys(prefix, name).resourceList;
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
