// The restore engine against the real apiserver, controller-manager and S3 server: a round trip
// through a deleted namespace, namespace mapping, the existing-resource policies and dry run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBackup, type Backup } from '../../src/apis/v1/index.js';
import { readArchive, type ArchiveContents } from '../../src/archive/index.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, isNotFound, type KubeObject, type ResourceRef } from '../../src/kube/index.js';
import type { ResourceSelector, RestoreItemAction } from '../../src/plugin/api/index.js';
import { resolveRestoreItemActions, type RestoreResult } from '../../src/restore/index.js';
import { gzTar } from '../fixtures/archives/hostile.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import {
  DEPLOYMENTS, REPLICA_SETS, RBAC, RESOURCE_QUOTAS, ROLE_BINDINGS, ROLES, backupNow, comparable, createNs, deleteNsAndWait,
  getOrUndefined, outcomeRows, res, restoreNow, setupEnv, type Env,
} from './support.js';

type Owned = KubeObject & { metadata?: { ownerReferences?: { uid: string; kind: string }[] } };

describe('runRestore against the real cluster', () => {
  let env: Env;
  let ns = '';
  let group = '';
  let gizmos: ResourceRef;
  let backup: Backup;
  let contents: ArchiveContents;
  const secretValue = `TOPSECRET-${uniqueName('v')}`;
  const cleanup: string[] = [];

  const refOf = (gr: string): ResourceRef => {
    const table: Record<string, ResourceRef> = {
      namespaces: CORE.namespaces, configmaps: CORE.configMaps, secrets: CORE.secrets, services: CORE.services,
      serviceaccounts: CORE.serviceAccounts, 'deployments.apps': DEPLOYMENTS, [`roles.${RBAC}`]: ROLES, [`rolebindings.${RBAC}`]: ROLE_BINDINGS,
      'customresourcedefinitions.apiextensions.k8s.io': CUSTOM_RESOURCE_DEFINITIONS, [`gizmos.${group}`]: gizmos,
    };
    const r = table[gr];
    if (r === undefined) throw new Error(`no ref for ${gr}`);
    return r;
  };

  beforeAll(async () => {
    env = await setupEnv('restore');
    const { client } = env;
    ns = uniqueName('rs');
    group = `${uniqueName('g')}.test.stowage.dev`;
    gizmos = res(group, 'v1', 'gizmos', true);
    await createNs(client, ns, { team: 'shop' });
    cleanup.push(ns);
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `gizmos.${group}` },
      spec: {
        group, scope: 'Namespaced', names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList' },
        versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    await waitUntil('the Gizmo API is served', async () =>
      (await client.discover()).some((r) => r.groupResource === `gizmos.${group}`) ? true : undefined, 60_000, 500);

    const meta = (name: string, labels?: Record<string, string>) => ({ name, namespace: ns, ...(labels ? { labels } : {}) });
    await Promise.all([
      client.create(DEPLOYMENTS, ns, {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('web', { app: 'web' }),
        spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/web:1' }] } } },
      }),
      client.create(CORE.services, ns, { apiVersion: 'v1', kind: 'Service', metadata: meta('web', { app: 'web' }), spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ port: 80 }] } }),
      client.create(CORE.services, ns, { apiVersion: 'v1', kind: 'Service', metadata: meta('db'), spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ port: 5432 }] } }),
      client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('web-config', { app: 'web' }), data: { 'index.html': '<h1>hi</h1>' } }),
      client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('settings'), data: { mode: 'fast' } }),
      client.create(CORE.secrets, ns, { apiVersion: 'v1', kind: 'Secret', metadata: meta('db-password'), stringData: { password: secretValue } }),
      client.create(CORE.serviceAccounts, ns, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('runner'), imagePullSecrets: [{ name: 'pull' }] }),
      client.create(ROLES, ns, { apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: meta('reader'), rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] }),
      client.create(ROLE_BINDINGS, ns, {
        apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: meta('reader'), roleRef: { apiGroup: RBAC, kind: 'Role', name: 'reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'runner', namespace: ns }, { kind: 'User', name: 'alice', apiGroup: RBAC }],
      }),
      ...[1, 2].map((i) => client.create(gizmos, ns, { apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: meta(`g${i}`), spec: { size: i } })),
    ]);
    await client.patchStatus(gizmos, ns, 'g2', { status: { phase: 'Ready' } });
    // Since 1.24 a ServiceAccount gets no token Secret of its own: this one is made by hand, as users
    // still do for a long-lived token, and the token controller fills it in.
    await client.create(CORE.secrets, ns, {
      apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token',
      metadata: { ...meta('runner-token'), annotations: { 'kubernetes.io/service-account.name': 'runner' } },
    });
    // Let the controllers do their part first, so the backup holds what a live namespace holds:
    // the Deployment's ReplicaSet and Pod, and the token in the token Secret.
    await waitUntil('the ReplicaSet and Pod of web', async () => {
      const pods = await client.list(CORE.pods, { namespace: ns });
      const rss = await client.list(REPLICA_SETS, { namespace: ns });
      return pods.items.length === 1 && rss.items.length === 1 ? true : undefined;
    });
    await waitUntil('the token in runner-token', async () =>
      ((await client.get<KubeObject & { data?: Record<string, string> }>(CORE.secrets, ns, 'runner-token')).data?.token !== undefined ? true : undefined));
    backup = await backupNow(env, uniqueName('full'), { includedNamespaces: [ns] });
    contents = await readArchive(await env.store.getTarball(backup.metadata.name));
  });

  afterAll(async () => {
    for (const n of cleanup) await env?.client.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    await env?.client.delete(CUSTOM_RESOURCE_DEFINITIONS, undefined, `gizmos.${group}`).catch(() => undefined);
    env?.close();
  });

  const backedUp = (gr: string, name: string): KubeObject => {
    const it = contents.items.find((i) => i.groupResource === gr && i.name === name);
    if (it === undefined) throw new Error(`${gr} ${name} is not in the backup`);
    return it.object as KubeObject;
  };
  const outcome = (r: RestoreResult, gr: string, name: string) => r.outcomes.find((o) => o.groupResource === gr && o.name === name);

  it('round trip: a deleted namespace and CRD come back equal to the backup, and the ReplicaSet is recreated, not duplicated', async () => {
    const { client } = env;
    const oldDeployUid = (backedUp('deployments.apps', 'web').metadata as { uid?: string }).uid;
    await deleteNsAndWait(client, ns);
    await client.delete(CUSTOM_RESOURCE_DEFINITIONS, undefined, `gizmos.${group}`);
    await waitUntil('the Gizmo CRD to be gone', async () => ((await getOrUndefined(client, CUSTOM_RESOURCE_DEFINITIONS, undefined, `gizmos.${group}`)) === undefined ? true : undefined));

    const { result, lines, progress } = await restoreNow(env, backup, { includedNamespaces: [ns] });
    expect(result.failureReason).toBeUndefined();
    expect(result.results.errors).toEqual({ cluster: [], namespaces: {} });
    expect(result.phase).toBe('Completed');
    expect(result.results.warnings).toEqual({ cluster: [], namespaces: {} });

    // Every object is back and equal to its backed-up form, apart from stripped fields and what the
    // target cluster assigns (cluster IPs and node ports of Services).
    const expectations: [string, string, string[]][] = [
      ['namespaces', ns, []],
      ['customresourcedefinitions.apiextensions.k8s.io', `gizmos.${group}`, []],
      ['configmaps', 'web-config', []],
      ['configmaps', 'settings', []],
      ['secrets', 'db-password', []],
      ['serviceaccounts', 'runner', ['secrets']],
      [`roles.${RBAC}`, 'reader', []],
      [`rolebindings.${RBAC}`, 'reader', []],
      ['deployments.apps', 'web', []],
      ['services', 'db', []],
      [`gizmos.${group}`, 'g1', []],
      [`gizmos.${group}`, 'g2', []],
    ];
    for (const [gr, name, ignore] of expectations) {
      expect(outcome(result, gr, name)?.action, `${gr} ${name}`).toBe('created');
      const live = await client.get(refOf(gr), gr === 'namespaces' || gr.startsWith('customresourcedefinitions') ? undefined : ns, name);
      expect(comparable(live, ignore), `${gr} ${name}`).toEqual(comparable(backedUp(gr, name), ignore));
      expect(live.metadata?.labels?.['stowage.dev/backup-name']).toBe(backup.metadata.name);
    }
    const svc = await client.get<KubeObject & { spec: { clusterIP: string; ports: { nodePort: number }[] } }>(CORE.services, ns, 'web');
    expect(comparable(svc, ['spec.clusterIP', 'spec.clusterIPs', 'spec.ports'])).toEqual(comparable(backedUp('services', 'web'), ['spec.clusterIP', 'spec.clusterIPs', 'spec.ports']));
    expect(svc.spec.clusterIP).toMatch(/^10\.0\.0\./);
    expect(svc.spec.ports[0]?.nodePort).toBeGreaterThan(0);
    expect((await client.get<KubeObject & { spec: { clusterIP: string } }>(CORE.services, ns, 'db')).spec.clusterIP).toBe('None');
    // The RoleBinding's ServiceAccount subject still names the namespace.
    expect((await client.get<KubeObject & { subjects: { namespace?: string }[] }>(ROLE_BINDINGS, ns, 'reader')).subjects[0]?.namespace).toBe(ns);

    // What the controllers own was left to them, with the reason.
    const rsName = contents.items.find((i) => i.groupResource === 'replicasets.apps')?.name ?? '';
    expect(outcome(result, 'replicasets.apps', rsName)).toMatchObject({ action: 'skipped', reason: 'owned by Deployment web, which this restore recreates; its controller makes a new one' });
    const podName = contents.items.find((i) => i.groupResource === 'pods')?.name ?? '';
    expect(outcome(result, 'pods', podName)).toMatchObject({ action: 'skipped', reason: `owned by ReplicaSet ${rsName}, which this restore recreates; its controller makes a new one` });
    // A hand-made token Secret is restored without the old account's uid and token.
    expect(outcome(result, 'secrets', 'runner-token')).toMatchObject({ action: 'created' });
    expect(result.outcomes.some((o) => o.groupResource === 'events')).toBe(false);

    // The Deployment's ReplicaSet is recreated by the controller-manager: exactly one, owned by the new Deployment.
    const deploy = await client.get(DEPLOYMENTS, ns, 'web');
    expect(deploy.metadata?.uid).not.toBe(oldDeployUid);
    const ownedBy = async (): Promise<Owned[]> => (await client.list<Owned>(REPLICA_SETS, { namespace: ns })).items;
    await waitUntil('a ReplicaSet owned by the restored Deployment', async () => ((await ownedBy()).some((r) => r.metadata?.ownerReferences?.[0]?.uid === deploy.metadata?.uid) ? true : undefined));
    // Once the deployment controller has caught up with the restored Deployment, it makes no other.
    await waitUntil('the deployment controller to observe the restored Deployment', async () => {
      const d = await client.get<{ metadata?: { generation?: number }; status?: { observedGeneration?: number } }>(DEPLOYMENTS, ns, 'web');
      return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) ? true : undefined;
    });
    const rss = await ownedBy();
    expect(rss).toHaveLength(1);
    expect(rss[0]?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Deployment', uid: deploy.metadata?.uid });
    // The token controller issued a new token into it, for the restored service account.
    const runner = await client.get(CORE.serviceAccounts, ns, 'runner');
    await waitUntil('a new token for the restored runner', async () => {
      const t = await client.get<KubeObject & { data?: Record<string, string> }>(CORE.secrets, ns, 'runner-token');
      return t.data?.token !== undefined && t.metadata?.annotations?.['kubernetes.io/service-account.uid'] === runner.metadata?.uid ? true : undefined;
    });

    // Summary, progress and resource list agree with the outcomes.
    const count = (a: string) => result.outcomes.filter((o) => o.action === a).length;
    expect(result.summary).toEqual({ created: count('created'), updated: 0, skipped: count('skipped'), failed: 0 });
    expect(result.progress).toEqual({ totalItems: result.outcomes.length, itemsRestored: result.outcomes.length });
    expect(progress.at(-1)).toEqual(result.progress);
    expect(result.resourceList.configmaps).toEqual(expect.arrayContaining([`${ns}/settings`, `${ns}/web-config`]));
    expect(result.resourceList['replicasets.apps']).toBeUndefined();
    // Secret data never reaches the log or the results.
    const everything = JSON.stringify({ lines, results: result.results, outcomes: result.outcomes });
    expect(everything).not.toContain(secretValue);
    expect(everything).not.toContain(Buffer.from(secretValue).toString('base64'));
    expect(lines.some((l) => l.includes('restoring 1 items of customresourcedefinitions.apiextensions.k8s.io'))).toBe(true);
  });

  it('namespace mapping restores into a new namespace and remaps RoleBinding subjects', async () => {
    const { client } = env;
    const target = uniqueName('mapped');
    cleanup.push(target);
    const { result } = await restoreNow(env, backup, { includedNamespaces: [ns], namespaceMapping: { [ns]: target } });
    expect(result.failureReason).toBeUndefined();
    expect(result.phase).toBe('Completed');
    const nsObj = await client.get(CORE.namespaces, undefined, target);
    expect(nsObj.metadata?.labels?.team).toBe('shop');
    const rb = await client.get<KubeObject & { subjects: { kind: string; name: string; namespace?: string }[] }>(ROLE_BINDINGS, target, 'reader');
    expect(rb.subjects).toEqual([{ kind: 'ServiceAccount', name: 'runner', namespace: target }, { kind: 'User', name: 'alice', apiGroup: RBAC }]);
    expect(comparable(await client.get(CORE.configMaps, target, 'settings'), ['metadata.namespace'])).toEqual(comparable(backedUp('configmaps', 'settings'), ['metadata.namespace']));
    expect((await client.get(gizmos, target, 'g2')).spec).toEqual({ size: 2 });
    // Status is not restored unless restoreStatus selects the resource.
    expect((await client.get(gizmos, target, 'g2')).status).toBeUndefined();
    expect(result.outcomes.every((o) => o.namespace === '' || o.namespace === target)).toBe(true);
    // The CRD exists already and matches the backup: skipped without a warning.
    expect(outcome(result, 'customresourcedefinitions.apiextensions.k8s.io', `gizmos.${group}`)).toMatchObject({ action: 'skipped', reason: 'already exists and matches the backup' });
    expect(result.warnings).toBe(0);
  });

  it('existingResourcePolicy: none leaves a modified object alone and warns; update patches it back to the backup', async () => {
    const { client } = env;
    const target = uniqueName('policy');
    cleanup.push(target);
    const mapping = { includedNamespaces: [ns], namespaceMapping: { [ns]: target } };
    expect((await restoreNow(env, backup, mapping)).result.phase).toBe('Completed');
    // Modified after the backup: a value changed, a key and a label added.
    await client.patch(CORE.configMaps, target, 'settings', { metadata: { labels: { added: 'later' } }, data: { mode: 'slow', extra: 'x' } }, 'merge');
    const modified = await client.get(CORE.configMaps, target, 'settings');

    const none = (await restoreNow(env, backup, mapping)).result;
    expect(none.phase).toBe('Completed');
    expect(outcome(none, 'configmaps', 'settings')).toMatchObject({
      action: 'skipped', reason: 'already exists and differs from the backup; left unchanged (existingResourcePolicy is none)',
    });
    expect(none.results.warnings.namespaces[target]).toEqual([
      `configmaps ${target}/settings: already exists and differs from the backup; left unchanged (existingResourcePolicy is none)`,
    ]);
    expect(none.warnings).toBe(1);
    // Unchanged objects are skipped silently.
    expect(outcome(none, 'configmaps', 'web-config')).toMatchObject({ action: 'skipped', reason: 'already exists and matches the backup' });
    expect(none.summary.created).toBe(0);
    expect(await client.get(CORE.configMaps, target, 'settings')).toEqual(modified);

    const update = (await restoreNow(env, backup, { ...mapping, existingResourcePolicy: 'update' })).result;
    expect(update.phase).toBe('Completed');
    expect(outcome(update, 'configmaps', 'settings')).toMatchObject({ action: 'updated' });
    expect(update.summary.updated).toBe(1);
    expect(update.warnings).toBe(0);
    const after = await client.get<KubeObject & { data: Record<string, string> }>(CORE.configMaps, target, 'settings');
    expect(after.data).toEqual({ mode: 'fast' });
    expect(after.metadata?.labels?.added).toBeUndefined();
    expect(comparable(after, ['metadata.namespace'])).toEqual(comparable(backedUp('configmaps', 'settings'), ['metadata.namespace']));
    expect(after.metadata?.uid).toBe(modified.metadata?.uid);
  });

  it('dry run writes nothing and predicts the real restore exactly, admission failures included', async () => {
    const { client } = env;
    const target = uniqueName('dry');
    cleanup.push(target);
    await createNs(client, target);
    // The target already holds a differing ConfigMap, and a quota that admits no more ConfigMaps.
    await client.create(CORE.configMaps, target, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { mode: 'other' } });
    // The controllers add these a moment later, which would change the snapshot the dry run is compared against.
    await waitUntil('default service account and root CA', async () =>
      (await getOrUndefined(client, CORE.serviceAccounts, target, 'default')) !== undefined &&
      (await getOrUndefined(client, CORE.configMaps, target, 'kube-root-ca.crt')) !== undefined ? true : undefined);
    await client.create(RESOURCE_QUOTAS, target, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { configmaps: '2' } } });
    await waitUntil('the quota to be computed', async () => {
      const q = await client.get<KubeObject & { status?: { used?: Record<string, string> } }>(RESOURCE_QUOTAS, target, 'q');
      return q.status?.used?.configmaps === '2' ? true : undefined;
    });
    const list = async (): Promise<string[]> => {
      const names: string[] = [];
      for (const r of [CORE.configMaps, CORE.secrets, CORE.serviceAccounts, CORE.services, DEPLOYMENTS, ROLES, ROLE_BINDINGS, gizmos]) {
        names.push(...(await client.list(r, { namespace: target })).items.map((o) => `${r.resource}/${o.metadata?.name ?? ''}@${o.metadata?.resourceVersion ?? ''}`));
      }
      return names.sort();
    };
    const before = await list();
    const spec = { includedNamespaces: [ns], namespaceMapping: { [ns]: target }, existingResourcePolicy: 'update' as const };

    const dry = (await restoreNow(env, backup, { ...spec, dryRun: true })).result;
    expect(dry.dryRun).toBe(true);
    expect(dry.failureReason).toBeUndefined();
    expect(await list()).toEqual(before);
    expect(outcome(dry, 'configmaps', 'settings')).toMatchObject({ action: 'updated', validated: true });
    expect(outcome(dry, 'configmaps', 'web-config')).toMatchObject({ action: 'failed', validated: true });
    expect(outcome(dry, 'configmaps', 'web-config')?.reason).toContain('exceeded quota');
    expect(outcome(dry, 'deployments.apps', 'web')).toMatchObject({ action: 'created', reason: 'would be created', validated: true });
    // Nothing failed: the predicted failure is a warning that says "would fail", and the dry run completes.
    expect(dry.phase).toBe('Completed');
    expect(dry.errors).toBe(0);
    const wouldFail = (dry.results.warnings.namespaces[target] ?? []).filter((w) => w.includes(': would fail: '));
    expect(wouldFail).toHaveLength(1);
    expect(wouldFail[0]).toMatch(/^configmaps .*web-config: would fail: .*exceeded quota/);

    const real = (await restoreNow(env, backup, spec)).result;
    expect(outcomeRows(real)).toEqual(outcomeRows(dry));
    expect(real.summary).toEqual(dry.summary);
    expect(real.phase).toBe('PartiallyFailed');
    expect(real.resourceList).toEqual(dry.resourceList);
    expect(real.results.errors.namespaces[target]?.length).toBe(wouldFail.length);
    expect(real.warnings).toBe(dry.warnings - wouldFail.length);
    expect(await getOrUndefined(client, DEPLOYMENTS, target, 'web')).toBeDefined();
    expect(await getOrUndefined(client, CORE.configMaps, target, 'web-config')).toBeUndefined();
  });

  it('restoreStatus restores the status of the selected resources through their status subresource', async () => {
    const target = uniqueName('status');
    cleanup.push(target);
    const { result } = await restoreNow(env, backup, {
      includedNamespaces: [ns], namespaceMapping: { [ns]: target }, restoreStatus: { includedResources: [`gizmos.${group}`] },
    });
    expect(result.phase).toBe('Completed');
    expect((await env.client.get(gizmos, target, 'g2')).status).toEqual({ phase: 'Ready' });
    expect((await env.client.get(gizmos, target, 'g1')).status).toBeUndefined();
  });

  it('runs plugin restore item actions after the built-ins: changes, skipRestore, and additional items restored first', async () => {
    const target = uniqueName('plugins');
    cleanup.push(target);
    const sel = (resources: string[], labelSelector = ''): ResourceSelector =>
      ({ includedNamespaces: [], excludedNamespaces: [], includedResources: resources, excludedResources: [], labelSelector });
    const seen: string[] = [];
    const stamp: RestoreItemAction = {
      appliesTo: () => Promise.resolve(sel(['configmaps'], 'app=web')),
      execute: ({ item, itemFromBackup }) => {
        seen.push(`${item.metadata.namespace ?? ''}/${item.metadata.name} from ${itemFromBackup.metadata.namespace ?? ''}`);
        return Promise.resolve({ item: { ...item, data: { ...(item.data as object), stamped: 'yes' } }, additionalItems: [], skipRestore: false });
      },
    };
    const skipSettings: RestoreItemAction = {
      appliesTo: () => Promise.resolve(sel(['configmaps'])),
      execute: ({ item }) => Promise.resolve({ item, additionalItems: [], skipRestore: item.metadata.name === 'settings' }),
    };
    const needsSecret: RestoreItemAction = {
      appliesTo: () => Promise.resolve(sel([`roles.${RBAC}`])),
      execute: ({ item }) => Promise.resolve({ item, additionalItems: [{ groupResource: 'secrets', namespace: ns, name: 'db-password' }], skipRestore: false }),
    };
    // Built-ins run first: the Service the plugin sees has no clusterIP any more (a headless one keeps "None").
    const svcSeen = new Map<string, KubeObject>();
    const watchSvc: RestoreItemAction = {
      appliesTo: () => Promise.resolve(sel(['services'])),
      execute: ({ item }) => {
        svcSeen.set(item.metadata.name, item);
        return Promise.resolve({ item, additionalItems: [], skipRestore: false });
      },
    };
    const actions = await resolveRestoreItemActions([
      { name: 'example.com/stamp', action: stamp },
      { name: 'example.com/skip-settings', action: skipSettings },
      { name: 'example.com/needs-secret', action: needsSecret },
      { name: 'example.com/watch-svc', action: watchSvc },
    ]);
    const { result } = await restoreNow(env, backup, {
      includedNamespaces: [ns], namespaceMapping: { [ns]: target }, includedResources: ['configmaps', 'roles', 'services'],
    }, { actions });
    expect(result.phase).toBe('Completed');
    expect(seen).toEqual([`${target}/web-config from ${ns}`]);
    expect((await env.client.get<KubeObject & { data: Record<string, string> }>(CORE.configMaps, target, 'web-config')).data.stamped).toBe('yes');
    expect(outcome(result, 'configmaps', 'settings')).toMatchObject({ action: 'skipped', reason: 'skipped by restore item action example.com/skip-settings' });
    expect(await getOrUndefined(env.client, CORE.configMaps, target, 'settings')).toBeUndefined();
    const secretAt = result.outcomes.findIndex((o) => o.groupResource === 'secrets' && o.name === 'db-password');
    const roleAt = result.outcomes.findIndex((o) => o.groupResource === `roles.${RBAC}` && o.name === 'reader');
    expect(result.outcomes[secretAt]?.action).toBe('created');
    expect(secretAt).toBeGreaterThanOrEqual(0);
    expect(secretAt).toBeLessThan(roleAt);
    expect(result.progress.totalItems).toBe(result.outcomes.length);
    const clusterIP = (name: string): string | undefined => (svcSeen.get(name)?.spec as { clusterIP?: string } | undefined)?.clusterIP;
    expect([...svcSeen.keys()].sort()).toEqual(['db', 'web']);
    expect(clusterIP('web')).toBeUndefined();
    expect(clusterIP('db')).toBe('None');
  });

  it('restores items whose actions name each other as additional items, without deadlock', async () => {
    const target = uniqueName('cycle');
    cleanup.push(target);
    const other: Record<string, string> = { 'web-config': 'settings', settings: 'web-config' };
    const pair: RestoreItemAction = {
      appliesTo: () => Promise.resolve({ includedNamespaces: [], excludedNamespaces: [], includedResources: ['configmaps'], excludedResources: [], labelSelector: '' }),
      execute: ({ item }) => {
        const name = other[item.metadata.name];
        return Promise.resolve({ item, additionalItems: name === undefined ? [] : [{ groupResource: 'configmaps', namespace: ns, name }], skipRestore: false });
      },
    };
    const actions = await resolveRestoreItemActions([{ name: 'example.com/pair', action: pair }]);
    const { result } = await restoreNow(env, backup, { includedNamespaces: [ns], namespaceMapping: { [ns]: target }, includedResources: ['configmaps'] }, { actions });
    expect(result.phase).toBe('Completed');
    expect(outcome(result, 'configmaps', 'settings')?.action).toBe('created');
    expect(outcome(result, 'configmaps', 'web-config')?.action).toBe('created');
  });

  it('waits for a namespace that is still being deleted, then restores into it', async () => {
    const { client } = env;
    const target = uniqueName('term');
    cleanup.push(target);
    const spec = { includedNamespaces: [ns], namespaceMapping: { [ns]: target }, includedResources: ['configmaps', 'namespaces'] };
    expect((await restoreNow(env, backup, spec)).result.phase).toBe('Completed');
    // A finalizer holds one ConfigMap, and with it the namespace, in Terminating until we let go.
    await client.patch(CORE.configMaps, target, 'settings', { metadata: { finalizers: ['example.com/hold'] } }, 'merge');
    await client.delete(CORE.namespaces, undefined, target);
    expect((await client.get(CORE.namespaces, undefined, target)).metadata?.deletionTimestamp).toBeDefined();
    let live: readonly string[] = [];
    const running = restoreNow(env, backup, spec, {}, uniqueName('r'), (lines) => (live = lines));
    const waiting = `namespace ${target} is being deleted; waiting until it is gone before restoring it`;
    // Let go only once the restore says it waits, so the wait is what is tested.
    await waitUntil('the restore to wait for the namespace', async () => (live.some((l) => l.includes(waiting)) ? true : undefined), 60_000, 50);
    await client.patch(CORE.configMaps, target, 'settings', { metadata: { finalizers: null } }, 'merge');
    const { result, lines } = await running;
    expect(result.phase).toBe('Completed');
    expect(lines.some((l) => l.includes(waiting))).toBe(true);
    expect(outcome(result, 'namespaces', target)?.action).toBe('created');
    expect(outcome(result, 'configmaps', 'settings')?.action).toBe('created');
    const cm = await client.get(CORE.configMaps, target, 'settings');
    expect(cm.metadata?.finalizers).toBeUndefined();
  });

  it('fails the custom resources of a CRD that never becomes Established, naming the reason; a dry run marks them unvalidated', async () => {
    const target = uniqueName('gadgets');
    const crdName = `gadgets.${group}`;
    // Kind Gizmo is taken by gizmos.<group>, so the apiserver does not accept this CRD's names.
    const entries = [
      { name: 'metadata/version', body: '1.1.0' },
      {
        name: `resources/customresourcedefinitions.apiextensions.k8s.io/cluster/${crdName}.json`,
        body: JSON.stringify({
          apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: crdName },
          spec: {
            group, scope: 'Namespaced', names: { plural: 'gadgets', singular: 'gadget', kind: 'Gizmo', listKind: 'GizmoList' },
            versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
          },
        }),
      },
      { name: `resources/gadgets.${group}/namespaces/${target}/x.json`, body: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: { name: 'x', namespace: target } }) },
    ];
    const name = uniqueName('gadgets');
    await env.store.putTarball(name, (async function* () {
      yield await gzTar(entries);
    })());
    const gadgetBackup = newBackup(name, 'stowage');
    try {
      const dry = (await restoreNow(env, gadgetBackup, { dryRun: true })).result;
      expect(outcome(dry, `gadgets.${group}`, 'x')).toMatchObject({
        action: 'created', validated: false,
        reason: `would be created; not validated by the API server, as namespace ${target} and CustomResourceDefinition ${crdName} would be created first`,
      });
      expect(await getOrUndefined(env.client, CUSTOM_RESOURCE_DEFINITIONS, undefined, crdName)).toBeUndefined();

      cleanup.push(target);
      const { result } = await restoreNow(env, gadgetBackup, {}, { waitTimeoutMs: 20_000 });
      expect(result.phase).toBe('PartiallyFailed');
      expect(outcome(result, 'customresourcedefinitions.apiextensions.k8s.io', crdName)?.action).toBe('created');
      const failed = outcome(result, `gadgets.${group}`, 'x');
      expect(failed?.action).toBe('failed');
      expect(failed?.reason).toContain(`CustomResourceDefinition ${crdName} was not accepted: `);
      expect(result.results.errors.namespaces[target]).toHaveLength(1);
    } finally {
      await env.client.delete(CUSTOM_RESOURCE_DEFINITIONS, undefined, crdName).catch(() => undefined);
    }
  });

  it('fails an item whose resource is not served and has no CRD in the restore, and carries on', async () => {
    const target = uniqueName('nocrd');
    cleanup.push(target);
    const { result } = await restoreNow(env, backup, {
      includedNamespaces: [ns], namespaceMapping: { [ns]: target }, excludedResources: ['customresourcedefinitions'],
    }, { discovered: (await env.client.discover()).filter((r) => r.groupResource !== `gizmos.${group}`) });
    expect(result.phase).toBe('PartiallyFailed');
    expect(outcome(result, `gizmos.${group}`, 'g1')).toMatchObject({
      action: 'failed', reason: `gizmos.${group} is not served by this cluster, and the restore holds no CustomResourceDefinition for it`,
    });
    expect(outcome(result, 'configmaps', 'settings')?.action).toBe('created');
    expect(isNotFound(await env.client.get(gizmos, target, 'g1').catch((e: unknown) => e))).toBe(true);
  });
});
