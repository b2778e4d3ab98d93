import os from 'node:os';
import path from 'node:path';

/** The Kubernetes release the local control plane runs (built by provision.sh from the Go module proxy). */
export const K8S_VERSION = '1.37.2';

/** The shared cache: $STOWAGE_CACHE_DIR, else $XDG_CACHE_HOME/stowage, else ~/.cache/stowage. */
export function cacheRoot(): string {
  return (
    process.env.STOWAGE_CACHE_DIR ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'stowage')
  );
}

/** Where this release's binaries are cached (bin/ inside it), keyed by version. */
export function cacheDir(): string {
  return path.join(cacheRoot(), `k8s-v${K8S_VERSION}`);
}
