// Loading a kubeconfig with one clear error line when it is missing or unusable.
import { KubeConfig } from '@kubernetes/client-node';

/**
 * Loads `path`, or else the usual places: $KUBECONFIG, ~/.kube/config, then the in-cluster
 * service account. Throws an Error naming the file and the problem when nothing usable is found.
 */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  const source = path ?? (process.env.KUBECONFIG ? `$KUBECONFIG (${process.env.KUBECONFIG})` : 'the default kubeconfig');
  try {
    if (path !== undefined && path !== '') kc.loadFromFile(path);
    else kc.loadFromDefault();
  } catch (err) {
    throw new Error(`invalid kubeconfig ${source}: ${(err as Error).message}`, { cause: err });
  }
  const cluster = kc.getCurrentCluster();
  // client-node falls back to an unauthenticated localhost:8080 when it finds nothing at all.
  if (path === undefined && cluster?.name === 'cluster' && cluster.server === 'http://localhost:8080' && kc.getCurrentUser()?.name === 'user') {
    throw new Error('no kubeconfig found: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account');
  }
  if (kc.getCurrentContext() === '' || kc.getCurrentContext() === undefined) throw new Error(`invalid kubeconfig ${source}: no current-context`);
  if (cluster === null) throw new Error(`invalid kubeconfig ${source}: context "${kc.getCurrentContext()}" names no known cluster`);
  try {
    new URL(cluster.server);
  } catch {
    throw new Error(`invalid kubeconfig ${source}: cluster "${cluster.name}" has an invalid server URL "${cluster.server}"`);
  }
  if (kc.getCurrentUser() === null) throw new Error(`invalid kubeconfig ${source}: context "${kc.getCurrentContext()}" names no known user`);
  return kc;
}
