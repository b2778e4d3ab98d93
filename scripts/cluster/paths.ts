import os from 'node:os';
import path from 'node:path';

export const K8S_VERSION = '1.20.2';

/** Where built binaries are cached: $STOWAGE_CACHE_DIR, else $XDG_CACHE_HOME/stowage, else ~/.cache/stowage. */
export function cacheDir(): string {
  const base =
    process.env.STOWAGE_CACHE_DIR ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'stowage');
  return path.join(base, `k8s-v${K8S_VERSION}`);
}
