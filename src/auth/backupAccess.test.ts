// The "could have made it, or could restore it" rule and its messages, over a reviewer whose
// answers come from a table (the SubjectAccessReviews themselves run against a real API server in
// test/auth/downloadRights.test.ts).
import { describe, expect, it } from 'vitest';
import type { AccessReviewer, ResourceAccess } from './access.js';
import { backupUseRefusal, describeLacks, lackedRights } from './backupAccess.js';

/** Grants are `verb resource[.group] namespace` ('' namespace: cluster-wide); asked reviews are recorded. */
function reviewerWith(grants: string[]): AccessReviewer & { asked: string[] } {
  const asked: string[] = [];
  const has = (a: ResourceAccess): boolean => {
    const gr = a.group === '' ? a.resource : `${a.resource}.${a.group}`;
    return grants.includes(`${a.verb} ${gr} ${a.namespace ?? ''}`) || grants.includes(`${a.verb} ${gr} `);
  };
  const review = (a: ResourceAccess): Promise<{ allowed: boolean; reason: string }> => {
    asked.push(`${a.verb} ${a.group === '' ? a.resource : `${a.resource}.${a.group}`} ${a.namespace ?? ''}${a.name !== undefined ? ` ${a.name}` : ''}`.trim());
    return Promise.resolve({ allowed: has(a), reason: '' });
  };
  return {
    asked,
    requester: { username: 'alice', uid: 'alice-uid', groups: ['team-a'] },
    review,
    async inNamespaces(a, namespaces) {
      if ((await review({ ...a, namespace: '' })).allowed) return { everywhere: true, allowed: [...namespaces], denied: [] };
      const ok = await Promise.all(namespaces.map(async (ns) => (await review({ ...a, namespace: ns })).allowed));
      return { everywhere: false, allowed: namespaces.filter((_, i) => ok[i]), denied: namespaces.filter((_, i) => !ok[i]) };
    },
  };
}

const teamA = ['get namespaces team-a', 'list configmaps team-a', 'create configmaps team-a', 'list deployments.apps team-a', 'create secrets team-a'];

describe('backup use rights', () => {
  it('allows a backup whose every kind and namespace the requester may list or create', async () => {
    const r = reviewerWith(teamA);
    const held = { configmaps: ['team-a/a', 'team-a/b'], 'deployments.apps': ['team-a/web'], namespaces: ['team-a'], secrets: ['team-a/s'] };
    expect(await lackedRights(r, held)).toEqual([]);
    // Secrets: list refused, create allowed (they could restore them).
    expect(r.asked).toEqual(expect.arrayContaining(['list secrets', 'list secrets team-a', 'create secrets', 'create secrets team-a', 'get namespaces team-a team-a']));
    expect(await backupUseRefusal(r, held, 'download backup "b1"')).toBeUndefined();
  });

  it('names what the requester may neither list nor create', async () => {
    const r = reviewerWith(teamA);
    const held = { configmaps: ['team-a/a', 'team-b/a'], namespaces: ['team-a', 'team-b'], secrets: ['team-b/s'] };
    expect(await lackedRights(r, held)).toEqual([
      { groupResource: 'configmaps', namespaces: ['team-b'] },
      { groupResource: 'namespaces', names: ['team-b'] },
      { groupResource: 'secrets', namespaces: ['team-b'] },
    ]);
    expect(await backupUseRefusal(reviewerWith(teamA), { secrets: ['team-b/s'] }, 'download backup "b1"'))
      .toBe('alice may not download backup "b1": it holds secrets in namespace team-b, which alice may neither list nor create');
    expect(await backupUseRefusal(reviewerWith(teamA), held, 'download the log of restore "r1"', 'its backup "b1"'))
      .toBe('alice may not download the log of restore "r1": its backup "b1" holds configmaps in namespace team-b, the namespace team-b and secrets in namespace team-b, which alice may neither list nor create');
  });

  it('settles a kind with one cluster-wide review when that allows it', async () => {
    const r = reviewerWith(['list configmaps ']);
    expect(await lackedRights(r, { configmaps: ['a/x', 'b/x', 'c/x'] })).toEqual([]);
    expect(r.asked).toEqual(['list configmaps']);
  });

  it('needs cluster-wide list or create for cluster-scoped kinds', async () => {
    expect(await lackedRights(reviewerWith(['list configmaps team-a']), { 'clusterroles.rbac.authorization.k8s.io': ['admin'] }))
      .toEqual([{ groupResource: 'clusterroles.rbac.authorization.k8s.io', clusterScoped: true }]);
    expect(await lackedRights(reviewerWith(['create clusterroles.rbac.authorization.k8s.io ']), { 'clusterroles.rbac.authorization.k8s.io': ['admin'] })).toEqual([]);
    expect(await lackedRights(reviewerWith(['list namespaces ']), { namespaces: ['x', 'y'] })).toEqual([]);
  });

  it('names the first three lacks and counts the rest', () => {
    expect(describeLacks([
      { groupResource: 'configmaps', namespaces: ['a', 'b', 'c', 'd', 'e'] },
      { groupResource: 'namespaces', names: ['a', 'b'] },
      { groupResource: 'persistentvolumes', clusterScoped: true },
      { groupResource: 'secrets', namespaces: ['a'] },
      { groupResource: 'services', namespaces: ['a'] },
    ])).toBe('configmaps in namespaces a, b, c and 2 more, the namespaces a, b, persistentvolumes (cluster-scoped) and 2 more kinds');
    expect(describeLacks([{ groupResource: 'secrets', namespaces: ['a'] }, { groupResource: 'services', namespaces: ['a'] }])).toBe('secrets in namespace a and services in namespace a');
  });
});
