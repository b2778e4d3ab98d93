// Every resource the apiserver serves, found independently of the product's discovery (so a test can
// check the product against it): one entry per group and resource, at the group's preferred version
// when that version serves it, else at the served version of highest Kubernetes priority.
import type { DynamicClient, ResourceRef } from '../../src/kube/index.js';

export interface ServedResource extends ResourceRef {
  kind: string;
  namespaced: boolean;
  verbs: string[];
  /** Every version that serves this resource, highest priority first. */
  versions: string[];
}

interface ApiGroupList {
  groups: { name: string; versions: { version: string }[]; preferredVersion?: { version: string } }[];
}
interface ApiResourceList {
  resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[];
}

/** Kubernetes version priority: GA > beta > alpha, then higher numbers first; others last, by name. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string): [number, number, number] | undefined => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (m === null) return undefined;
    const stage = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
    return [stage, Number(m[1]), Number(m[3] ?? 0)];
  };
  const pa = parse(a);
  const pb = parse(b);
  if (pa === undefined || pb === undefined) return pa !== undefined ? -1 : pb !== undefined ? 1 : a.localeCompare(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pb[i] ?? 0) - (pa[i] ?? 0);
  return 0;
}

export async function servedResources(client: DynamicClient): Promise<ServedResource[]> {
  const core = await client.request<{ versions: string[] }>({ method: 'GET', path: '/api' });
  const groups = await client.request<ApiGroupList>({ method: 'GET', path: '/apis' });
  const all = [
    { name: '', versions: core.versions, preferred: core.versions[0] ?? 'v1' },
    ...groups.groups.map((g) => ({ name: g.name, versions: g.versions.map((v) => v.version), preferred: g.preferredVersion?.version ?? '' })),
  ];
  const out: ServedResource[] = [];
  for (const g of all) {
    const byResource = new Map<string, { kind: string; namespaced: boolean; verbs: string[]; versions: string[] }>();
    for (const v of g.versions) {
      const list = await client.request<ApiResourceList>({ method: 'GET', path: g.name === '' ? `/api/${v}` : `/apis/${g.name}/${v}` });
      for (const r of list.resources) {
        if (r.name.includes('/')) continue; // subresources
        const e = byResource.get(r.name) ?? { kind: r.kind, namespaced: r.namespaced, verbs: r.verbs, versions: [] };
        e.versions.push(v);
        byResource.set(r.name, e);
      }
    }
    for (const [resource, e] of byResource) {
      const versions = [...e.versions].sort(compareVersions);
      const version = versions.includes(g.preferred) ? g.preferred : versions[0] ?? g.preferred;
      out.push({ group: g.name, version, resource, kind: e.kind, namespaced: e.namespaced, verbs: e.verbs, versions });
    }
  }
  return out;
}

/** The resource of `kind` at exactly `apiVersion`, or undefined when that version does not serve it. */
export function resourceAt(resources: readonly ServedResource[], apiVersion: string, kind: string): ResourceRef & { namespaced: boolean } | undefined {
  const slash = apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = apiVersion.slice(slash + 1);
  const r = resources.find((x) => x.group === group && x.kind === kind && x.versions.includes(version));
  return r === undefined ? undefined : { group, version, resource: r.resource, namespaced: r.namespaced };
}
