// Paths inside the tarball (Velero format 1.1.0):
//   resources/<resource>[.<group>]/namespaces/<ns>/<name>.json       (classic copy)
//   resources/<resource>[.<group>]/cluster/<name>.json
//   resources/<gr>/<version>-preferredversion/namespaces/<ns>/<name>.json   (same bytes, preferred version)
//   resources/<gr>/<version>/...                                       (other versions, when backed up)
import {
  CLUSTER_DIR,
  NAMESPACED_DIR,
  PREFERRED_VERSION_SUFFIX,
  RESOURCES_DIR,
} from './format.js';

/** `deployments.apps` from ('apps', 'deployments'); the core group has no suffix: `configmaps`. */
export function groupResourceOf(group: string, resource: string): string {
  return group === '' ? resource : `${resource}.${group}`;
}

/** Splits `deployments.apps` into its group and resource (plurals never contain a dot). */
export function splitGroupResource(groupResource: string): { group: string; resource: string } {
  const dot = groupResource.indexOf('.');
  return dot < 0
    ? { group: '', resource: groupResource }
    : { group: groupResource.slice(dot + 1), resource: groupResource.slice(0, dot) };
}

/** The group of an apiVersion: `apps/v1` -> `apps`, `v1` -> ''. */
export function groupOfApiVersion(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The version of an apiVersion: `apps/v1` -> `v1`, `v1` -> `v1`. */
export function versionOfApiVersion(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
}

export function preferredVersionDir(version: string): string {
  return `${version}${PREFERRED_VERSION_SUFFIX}`;
}

/**
 * The path of an item. Without `versionDir` this is the classic copy; pass
 * `preferredVersionDir(version)` for the preferred-version copy.
 */
export function itemPath(groupResource: string, namespace: string | undefined, name: string, versionDir?: string): string {
  const base = versionDir === undefined ? `${RESOURCES_DIR}/${groupResource}` : `${RESOURCES_DIR}/${groupResource}/${versionDir}`;
  return namespace === undefined || namespace === ''
    ? `${base}/${CLUSTER_DIR}/${name}.json`
    : `${base}/${NAMESPACED_DIR}/${namespace}/${name}.json`;
}

/** A parsed item path. `version` is set for versioned copies, `preferred` for the preferred one. */
export interface ParsedItemPath {
  groupResource: string;
  namespace?: string;
  name: string;
  versionDir?: string;
  version?: string;
  preferred: boolean;
}

// Kubernetes versions: v1, v2beta1, v1alpha3.
const VERSION_DIR = /^(v\d+(?:(?:alpha|beta)\d+)?)(-preferredversion)?$/;
const GROUP_RESOURCE = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/**
 * Parses a path under `resources/`. Returns a string describing the problem when the path is under
 * `resources/` but not a well-formed item path, and null when it is not under `resources/` at all.
 * The path must already be free of `.`/`..` segments (the reader checks that first).
 */
export function parseItemPath(path: string): ParsedItemPath | string | null {
  const parts = path.split('/');
  if (parts[0] !== RESOURCES_DIR) return null;
  const rest = parts.slice(1);
  const gr = rest[0];
  if (gr === undefined || !GROUP_RESOURCE.test(gr)) return `"${gr ?? ''}" is not a resource[.group] directory`;
  let scoped = rest.slice(1);
  let versionDir: string | undefined;
  let version: string | undefined;
  let preferred = false;
  const classic = (scoped[0] === NAMESPACED_DIR && scoped.length === 3) || (scoped[0] === CLUSTER_DIR && scoped.length === 2);
  if (!classic) {
    const m = VERSION_DIR.exec(scoped[0] ?? '');
    if (!m) return `expected ${NAMESPACED_DIR}/, ${CLUSTER_DIR}/ or a version directory after ${RESOURCES_DIR}/${gr}/`;
    versionDir = scoped[0];
    version = m[1];
    preferred = m[2] !== undefined;
    scoped = scoped.slice(1);
  }
  let namespace: string | undefined;
  let file: string | undefined;
  if (scoped[0] === NAMESPACED_DIR && scoped.length === 3) {
    namespace = scoped[1];
    file = scoped[2];
    if (namespace === '') return 'empty namespace directory';
  } else if (scoped[0] === CLUSTER_DIR && scoped.length === 2) {
    file = scoped[1];
  } else {
    return `expected ${NAMESPACED_DIR}/<namespace>/<name>.json or ${CLUSTER_DIR}/<name>.json`;
  }
  if (file === undefined || !file.endsWith('.json') || file.length === '.json'.length) return 'item file name must be <name>.json';
  const name = file.slice(0, -'.json'.length);
  const parsed: ParsedItemPath = { groupResource: gr, name, preferred };
  if (namespace !== undefined) parsed.namespace = namespace;
  if (versionDir !== undefined) parsed.versionDir = versionDir;
  if (version !== undefined) parsed.version = version;
  return parsed;
}
