// Constants of the tarball format (Velero's format 1.1.0, so Velero tools can read our backups).

/** The format version this code writes into `metadata/version`. */
export const FORMAT_VERSION = '1.1.0';

export const METADATA_VERSION_PATH = 'metadata/version';
export const RESOURCES_DIR = 'resources';
export const NAMESPACED_DIR = 'namespaces';
export const CLUSTER_DIR = 'cluster';
/** Suffix of the directory holding the copy of an item at its API group's preferred version. */
export const PREFERRED_VERSION_SUFFIX = '-preferredversion';

/**
 * Versions this reader accepts: the 1.x line (1, 1.0.0, 1.1.0, ...). Minor versions of the format
 * only add files or directories, so a newer 1.x archive is still readable; a major change is not.
 */
export function isSupportedFormatVersion(v: string): boolean {
  return /^1(\.\d+){0,2}$/.test(v);
}
