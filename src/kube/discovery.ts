// Discovery's merge: every group version's resource list, folded into one entry per group-resource
// at the version it is read at (see chooseVersion), with every version that serves it. Pure.
import { apiVersionOf, groupResourceOf, type ApiResource } from './resources.js';
import { chooseVersion, compareVersionPriority } from './versions.js';

/** One entry of a group version's resource list (`GET /apis/<group>/<version>`). */
export interface DiscoveredEntry {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs?: string[];
  shortNames?: string[];
  singularName?: string;
}

/** A group's resource lists, one per version that answered. */
export interface GroupLists {
  group: string;
  /** The group's preferred version, from `/apis`. */
  preferred: string | undefined;
  /** Versions in the order `/apis` gave them, with their resources (subresources included; they are dropped here). */
  lists: { version: string; resources: readonly DiscoveredEntry[] }[];
}

/** One ApiResource per group-resource, in group order, then in the order the resources were first seen. */
export function mergeDiscovery(groups: readonly GroupLists[]): ApiResource[] {
  const out: ApiResource[] = [];
  for (const g of groups) {
    const byName = new Map<string, { byVersion: Map<string, DiscoveredEntry> }>();
    // The preferred version's list first, so the group's resources keep that list's order.
    const lists = [...g.lists].sort((a, b) => Number(b.version === g.preferred) - Number(a.version === g.preferred));
    for (const { version, resources } of lists) {
      for (const r of resources) {
        if (r.name.includes('/')) continue;
        let slot = byName.get(r.name);
        if (slot === undefined) byName.set(r.name, (slot = { byVersion: new Map() }));
        slot.byVersion.set(version, r);
      }
    }
    for (const [name, { byVersion }] of byName) {
      const versions = [...byVersion.keys()].sort(compareVersionPriority);
      const version = chooseVersion(g.preferred, versions);
      const r = byVersion.get(version) as DiscoveredEntry;
      out.push({
        group: g.group,
        version,
        resource: name,
        kind: r.kind,
        namespaced: r.namespaced,
        verbs: r.verbs ?? [],
        groupResource: groupResourceOf({ group: g.group, resource: name }),
        apiVersion: apiVersionOf({ group: g.group, version }),
        shortNames: r.shortNames ?? [],
        singularName: r.singularName || r.kind.toLowerCase(),
        versions,
      });
    }
  }
  return out;
}
