// decideScope: what of a backup's scope the requester may list, and the messages for what is left
// out, against a fake reviewer (a table of what the requester may do). The reviews themselves go
// to a real API server in test/auth/backupRights.test.ts.
import { describe, expect, it } from 'vitest';
import type { AccessAnswer, NamespaceAccess, ResourceAccess } from '../auth/index.js';
import type { ApiResource } from '../kube/index.js';
import { CLUSTER_RULES_NAMESPACE, decideScope, namespacesPhrase, rulesMayAllow, type ResourceRule, type ScopeQuestion } from './rights.js';

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
  it('allows everything with one review for an admin who may list everything', async () => {
    const r = fakeReviewer(['list *.*@*']);
    const d = await decideScope(question({
      namespaced: [SECRETS, CONFIGMAPS, PODS], cluster: [CLUSTERROLES], namespaceObjects: NAMESPACES,
      namespaces: ['a', 'b', 'c', 'd'], mayNameNamespaces: true,
    }), r);
    expect(d.problems).toEqual([]);
    expect(d.nothingAllowed).toBeUndefined();
    expect([...d.access.keys()].sort()).toEqual(['clusterroles.rbac.authorization.k8s.io', 'configmaps', 'namespaces', 'pods', 'secrets']);
    expect([...d.access.values()].every((a) => a.everywhere)).toBe(true);
    expect(d.reviews).toBe(1);
    expect(r.asked).toEqual(['list *@']);
  });

  it('asks one cluster-wide review per resource for a requester who may list each everywhere, but not everything', async () => {
    const r = fakeReviewer(['list secrets@*', 'list configmaps@*', 'list pods@*', 'list namespaces@*', 'list clusterroles.rbac.authorization.k8s.io@*']);
    const d = await decideScope(question({
      namespaced: [SECRETS, CONFIGMAPS, PODS], cluster: [CLUSTERROLES], namespaceObjects: NAMESPACES,
      namespaces: ['a', 'b', 'c', 'd'], mayNameNamespaces: true,
    }), r);
    expect(d.problems).toEqual([]);
    expect([...d.access.values()].every((a) => a.everywhere)).toBe(true);
    expect(r.asked.sort()).toEqual(['list *@', 'list clusterroles@', 'list configmaps@', 'list namespaces@', 'list pods@', 'list secrets@']);
    expect(d.reviews).toBe(6);
  });

  it('asks about one resource after the review of everything (planBackupScope asked it already: cached)', async () => {
    const r = fakeReviewer(['list secrets@*']);
    const d = await decideScope(question({ namespaced: [SECRETS], namespaces: ['a', 'b'] }), r);
    expect(d.access.get('secrets')).toEqual({ everywhere: true });
    expect(r.asked).toEqual(['list *@', 'list secrets@']);
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
    // Everything (no), then for each of the three cluster-wide and per namespace (no rules to rule any out); the Namespace objects by name.
    expect(d.reviews).toBe(10);
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
    // Everything, then ns-7 for the three its rules name, and list namespaces: 5, not 1 + 4 x 50. No
    // cluster-wide review per resource: the other namespaces' rules (cluster rules included) allow none.
    expect(r.asked.sort()).toEqual(['get namespaces@ns-7/ns-7', 'list *@', 'list configmaps@ns-7', 'list namespaces@', 'list secrets@ns-7']);
    expect(d.reviews).toBe(5);
    expect(d.problems.map((p) => p.message)).toEqual([
      'nothing backed up from 49 namespaces: alice may not read any of the 4 resources in scope there (namespaces not named: alice may not list namespaces)',
      // ns-7 is named: she may get its Namespace object, so she knows it.
      'not backing up pods in namespace ns-7: alice may not list them there',
    ]);
  });

  it('asks no cluster-wide review per resource for a backup of one namespace: the namespace\'s review answers it', async () => {
    const r = fakeReviewer(['list configmaps@ns-1', 'list secrets@ns-1']);
    const rules = (): Promise<readonly ResourceRule[] | undefined> => Promise.resolve(EDIT_LIKE);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS, PODS], namespaces: ['ns-1'], namedNamespaces: ['ns-1'] }), r, rules);
    expect(d.access.get('secrets')).toEqual({ everywhere: false, namespaces: ['ns-1'] });
    expect(d.access.get('pods')).toEqual({ everywhere: false, namespaces: [] });
    expect(r.asked.sort()).toEqual(['list *@', 'list configmaps@ns-1', 'list secrets@ns-1']);
    expect(d.problems.map((p) => p.message)).toEqual(['not backing up pods in namespace ns-1: alice may not list them there']);
  });

  it('asks one review for the namespaces where the same rule lets the requester list everything, not one per resource', async () => {
    const r = fakeReviewer(['list *.*@ns-1', 'list *.*@ns-2']);
    const star: ResourceRule[] = [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }];
    const rules = (ns: string): Promise<readonly ResourceRule[] | undefined> => Promise.resolve(ns === 'ns-3' ? [] : star);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS, PODS], cluster: [CLUSTERROLES], namespaces: ['ns-1', 'ns-2', 'ns-3'], namedNamespaces: ['ns-1', 'ns-2', 'ns-3'] }), r, rules);
    for (const gr of ['secrets', 'configmaps', 'pods']) expect(d.access.get(gr)).toEqual({ everywhere: false, namespaces: ['ns-1', 'ns-2'] });
    expect(d.access.get('clusterroles.rbac.authorization.k8s.io')).toEqual({ everywhere: false, namespaces: [] });
    // ns-2 has the same rules as ns-1: RBAC answers alike there.
    expect(r.asked.sort()).toEqual(['list *@', 'list *@ns-1']);
    expect(d.problems.map((p) => p.message)).toEqual([
      'nothing backed up from namespace ns-3: alice may not list secrets, list configmaps or list pods there',
      'not backing up clusterroles.rbac.authorization.k8s.io: alice may not list them',
    ]);
  });

  it('still asks per resource where the namespace\'s review of everything says no though its rules suggested it might', async () => {
    // The rules and the authorizer disagree (the rules changed between the two): the review's no stands.
    const r = fakeReviewer(['list configmaps@ns-1']);
    const rules = (): Promise<readonly ResourceRule[] | undefined> => Promise.resolve([{ verbs: ['list'], apiGroups: ['*'], resources: ['*'] }]);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS], namespaces: ['ns-1'] }), r, rules);
    expect(d.access.get('configmaps')).toEqual({ everywhere: false, namespaces: ['ns-1'] });
    expect(d.access.get('secrets')).toEqual({ everywhere: false, namespaces: [] });
    expect(r.asked.sort()).toEqual(['list *@', 'list *@ns-1', 'list configmaps@ns-1', 'list secrets@ns-1']);
  });

  it('asks once for a team bound to the same role in each of its namespaces, not once per namespace', async () => {
    const teams = Array.from({ length: 20 }, (_, i) => `team-${i}`);
    const r = fakeReviewer(teams.flatMap((ns) => [`list configmaps@${ns}`, `list secrets@${ns}`, `get namespaces@${ns}`]));
    const rules = (ns: string): Promise<readonly ResourceRule[] | undefined> => Promise.resolve(ns === CLUSTER_RULES_NAMESPACE ? [] : EDIT_LIKE);
    const d = await decideScope(question({ namespaced: [SECRETS, CONFIGMAPS, PODS], namespaceObjects: NAMESPACES, namespaces: teams }), r, rules);
    expect(d.access.get('secrets')).toEqual({ everywhere: false, namespaces: teams });
    expect(d.access.get('namespaces')).toEqual({ everywhere: false, namespaces: teams });
    expect(d.access.get('pods')).toEqual({ everywhere: false, namespaces: [] });
    // Her cluster-wide rules allow no LIST: no cluster-wide review per resource either.
    expect(r.asked.sort()).toEqual(['get namespaces@team-0/team-0', 'list *@', 'list configmaps@team-0', 'list namespaces@', 'list secrets@team-0']);
    expect(d.reviews).toBe(5);
    // A rule limited to names: the get of each Namespace is its own question.
    const named: ResourceRule[] = [...EDIT_LIKE, { verbs: ['get'], apiGroups: [''], resources: ['namespaces'], resourceNames: ['team-1'] }];
    const r2 = fakeReviewer(['get namespaces@team-1']);
    await decideScope(question({ namespaced: [SECRETS], namespaceObjects: NAMESPACES, namespaces: ['team-0', 'team-1'] }), r2, () => Promise.resolve(named));
    expect(r2.asked.filter((a) => a.startsWith('get')).sort()).toEqual(['get namespaces@team-0/team-0', 'get namespaces@team-1/team-1']);
  });

  it('asks every review where the rules are not known whole', async () => {
    const r = fakeReviewer(['list configmaps@ns-1']);
    const d = await decideScope(question({ namespaced: [CONFIGMAPS], namespaces: ['ns-1', 'ns-2'] }), r, () => Promise.resolve(undefined));
    expect(d.access.get('configmaps')).toEqual({ everywhere: false, namespaces: ['ns-1'] });
    // Everything, cluster-wide, then each namespace: no rules to rule any out.
    expect(d.reviews).toBe(4);
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
