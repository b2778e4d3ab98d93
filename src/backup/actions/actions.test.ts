import { describe, expect, it } from 'vitest';
import type { ApiResource } from '../../kube/index.js';
import type { BackupItemAction, KubeObject } from '../../plugin/api/index.js';
import { crdTable, customResourceDefinitionAction } from './crd.js';
import { podServiceAccountAction, podVolumeClaimsAction } from './pod.js';
import { pvcVolumeAction } from './pvc.js';
import { resolveActions } from './resolve.js';
import { selector } from './selector.js';

const backup: KubeObject = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b' } };
const run = (a: BackupItemAction, item: KubeObject) => a.execute({ item, backup });

const api = (group: string, resource: string, namespaced: boolean, kind = 'Thing'): ApiResource => ({
  group, version: 'v1', resource, kind, namespaced, verbs: ['list', 'get', 'create'],
  groupResource: group === '' ? resource : `${resource}.${group}`, apiVersion: group === '' ? 'v1' : `${group}/v1`, shortNames: [], singularName: '',
});

describe('built-in backup item actions', () => {
  const pod: KubeObject = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'shop' },
    spec: {
      serviceAccountName: 'runner',
      volumes: [
        { name: 'a', persistentVolumeClaim: { claimName: 'data' } },
        { name: 'b', configMap: { name: 'cfg' } },
        { name: 'c', persistentVolumeClaim: { claimName: 'data' } },
        { name: 'd', persistentVolumeClaim: { claimName: 'logs' } },
      ],
    },
  };

  it('pod -> each PVC it mounts, once, and leaves the pod unchanged', async () => {
    const out = await run(podVolumeClaimsAction, pod);
    expect(out.item).toBe(pod);
    expect(out.additionalItems).toEqual([
      { groupResource: 'persistentvolumeclaims', namespace: 'shop', name: 'data' },
      { groupResource: 'persistentvolumeclaims', namespace: 'shop', name: 'logs' },
    ]);
    expect((await run(podVolumeClaimsAction, { ...pod, spec: {} })).additionalItems).toEqual([]);
  });

  it('pod -> its service account (serviceAccountName, or the deprecated serviceAccount)', async () => {
    expect((await run(podServiceAccountAction, pod)).additionalItems).toEqual([{ groupResource: 'serviceaccounts', namespace: 'shop', name: 'runner' }]);
    expect((await run(podServiceAccountAction, { ...pod, spec: { serviceAccount: 'old' } })).additionalItems)
      .toEqual([{ groupResource: 'serviceaccounts', namespace: 'shop', name: 'old' }]);
    expect((await run(podServiceAccountAction, { ...pod, spec: {} })).additionalItems).toEqual([]);
  });

  it('PVC -> its bound PV (cluster-scoped), nothing when unbound', async () => {
    const pvc: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', namespace: 'n' }, spec: { volumeName: 'pv-1' } };
    expect((await run(pvcVolumeAction, pvc)).additionalItems).toEqual([{ groupResource: 'persistentvolumes', namespace: '', name: 'pv-1' }]);
    expect((await run(pvcVolumeAction, { ...pvc, spec: {} })).additionalItems).toEqual([]);
  });

  it('custom resource -> its CRD, from the listed CRDs', async () => {
    const table = crdTable([
      { metadata: { name: 'widgets.example.com' }, spec: { group: 'example.com', names: { kind: 'Widget', plural: 'widgets' } } },
      { metadata: { name: 'broken' } },
    ]);
    expect([...table]).toEqual([['example.com/Widget', 'widgets.example.com']]);
    const action = customResourceDefinitionAction(table);
    const w: KubeObject = { apiVersion: 'example.com/v1alpha1', kind: 'Widget', metadata: { name: 'w', namespace: 'n' } };
    expect((await run(action, w)).additionalItems).toEqual([{ groupResource: 'customresourcedefinitions.apiextensions.k8s.io', namespace: '', name: 'widgets.example.com' }]);
    expect((await run(action, { ...w, kind: 'Gadget' })).additionalItems).toEqual([]);
    expect((await run(action, { apiVersion: 'v1', kind: 'Widget', metadata: { name: 'x' } })).additionalItems).toEqual([]);
  });
});

describe('resolveActions', () => {
  const fixed = (sel: Partial<ReturnType<typeof selector>>): BackupItemAction => ({
    appliesTo: async () => selector(sel),
    execute: async ({ item }) => ({ item, additionalItems: [] }),
  });

  it('calls AppliesTo once per action and matches by namespace, resource and labels', async () => {
    let calls = 0;
    const counted: BackupItemAction = { ...fixed({}), appliesTo: async () => (calls++, selector({ includedResources: ['pods'] })) };
    const [pods, scoped] = await resolveActions([
      { name: 'x/pods', action: counted },
      { name: 'x/scoped', action: fixed({ includedNamespaces: ['a*'], excludedNamespaces: ['ab'], excludedResources: ['secrets'], labelSelector: 'tier in (web),!skip' }) },
    ]);
    if (pods === undefined || scoped === undefined) throw new Error('two actions expected');
    const podsRes = api('', 'pods', true, 'Pod');
    expect(pods.matches(podsRes, 'any', {})).toBe(true);
    expect(pods.matches(api('apps', 'deployments', true), 'any', {})).toBe(false);
    expect(calls).toBe(1);
    expect(scoped.matches(podsRes, 'app', { tier: 'web' })).toBe(true);
    expect(scoped.matches(podsRes, 'ab', { tier: 'web' })).toBe(false);
    expect(scoped.matches(podsRes, 'zz', { tier: 'web' })).toBe(false);
    expect(scoped.matches(podsRes, 'app', { tier: 'db' })).toBe(false);
    expect(scoped.matches(podsRes, 'app', { tier: 'web', skip: '' })).toBe(false);
    expect(scoped.matches(api('', 'secrets', true), 'app', { tier: 'web' })).toBe(false);
    // Restricting namespaces means the action never sees cluster-scoped items.
    expect(scoped.matches(api('', 'persistentvolumes', false), '', { tier: 'web' })).toBe(false);
    expect(pods.matches(api('', 'pods', false), '', {})).toBe(true);
  });

  it('names the action when AppliesTo fails or returns a bad selector', async () => {
    const broken: BackupItemAction = { ...fixed({}), appliesTo: async () => { throw new Error('plugin exited'); } };
    await expect(resolveActions([{ name: 'acme.io/broken', action: broken }])).rejects.toThrow('backup item action acme.io/broken: AppliesTo failed: plugin exited');
    await expect(resolveActions([{ name: 'acme.io/bad', action: fixed({ labelSelector: 'a in (' }) }]))
      .rejects.toThrow(/^backup item action acme\.io\/bad: AppliesTo returned an invalid label selector: /);
  });
});
