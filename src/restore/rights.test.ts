import { describe, expect, it } from 'vitest';
import { newBackup, newRestore, type RestoreSpec } from '../apis/v1/index.js';
import type { AccessAnswer, AccessReviewer, ResourceAccess } from '../auth/index.js';
import { newRestoreRequest } from './request.js';
import { checkTargetNamespaces, inStowageForm, refusal, sourcesOfPlan, sourcesOfResourceList, targetsOfPlan, targetsOfResourceList } from './rights.js';

const req = (spec: Omit<RestoreSpec, 'backupName'> = {}) =>
  newRestoreRequest(newRestore('r', 'stowage', { backupName: 'b', ...spec }), newBackup('b', 'stowage'));

/** A reviewer over fixed grants: `create` on a kind in a namespace ('' = everywhere), recording what it was asked. */
function fakeReviewer(grants: Record<string, string[]>): Pick<AccessReviewer, 'review' | 'requester'> & { asked: ResourceAccess[] } {
  const asked: ResourceAccess[] = [];
  return {
    asked,
    requester: { username: 'alice', uid: 'alice-uid', groups: ['team-a'] },
    review(a: ResourceAccess): Promise<AccessAnswer> {
      asked.push(a);
      const gr = a.group === '' ? a.resource : `${a.resource}.${a.group}`;
      const where = grants[a.namespace ?? ''] ?? [];
      return Promise.resolve({ allowed: a.verb === 'create' && (where.includes(gr) || where.includes('*')), reason: '' });
    },
  };
}

const LIST = {
  configmaps: ['team-a/settings', 'team-b/other'],
  'deployments.apps': ['team-a/web'],
  'rolebindings.rbac.authorization.k8s.io': ['team-a/admins'],
  'clusterrolebindings.rbac.authorization.k8s.io': ['root'],
  namespaces: ['team-a', 'team-b'],
  events: ['team-a/e1'],
  'backups.stowage.dev': ['team-a/b'],
};

describe('targetsOfResourceList', () => {
  it('gives each target namespace its sources and kinds, after the filters and the mapping, without never-restored kinds', () => {
    expect(targetsOfResourceList(LIST, req({ namespaceMapping: { 'team-a': 'kube-system' } }))).toEqual([
      { namespace: 'kube-system', sources: ['team-a'], kinds: ['configmaps', 'deployments.apps', 'rolebindings.rbac.authorization.k8s.io'] },
      { namespace: 'team-b', sources: ['team-b'], kinds: ['configmaps'] },
    ]);
    expect(targetsOfResourceList(LIST, req({ includedNamespaces: ['team-a'], excludedResources: ['rolebindings.rbac.authorization.k8s.io'] }))).toEqual([
      { namespace: 'team-a', sources: ['team-a'], kinds: ['configmaps', 'deployments.apps'] },
    ]);
  });

  it('merges namespaces mapped onto one', () => {
    expect(targetsOfResourceList(LIST, req({ namespaceMapping: { 'team-a': 'x', 'team-b': 'x' } }))).toEqual([
      { namespace: 'x', sources: ['team-a', 'team-b'], kinds: ['configmaps', 'deployments.apps', 'rolebindings.rbac.authorization.k8s.io'] },
    ]);
  });

  it("is undefined for a list in Velero's group/version/Kind form", () => {
    expect(targetsOfResourceList({ 'v1/ConfigMap': ['team-a/settings'] }, req())).toBeUndefined();
  });
});

describe('targetsOfPlan', () => {
  it('takes namespaced items the plan does not skip, by their source namespace', () => {
    const items = [
      { groupResource: 'configmaps', sourceNamespace: 'team-a' },
      { groupResource: 'secrets', sourceNamespace: 'team-a', skip: 'a generated token' },
      { groupResource: 'namespaces', sourceNamespace: '' },
    ];
    expect(targetsOfPlan(items, req({ namespaceMapping: { 'team-a': 'team-a-copy' } }))).toEqual([
      { namespace: 'team-a-copy', sources: ['team-a'], kinds: ['configmaps'] },
    ]);
  });
});

describe('checkTargetNamespaces', () => {
  const targets = targetsOfResourceList(LIST, req({ namespaceMapping: { 'team-a': 'kube-system' } })) ?? [];

  it('refuses each namespace where the requester may create none of its kinds, naming it, its sources and the kinds', async () => {
    const reviewer = fakeReviewer({ 'team-b': ['configmaps'] });
    const verdict = await checkTargetNamespaces(reviewer, targets);
    expect(verdict.refused).toEqual([
      'alice may not create objects in namespace kube-system (mapped from team-a): not allowed to create configmaps, deployments.apps, rolebindings.rbac.authorization.k8s.io',
    ]);
    // Three kinds everywhere, then kube-system's three, then team-b's one.
    expect(verdict.reviews).toBe(7);
    expect(reviewer.asked).toHaveLength(7);
    expect(reviewer.asked.every((a) => a.verb === 'create')).toBe(true);
  });

  it('allows a namespace where one kind may be created (the API refuses the rest item by item), asking no further', async () => {
    const reviewer = fakeReviewer({ 'kube-system': ['configmaps'], 'team-b': ['configmaps'] });
    const verdict = await checkTargetNamespaces(reviewer, targets);
    expect(verdict).toEqual({ refused: [], reviews: 5 });
  });

  it('settles every namespace holding a kind allowed everywhere with the cluster-wide review alone', async () => {
    const reviewer = fakeReviewer({ '': ['configmaps'] });
    const verdict = await checkTargetNamespaces(reviewer, targets);
    expect(verdict).toEqual({ refused: [], reviews: 3 });
    expect(reviewer.asked.map((a) => a.namespace)).toEqual(['', '', '']);
  });

  it('costs (kinds + namespaces) reviews for many namespaces where the requester has edit, whatever their item count', async () => {
    const many = Array.from({ length: 30 }, (_, i) => ({ namespace: `team-${i}`, sources: [`team-${i}`], kinds: ['configmaps', 'secrets'] }));
    const grants = Object.fromEntries(many.map((t) => [t.namespace, ['*']]));
    expect(await checkTargetNamespaces(fakeReviewer(grants), many)).toEqual({ refused: [], reviews: 32 });
  });

  it('passes an error of the reviewer on (no answer is not a refusal)', async () => {
    const reviewer = { ...fakeReviewer({}), review: () => Promise.reject(new Error('the API server is unreachable')) };
    await expect(checkTargetNamespaces(reviewer, targets)).rejects.toThrow('the API server is unreachable');
  });
});

describe('refusal', () => {
  it('names a namespace not mapped without "mapped from", and at most 12 kinds', () => {
    const kinds = Array.from({ length: 14 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    expect(refusal('bob', { namespace: 'team-a', sources: ['team-a'], kinds })).toBe(
      'bob may not create objects in namespace team-a: not allowed to create k00, k01, k02, k03, k04, k05, k06, k07, k08, k09, k10, k11 and 2 more',
    );
  });
});

describe('sourcesOfResourceList', () => {
  it('takes what the filters take, the Namespace objects of those namespaces and the cluster-scoped items that could come along', () => {
    expect(sourcesOfResourceList(LIST, req({ includedNamespaces: ['team-b'], namespaceMapping: { 'team-b': 'team-a' } }))).toEqual({
      configmaps: ['team-b/other'],
      'clusterrolebindings.rbac.authorization.k8s.io': ['root'],
      namespaces: ['team-b'],
    });
  });

  it('leaves cluster-scoped items out when includeClusterResources is false, and excluded resources always', () => {
    expect(sourcesOfResourceList(LIST, req({ includedNamespaces: ['team-a'], includeClusterResources: false, excludedResources: ['deployments.apps'] }))).toEqual({
      configmaps: ['team-a/settings'],
      'rolebindings.rbac.authorization.k8s.io': ['team-a/admins'],
      namespaces: ['team-a'],
    });
  });

  it('gives up on a list in Velero\'s form', () => {
    expect(sourcesOfResourceList({ 'v1/Secret': ['team-b/s'] }, req())).toBeUndefined();
  });
});

describe('sourcesOfPlan', () => {
  it('names each planned item by its place in the backup, not a skipped one or a bare Namespace', () => {
    expect(sourcesOfPlan([
      { groupResource: 'secrets', sourceNamespace: 'team-b', sourceName: 's', archived: {} },
      { groupResource: 'secrets', sourceNamespace: 'team-b', sourceName: 'gone', skip: 'owned', archived: {} },
      { groupResource: 'namespaces', sourceNamespace: '', sourceName: 'team-b', archived: undefined },
      { groupResource: 'persistentvolumes', sourceNamespace: '', sourceName: 'pv1', archived: {} },
    ])).toEqual({ secrets: ['team-b/s'], persistentvolumes: ['pv1'] });
  });
});

describe('inStowageForm', () => {
  const served = [
    { group: '', kind: 'Secret', groupResource: 'secrets' },
    { group: 'apps', kind: 'Deployment', groupResource: 'deployments.apps' },
  ];
  it('turns a Velero list\'s kinds into the resources the cluster serves them as', () => {
    expect(inStowageForm({ 'v1/Secret': ['team-b/s'], 'apps/v1/Deployment': ['team-b/web'] }, served)).toEqual({ secrets: ['team-b/s'], 'deployments.apps': ['team-b/web'] });
  });
  it('gives up on a kind the cluster does not serve', () => {
    expect(inStowageForm({ 'example.com/v1/Widget': ['team-b/w'] }, served)).toBeUndefined();
  });
});
