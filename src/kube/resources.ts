// Resource coordinates, URL paths and name resolution. Pure functions, no I/O.

/** Enough to address a resource: what the DynamicClient methods take. */
export interface ResourceRef {
  /** '' for the core group. */
  group: string;
  version: string;
  /** Plural name, e.g. `deployments`. */
  resource: string;
  /** When false, namespaces passed to the client are ignored. Defaults to true when a namespace is given. */
  namespaced?: boolean;
}

/**
 * A resource found by discovery, at the version it is read at: its group's preferred version when
 * that serves it, else the highest-priority version that does (kube/versions.ts).
 */
export interface ApiResource extends ResourceRef {
  kind: string;
  namespaced: boolean;
  verbs: string[];
  /** `deployments.apps`, or `configmaps` for the core group. */
  groupResource: string;
  /** `apps/v1`, or `v1` for the core group. */
  apiVersion: string;
  shortNames: string[];
  singularName: string;
  /**
   * Every version that serves this group-resource, highest priority first (`version` among them).
   * Absent in hand-made entries: then `version` alone.
   */
  versions?: string[];
}

/** Every version serving the resource, highest priority first. */
export function servedVersions(r: Pick<ApiResource, 'version' | 'versions'>): readonly string[] {
  return r.versions ?? [r.version];
}

/** A Kubernetes object as JSON; every typed object (apis/v1 kinds included) is assignable to it. */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
};

export function groupResourceOf(ref: { group: string; resource: string }): string {
  return ref.group === '' ? ref.resource : `${ref.resource}.${ref.group}`;
}

export function apiVersionOf(ref: { group: string; version: string }): string {
  return ref.group === '' ? ref.version : `${ref.group}/${ref.version}`;
}

/** `/api/v1/namespaces/ns/pods/name/status` and friends. */
export function resourcePath(ref: ResourceRef, namespace?: string, name?: string, subresource?: string): string {
  let p = ref.group === '' ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`;
  if (namespace !== undefined && namespace !== '' && ref.namespaced !== false) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${ref.resource}`;
  if (name !== undefined) {
    if (name === '') throw new Error(`an empty name was given for ${groupResourceOf(ref)}`);
    p += `/${encodeURIComponent(name)}`;
  }
  if (subresource !== undefined) p += `/${subresource}`;
  return p;
}

/**
 * Finds a discovered resource by the names a user may type: plural (`deployments`), group-resource
 * (`deployments.apps`), singular, kind (case-insensitive) or short name (`deploy`). An unqualified
 * name that several groups serve resolves to the core group first, then the first match.
 */
export function resolveResource(resources: readonly ApiResource[], name: string): ApiResource | undefined {
  const n = name.toLowerCase();
  const exact = resources.find((r) => r.groupResource === n);
  if (exact !== undefined) return exact;
  const dot = n.indexOf('.');
  if (dot > 0) {
    const [head, group] = [n.slice(0, dot), n.slice(dot + 1)];
    const inGroup = resources.filter((r) => r.group === group);
    return inGroup.find((r) => matchesShortName(r, head));
  }
  const matches = resources.filter((r) => matchesShortName(r, n));
  return matches.find((r) => r.group === '') ?? matches[0];
}

function matchesShortName(r: ApiResource, n: string): boolean {
  return r.resource === n || r.singularName === n || r.kind.toLowerCase() === n || r.shortNames.includes(n);
}
