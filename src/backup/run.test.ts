// listUnits: how many LISTs a backup makes for its namespace filter (each unit is one paged LIST).
import { describe, expect, it } from 'vitest';
import { newBackup, type BackupSpec } from '../apis/v1/index.js';
import type { ApiResource } from '../kube/index.js';
import { MAX_PER_NAMESPACE_LISTS } from './collect.js';
import { newBackupRequest } from './request.js';
import { selectResources } from './resources.js';
import type { Access } from './rights.js';
import { listUnits, podsFirst } from './run.js';

const res = (resource: string, namespaced: boolean): ApiResource => ({
  group: '', version: 'v1', resource, kind: resource, namespaced, verbs: ['list', 'get', 'create'], shortNames: [], singularName: resource,
  groupResource: resource, apiVersion: 'v1',
});
// As many namespaced resource types as the local v1.20.2 control plane serves (the demo's backup
// log: "backing up 35 namespaced ... resource types"), and a few cluster-scoped ones.
const NAMESPACED = Array.from({ length: 35 }, (_, i) => res(`things${i}`, true));
const DISCOVERED = [...NAMESPACED, res('nodes', false), res('persistentvolumes', false)];
const namespaces = (n: number): string[] => Array.from({ length: n }, (_, i) => `team-${i}`);

function units(spec: BackupSpec): { units: ReturnType<typeof listUnits>; perNamespace: number; clusterWide: number } {
  const req = newBackupRequest(newBackup('b', 'stowage', spec));
  const u = listUnits(req, selectResources(DISCOVERED, req.resources, req.listClusterScoped));
  return { units: u, perNamespace: u.filter((x) => x.namespace !== undefined).length, clusterWide: u.filter((x) => x.namespace === undefined).length };
}

describe('listUnits', () => {
  it('lists each resource per namespace for a few literal namespaces', () => {
    const few = units({ includedNamespaces: namespaces(MAX_PER_NAMESPACE_LISTS) });
    expect(few.perNamespace).toBe(MAX_PER_NAMESPACE_LISTS * NAMESPACED.length);
    expect(few.clusterWide).toBe(0);
    expect(new Set(few.units.map((u) => u.namespace))).toEqual(new Set(namespaces(MAX_PER_NAMESPACE_LISTS)));
  });

  it('lists each resource once, cluster-wide, for 200 literal namespaces: 35 LISTs where one per namespace made 7,000', () => {
    const many = units({ includedNamespaces: namespaces(200) });
    // One per namespace would be 200 x 35 = 7,000 LISTs; cluster-wide (filtered locally), 35.
    expect(many.perNamespace).toBe(0);
    expect(many.clusterWide).toBe(NAMESPACED.length);
    expect(many.units.map((u) => u.res.resource)).toEqual(NAMESPACED.map((r) => r.resource));
    // The threshold is on the names left after the excludes.
    const trimmed = units({ includedNamespaces: namespaces(40), excludedNamespaces: namespaces(40).slice(0, 10) });
    expect(trimmed.perNamespace).toBe(30 * NAMESPACED.length);
  });

  it('lists cluster-wide for wildcards and for every namespace, and once more per OR selector', () => {
    expect(units({ includedNamespaces: ['team-*'] }).clusterWide).toBe(NAMESPACED.length);
    // Every namespace: cluster-scoped resources are listed too.
    expect(units({}).clusterWide).toBe(NAMESPACED.length + 2);
    const or = units({ includedNamespaces: namespaces(200), orLabelSelectors: [{ matchLabels: { app: 'a' } }, { matchLabels: { app: 'b' } }] });
    expect(or.clusterWide).toBe(2 * NAMESPACED.length);
    expect(new Set(or.units.map((u) => u.selector))).toEqual(new Set(['app=a', 'app=b']));
  });

  it('lists per namespace what the requester may list only there, however many namespaces; cluster-wide what they may list everywhere', () => {
    const req = newBackupRequest(newBackup('b', 'stowage', { includedNamespaces: namespaces(200) }));
    const selection = selectResources(DISCOVERED, req.resources, req.listClusterScoped);
    const allowed = namespaces(200).slice(0, 40);
    const access = new Map<string, Access>(NAMESPACED.map((r, i) => [r.groupResource, i === 0 ? { everywhere: true } : { everywhere: false, namespaces: allowed }]));
    const u = listUnits(req, selection, access);
    // things0 is allowed cluster-wide (one LIST); each of the other 34 once in each of the 40 namespaces it is allowed in.
    expect(u.filter((x) => x.res.resource === 'things0').map((x) => x.namespace)).toEqual([undefined]);
    expect(u.filter((x) => x.res.resource === 'things1').map((x) => x.namespace)).toEqual(allowed);
    expect(u.length).toBe(1 + 34 * 40);
  });
});

describe('podsFirst', () => {
  it('puts the pods\' LISTs in a wave of their own, before the claims\' and every other, so a claim is taken inside its pod\'s hook bracket', () => {
    const req = newBackupRequest(newBackup('b', 'stowage', { includedNamespaces: ['a', 'b'] }));
    const found = [res('persistentvolumeclaims', true), res('configmaps', true), res('pods', true)];
    const [first, rest] = podsFirst(listUnits(req, selectResources(found, req.resources, req.listClusterScoped)));
    const names = (us: readonly { res: ApiResource; namespace?: string | undefined }[]): string[] => us.map((u) => `${u.res.resource} ${u.namespace ?? ''}`).sort();
    expect(names(first)).toEqual(['pods a', 'pods b']);
    expect(names(rest)).toEqual(['configmaps a', 'configmaps b', 'persistentvolumeclaims a', 'persistentvolumeclaims b']);
  });
});
