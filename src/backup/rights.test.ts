// decideScope: what of a backup's scope the requester may list, and the messages for what is left
// out, against a fake reviewer (a table of what the requester may do). The reviews themselves go
// to a real API server in test/auth/backupRights.test.ts.
import { describe, expect, it } from 'vitest';
import type { AccessAnswer, NamespaceAccess, ResourceAccess } from '../auth/index.js';
import type { ApiResource } from '../kube/index.js';
import { decideScope, namespacesPhrase, rulesMayAllow, type ResourceRule, type ScopeQuestion } from './rights.js';

const res = (resource: string, namespaced = true, group = ''): ApiResource => ({
  group, version: 'v1', resource, kind: resource, namespaced, verbs: ['list', 'get', 'create'], shortNames: [], singularName: resource,
  groupResource: group === '' ? resource : `${resource}.${group}`, apiVersion: group === '' ? 'v1' : `${group}/v1`,
});
const SECRETS = res('secrets');
const CONFIGMAPS = res('configmaps');
const PODS = res('pods');
const NAMESPACES = res('namespaces', false);
const CLUSTERROLES = res('clusterroles', false, 'rbac.authorization.k8s.io');

/** A (caching) reviewer allowing `verb resource` where `rules` say: `list secrets@team-a`, `list configmaps@*` (everywhere), `get namespaces@team-a`. */
function fakeReviewer(rules: readonly string[]) {
  const asked: string[] = [];
  const allowed = (a: ResourceAccess): boolean => {
    const gr = a.group === '' ? a.resource : `${a.resource}.${a.group}`;
    return rules.includes(`${a.verb} ${gr}@*`) || (a.namespace !== undefined && a.namespace !== '' && rules.includes(`${a.verb} ${gr}@${a.namespace}`));
  };
  const review = (a: ResourceAccess): Promise<AccessAnswer> => {
    // Like the real reviewer, each question is asked (and listed here) once.
    const key = `${a.verb} ${a.resource}@${a.namespace ?? ''}${a.name !== undefined ? `/${a.name}` : ''}`;
    if (!asked.includes(key)) asked.push(key);
    return Promise.resolve({ allowed: allowed(a), reason: '' });
  };
  return {
    asked,
    review,
    async inNamespaces(a: Omit<ResourceAccess, 'namespace'>, namespaces: readonly string[]): Promise<NamespaceAccess> {
      if ((await review({ ...a, namespace: '' })).allowed) return { everywhere: true, allowed: [...namespaces], denied: [] };
      const ok = await Promise.all(namespaces.map(async (ns) => (await review({ ...a, namespace: ns })).allowed));
      return { everywhere: false, allowed: namespaces.filter((_, i) => ok[i]), denied: namespaces.filter((_, i) => !ok[i]) };
    },
  };
}

function question(o: Partial<ScopeQuestion> & { namedResources?: string[]; namedNamespaces?: string[] }): ScopeQuestion {
  return {
    who: 'alice', namespaced: [], cluster: [], namespaceObjects: undefined, namespaces: [], mayNameNamespaces: false,
    named: (r) => (o.namedResources ?? []).includes(r.groupResource),
    namedNamespace: (ns) => (o.namedNamespaces ?? []).includes(ns),
    ...o,
  };
}

describe('decideScope', () => {
  it('allows everything with one cluster-wide review per resource for an admin', async () => {
    const r = fakeReviewer(['list secrets@*', 'list configmaps@*', 'list pods@*', 'list namespaces@*', 'list clusterroles.rbac.authorization.k8s.io@*']);
    const d = await decideScope(question({
      namespaced: [SECRETS, CONFIGMAPS, PODS], cluster: [CLUSTERROLES], namespaceObjects: NAMESPACES,
      namespaces: ['a', 'b', 'c', 'd'], mayNameNamespaces: true,
    }), r);
    expect(d.problems).toEqual([]);
    expect(d.nothingAllowed).toBeUndefined();
    expect([...d.access.values()].every((a) => a.everywhere)).toBe(true);
    expect(d.reviews).toBe(5);
    expect(r.asked.sort()).toEqual(['list clusterroles@', 'list configmaps@', 'list namespaces@', 'list pods@', 'list secrets@']);
  });

  it('lists per namespace what is allowed only there, and leaves out team-b, named, as an error', async () => {
    const r = fakeReviewer(['list secrets@team-a', 'list configmaps@team-a', 'get namespaces@team-a']);
    const d = await decideScope(question({
      namespaced: [SECRETS, CONFIGMAPS], namespaceObjects: NAMESPACES, namespaces: ['team-a', 'team-b'],
      namedNamespaces: ['team-a', 'team-b'],
    }), r);
    expect(d.access.get('secrets')).toEqual({ everywhere: false, namespaces: ['team-a'] });
    expect(d.access.get('namespaces')).toEqual({ everywhere: false, namespaces: ['team-a'] });
    expect(d.problems).toEqual([{
      kind: 'errors', namespace: 'team-b',
      message: 'nothing backed up from namespace team-b: alice may not list secrets, list configmaps or get namespaces there',
    }]);
    // cluster-wide, then per namespace, for each of the three; the Namespace objects by name.
    expect(d.reviews).toBe(9);
    expect(r.asked).toContain('get namespaces@team-b/team-b');
  });

  it('names a resource the spec named as an error, and a resource from a wildcard as a warning', async () => {
    const r = fakeReviewer(['list configmaps@team-a', 'list pods@team-a']);
    const named = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS], namespaces: ['team-a'], namedResources: ['secrets', 'configmaps'], namedNamespaces: ['team-a'] }), r);
    expect(named.problems).toEqual([{
      kind: 'errors', namespace: 'team-a', groupResource: 'secrets', message: 'not backing up secrets in namespace team-a: alice may not list them there',
    }]);
    const wildcard = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS, PODS], namespaces: ['team-a'], namedNamespaces: ['team-a'] }), r);
    expect(wildcard.problems).toEqual([{ kind: 'warnings', namespace: 'team-a', message: 'not backing up secrets in namespace team-a: alice may not list them there' }]);
    expect(wildcard.access.get('secrets')).toEqual({ everywhere: false, namespaces: [] });
  });

  it('does not name namespaces the requester cannot list in a * backup: it counts them', async () => {
    const r = fakeReviewer(['list configmaps@team-a', 'list secrets@team-a']);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS], namespaces: ['kube-system', 'team-a', 'team-b', 'team-c'] }), r);
    expect(d.problems).toEqual([{
      kind: 'warnings', namespace: '',
      message: 'nothing backed up from 3 namespaces: alice may not list secrets or list configmaps there (namespaces not named: alice may not list namespaces)',
    }]);
  });

  it('names them when the requester may list namespaces, the first ten', async () => {
    const many = Array.from({ length: 13 }, (_, i) => `ns-${String(i).padStart(2, '0')}`);
    const r = fakeReviewer(['list configmaps@*', 'list namespaces@*']);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS], namespaces: many, mayNameNamespaces: true }), r);
    expect(d.problems).toEqual([{
      kind: 'warnings', namespace: '',
      message: `not backing up secrets in namespaces ${many.slice(0, 10).join(', ')} and 3 more: alice may not list them there`,
    }]);
  });

  it('leaves out a cluster-scoped resource the requester may not list', async () => {
    const r = fakeReviewer(['list configmaps@*']);
    const d = await decideScope(question({ namespaced: [CONFIGMAPS], cluster: [CLUSTERROLES], namespaces: ['a'] }), r);
    expect(d.problems).toEqual([{ kind: 'warnings', namespace: '', message: 'not backing up clusterroles.rbac.authorization.k8s.io: alice may not list them' }]);
    expect(d.access.get('clusterroles.rbac.authorization.k8s.io')).toEqual({ everywhere: false, namespaces: [] });
    const named = await decideScope(question({ namespaced: [CONFIGMAPS], cluster: [CLUSTERROLES], namespaces: ['a'], namedResources: ['clusterroles.rbac.authorization.k8s.io'] }), r);
    expect(named.problems[0]?.kind).toBe('errors');
  });

  it('says the requester may not list anything in scope when nothing is allowed', async () => {
    const r = fakeReviewer([]);
    const one = await decideScope(question({ namespaced: [SECRETS], namespaces: ['team-b'], namedNamespaces: ['team-b'] }), r);
    expect(one.nothingAllowed).toBe('alice may not list anything in scope: secrets in namespace team-b');
    const many = await decideScope(question({
      namespaced: [SECRETS, CONFIGMAPS, PODS, res('services')], cluster: [CLUSTERROLES], namespaceObjects: NAMESPACES, namespaces: ['x', 'y'],
    }), r);
    expect(many.nothingAllowed).toBe('alice may not list anything in scope: any of the 5 resources in 2 namespaces; clusterroles.rbac.authorization.k8s.io (cluster-scoped) (namespaces not named: alice may not list namespaces)');
  });

  it('allows nothing and denies nothing when no namespace is in scope', async () => {
    const r = fakeReviewer([]);
    const d = await decideScope(question({ namespaced: [SECRETS], namespaces: [] }), r);
    expect(d.nothingAllowed).toBeUndefined();
    expect(d.problems).toEqual([]);
    expect(d.reviews).toBe(0);
    expect(d.access.get('secrets')).toEqual({ everywhere: false, namespaces: [] });
  });

  it('secrets need their own review: list on everything else does not allow them', async () => {
    const r = fakeReviewer(['list configmaps@team-a', 'list pods@team-a', 'get namespaces@team-a']);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS, PODS], namespaceObjects: NAMESPACES, namespaces: ['team-a'], namedNamespaces: ['team-a'] }), r);
    expect(r.asked).toContain('list secrets@team-a');
    expect(d.access.get('secrets')).toEqual({ everywhere: false, namespaces: [] });
    expect(d.problems.map((p) => p.message)).toEqual(['not backing up secrets in namespace team-a: alice may not list them there']);
  });
});

describe('decideScope with the requester\'s rules', () => {
  const many = Array.from({ length: 50 }, (_, i) => `ns-${i}`);
  const EDIT_LIKE: ResourceRule[] = [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps', 'secrets', 'namespaces'] }];

  it('skips the reviews no rule could allow: a * backup by a team user asks per namespace only what may be allowed', async () => {
    const r = fakeReviewer(['list configmaps@ns-7', 'list secrets@ns-7', 'get namespaces@ns-7']);
    const rules = (ns: string): Promise<readonly ResourceRule[] | undefined> => Promise.resolve(ns === 'ns-7' ? EDIT_LIKE : []);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS, PODS], namespaceObjects: NAMESPACES, namespaces: many }), r, rules);
    expect(d.access.get('configmaps')).toEqual({ everywhere: false, namespaces: ['ns-7'] });
    expect(d.access.get('pods')).toEqual({ everywhere: false, namespaces: [] });
    expect(d.access.get('namespaces')).toEqual({ everywhere: false, namespaces: ['ns-7'] });
    // Cluster-wide for each of the four, then ns-7 for the three its rules name: 7, not 4 + 4 x 50.
    expect(d.reviews).toBe(7);
    expect(r.asked).toHaveLength(7);
    expect(d.problems.map((p) => p.message)).toEqual([
      'nothing backed up from 49 namespaces: alice may not read any of the 4 resources in scope there (namespaces not named: alice may not list namespaces)',
      // ns-7 is named: she may get its Namespace object, so she knows it.
      'not backing up pods in namespace ns-7: alice may not list them there',
    ]);
  });

  it('asks every review where the rules are not known whole', async () => {
    const r = fakeReviewer(['list configmaps@ns-1']);
    const d = await decideScope(question({ namespaced: [CONFIGMAPS], namespaces: ['ns-1', 'ns-2'] }), r, () => Promise.resolve(undefined));
    expect(d.access.get('configmaps')).toEqual({ everywhere: false, namespaces: ['ns-1'] });
    expect(d.reviews).toBe(3);
  });
});

describe('rulesMayAllow', () => {
  it('matches verb, group and resource, with *', () => {
    expect(rulesMayAllow([{ verbs: ['list'], apiGroups: [''], resources: ['secrets'] }], 'list', SECRETS)).toBe(true);
    expect(rulesMayAllow([{ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }], 'list', SECRETS)).toBe(false);
    expect(rulesMayAllow([{ verbs: ['list'], apiGroups: ['apps'], resources: ['secrets'] }], 'list', SECRETS)).toBe(false);
    expect(rulesMayAllow([{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], 'list', CLUSTERROLES)).toBe(true);
    // A rule for some names is left to the review (it may allow a get by name).
    expect(rulesMayAllow([{ verbs: ['get'], apiGroups: [''], resources: ['namespaces'], resourceNames: ['team-a'] }], 'get', NAMESPACES)).toBe(true);
    expect(rulesMayAllow([], 'list', SECRETS)).toBe(false);
  });
});

describe('namespacesPhrase', () => {
  const q = { who: 'alice', mayNameNamespaces: false, namedNamespace: (ns: string) => ns === 'team-a' };
  it('names the named namespaces and counts the others', () => {
    expect(namespacesPhrase(q, ['team-a'])).toEqual({ text: 'namespace team-a', note: '', single: 'team-a' });
    expect(namespacesPhrase(q, ['team-a', 'x', 'y'])).toEqual({ text: 'namespaces team-a and 2 more', note: ' (namespaces not named: alice may not list namespaces)', single: '' });
    expect(namespacesPhrase(q, ['x'])).toEqual({ text: '1 namespace', note: ' (namespaces not named: alice may not list namespaces)', single: '' });
  });
});
