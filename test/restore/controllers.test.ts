// Restores over what controllers maintain, on the real apiserver and controller-manager: the status
// an autoscaling/v1 HPA keeps in annotations does not make it differ; Endpoints of a Service with a
// selector (and its EndpointSlices) are left to their controllers; an owned item whose owner is
// already in the cluster is not said to be recreated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readArchive } from '../../src/archive/index.js';
import { CORE, type KubeObject } from '../../src/kube/index.js';
import type { RestoreResult } from '../../src/restore/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { DEPLOYMENTS, REPLICA_SETS, RESOURCE_QUOTAS, backupNow, createNs, getOrUndefined, res, restoreNow, setupEnv, type Env } from './support.js';

const HPAS_V1 = res('autoscaling', 'v1', 'horizontalpodautoscalers', true);
const ENDPOINTS = res('', 'v1', 'endpoints', true);
const CONDITIONS = 'autoscaling.alpha.kubernetes.io/conditions';

type Endpoints = KubeObject & { subsets?: { addresses?: { ip: string }[] }[] };
const addresses = (ep: Endpoints | undefined): string[] => (ep?.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip));
const outcomesOf = (r: RestoreResult, gr: string) => r.outcomes.filter((o) => o.groupResource === gr);
const outcome = (r: RestoreResult, gr: string, name: string) => r.outcomes.find((o) => o.groupResource === gr && o.name === name);

describe('restoring over objects that controllers maintain', () => {
  let env: Env;
  const cleanup: string[] = [];

  beforeAll(async () => {
    env = await setupEnv('restore-ctl');
  });

  afterAll(async () => {
    for (const n of cleanup) await env?.client.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    env?.close();
  });

  const deployment = (name: string): KubeObject => ({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, labels: { app: name } },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/web:1' }] } } },
  });

  it('an autoscaling/v1 HPA whose status changed since the backup already exists and matches, under either policy', async () => {
    const { client } = env;
    const ns = uniqueName('hpa');
    cleanup.push(ns);
    await createNs(client, ns);
    await client.create(HPAS_V1, ns, {
      apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'web' },
      spec: { minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 50, scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' } },
    });
    // The HPA controller reports that the Deployment is missing ...
    const conditions = async (): Promise<string | undefined> => (await client.get(HPAS_V1, ns, 'web')).metadata?.annotations?.[CONDITIONS];
    const before = await waitUntil('the HPA controller to write conditions', conditions, 60_000, 500);
    const backup = await backupNow(env, uniqueName('hpa'), { includedNamespaces: [ns] });
    const stored = (await readArchive(await env.store.getTarball(backup.metadata.name))).items.find((i) => i.groupResource === 'horizontalpodautoscalers.autoscaling');
    // Read at the preferred autoscaling/v2, where the controller's conditions are status, not annotations.
    expect(stored?.object.apiVersion).toBe('autoscaling/v2');
    expect((stored?.object.metadata as { annotations?: Record<string, string> }).annotations?.[CONDITIONS]).toBeUndefined();
    // ... then, once it exists, that it can scale it but has no metrics: the status annotations change, the spec does not.
    await client.create(DEPLOYMENTS, ns, deployment('web'));
    const after = await waitUntil('the HPA conditions to change', async () => {
      const now = await conditions();
      return now !== undefined && now !== before ? now : undefined;
    }, 60_000, 500);
    expect(after).not.toBe(before);

    for (const existingResourcePolicy of ['none', 'update'] as const) {
      const rv = (await client.get(HPAS_V1, ns, 'web')).metadata?.resourceVersion;
      const { result } = await restoreNow(env, backup, { includedNamespaces: [ns], includedResources: ['horizontalpodautoscalers'], existingResourcePolicy });
      expect(result.phase, existingResourcePolicy).toBe('Completed');
      expect(outcome(result, 'horizontalpodautoscalers.autoscaling', 'web'), existingResourcePolicy).toMatchObject({
        action: 'skipped', reason: 'already exists and matches the backup',
      });
      expect(result.warnings, existingResourcePolicy).toBe(0);
      expect(result.summary.updated, existingResourcePolicy).toBe(0);
      // Not rewritten: the backup's conditions are not put back (the HPA controller may have moved on by itself).
      const live = await client.get(HPAS_V1, ns, 'web');
      expect(live.metadata?.annotations?.[CONDITIONS]).not.toBe(before);
      if (live.metadata?.annotations?.[CONDITIONS] === after) expect(live.metadata?.resourceVersion).toBe(rv);
    }
  });

  it('leaves the Endpoints and EndpointSlices of a Service with a selector to their controllers, and restores hand-made Endpoints', async () => {
    const { client } = env;
    const ns = uniqueName('ep');
    cleanup.push(ns);
    await createNs(client, ns);
    await client.create(CORE.services, ns, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } });
    // A Service without a selector: its Endpoints are the user's.
    await client.create(CORE.services, ns, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext' }, spec: { ports: [{ port: 5432 }] } });
    await client.create(ENDPOINTS, ns, { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'ext' }, subsets: [{ addresses: [{ ip: '192.0.2.10' }], ports: [{ port: 5432 }] }] });
    // There is no kubelet: the Pod's status is written by hand, so that the endpoints controller gives web an address.
    await client.create(CORE.pods, ns, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', labels: { app: 'web' } },
      spec: { nodeName: 'stowage-no-such-node', containers: [{ name: 'c', image: 'registry.invalid/web:1', ports: [{ containerPort: 8080 }] }] },
    });
    await client.patchStatus(CORE.pods, ns, 'web-0', {
      status: { phase: 'Running', podIP: '10.244.9.9', podIPs: [{ ip: '10.244.9.9' }], conditions: [{ type: 'Ready', status: 'True' }] },
    });
    const webEndpoints = (at = ns): Promise<Endpoints | undefined> => getOrUndefined(client, ENDPOINTS, at, 'web') as Promise<Endpoints | undefined>;
    await waitUntil('the endpoints controller to list the Pod', async () => (addresses(await webEndpoints()).includes('10.244.9.9') ? true : undefined), 60_000, 500);
    const backup = await backupNow(env, uniqueName('ep'), { includedNamespaces: [ns] });
    const contents = await readArchive(await env.store.getTarball(backup.metadata.name));
    const slices = contents.items.filter((i) => i.groupResource === 'endpointslices.discovery.k8s.io' && i.name.startsWith('web-'));
    expect(slices.length).toBeGreaterThan(0);

    // The Pod goes: the live Endpoints no longer hold its address, the backup does.
    await client.delete(CORE.pods, ns, 'web-0', { gracePeriodSeconds: 0 });
    await waitUntil('the endpoints controller to drop the Pod', async () => (addresses(await webEndpoints()).length === 0 ? true : undefined), 60_000, 500);
    const liveRv = (await webEndpoints())?.metadata?.resourceVersion;

    const update = (await restoreNow(env, backup, {
      includedNamespaces: [ns], includedResources: ['services', 'endpoints', 'endpointslices'], existingResourcePolicy: 'update',
    })).result;
    expect(update.phase).toBe('Completed');
    expect(outcome(update, 'endpoints', 'web')).toMatchObject({
      action: 'skipped', reason: "maintained by the endpoints controller, which writes them from the cluster's Pods (Service web has a selector); left to it",
    });
    expect(outcome(update, 'services', 'web')).toMatchObject({ action: 'skipped', reason: 'already exists and matches the backup' });
    for (const s of slices) {
      expect(outcome(update, 'endpointslices.discovery.k8s.io', s.name)).toMatchObject({ action: 'skipped', reason: 'owned by Service web, which is already in the cluster; left to its controller' });
    }
    expect(update.summary.updated).toBe(0);
    expect(update.warnings).toBe(0);
    const afterUpdate = await webEndpoints();
    expect(addresses(afterUpdate)).toEqual([]);
    expect(afterUpdate?.metadata?.resourceVersion).toBe(liveRv);

    // Into a new namespace: the controllers make web's endpoints for the restored Service; ext's are restored.
    const target = uniqueName('ep-copy');
    cleanup.push(target);
    const copy = (await restoreNow(env, backup, { includedNamespaces: [ns], namespaceMapping: { [ns]: target }, excludedResources: ['pods'] })).result;
    expect(copy.phase).toBe('Completed');
    expect(outcome(copy, 'services', 'web')?.action).toBe('created');
    expect(outcome(copy, 'endpoints', 'web')).toMatchObject({ action: 'skipped', reason: expect.stringContaining('maintained by the endpoints controller') });
    for (const s of slices) {
      expect(outcome(copy, 'endpointslices.discovery.k8s.io', s.name)).toMatchObject({ action: 'skipped', reason: 'owned by Service web, which this restore recreates; its controller makes a new one' });
    }
    expect(outcome(copy, 'endpoints', 'ext')?.action).toBe('created');
    expect(addresses((await client.get(ENDPOINTS, target, 'ext')) as Endpoints)).toEqual(['192.0.2.10']);
    const made = await waitUntil('the endpoints controller to make web\'s Endpoints', () => webEndpoints(target), 60_000, 500);
    // Made from the cluster as it is (no Pod), not from the backup (the old Pod's address).
    expect(addresses(made)).toEqual([]);
  });

  it('an owned item whose owner already exists is left to the live controller, and one whose owner fails is restored; neither is said to be recreated', async () => {
    const { client } = env;
    const ns = uniqueName('own');
    cleanup.push(ns);
    await createNs(client, ns);
    await client.create(DEPLOYMENTS, ns, deployment('web'));
    const rs = await waitUntil('the ReplicaSet and Pod of web', async () => {
      const rss = await client.list(REPLICA_SETS, { namespace: ns });
      const pods = await client.list(CORE.pods, { namespace: ns });
      return rss.items.length === 1 && pods.items.length === 1 ? rss.items[0] : undefined;
    });
    const rsName = rs.metadata?.name ?? '';
    const backup = await backupNow(env, uniqueName('own'), { includedNamespaces: [ns] });
    const podName = (await readArchive(await env.store.getTarball(backup.metadata.name))).items.find((i) => i.groupResource === 'pods')?.name ?? '';
    expect(podName).not.toBe('');

    for (const dryRun of [true, false]) {
      const { result } = await restoreNow(env, backup, { includedNamespaces: [ns], dryRun });
      const what = dryRun ? 'dry run' : 'restore';
      expect(result.phase, what).toBe('Completed');
      expect(outcome(result, 'deployments.apps', 'web'), what).toMatchObject({ action: 'skipped', reason: 'already exists and matches the backup' });
      expect(outcome(result, 'replicasets.apps', rsName), what).toMatchObject({ action: 'skipped', reason: 'owned by Deployment web, which is already in the cluster; left to its controller' });
      expect(outcome(result, 'pods', podName), what).toMatchObject({
        action: 'skipped', reason: `owned by ReplicaSet ${rsName}, whose own controller is already in the cluster; left to them`,
      });
      expect(result.outcomes.filter((o) => o.reason.includes('which this restore recreates')), what).toEqual([]);
    }
    expect((await client.list(REPLICA_SETS, { namespace: ns })).items).toHaveLength(1);

    // An owner that fails (a quota admits no Deployment) recreates nothing: its ReplicaSet is restored, orphaned.
    const target = uniqueName('own-copy');
    cleanup.push(target);
    await createNs(client, target);
    await client.create(RESOURCE_QUOTAS, target, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { 'count/deployments.apps': '0' } } });
    await waitUntil('the quota to be computed', async () => {
      const q = await client.get<KubeObject & { status?: { hard?: Record<string, string> } }>(RESOURCE_QUOTAS, target, 'q');
      return q.status?.hard?.['count/deployments.apps'] === '0' ? true : undefined;
    });
    const failed = (await restoreNow(env, backup, { includedNamespaces: [ns], namespaceMapping: { [ns]: target } })).result;
    expect(outcome(failed, 'deployments.apps', 'web')).toMatchObject({ action: 'failed', reason: expect.stringContaining('exceeded quota') });
    expect(outcome(failed, 'replicasets.apps', rsName)).toMatchObject({ action: 'created', reason: 'created' });
    expect((await client.get(REPLICA_SETS, target, rsName)).metadata?.ownerReferences).toBeUndefined();
    // The ReplicaSet was recreated by this restore: its Pod is left to it.
    expect(outcome(failed, 'pods', podName)).toMatchObject({ action: 'skipped', reason: `owned by ReplicaSet ${rsName}, which this restore recreates; its controller makes a new one` });
    expect(outcomesOf((await restoreNow(env, backup, { includedNamespaces: [ns], excludedResources: ['deployments.apps'], dryRun: true })).result, 'replicasets.apps'))
      // Without its owner in the restore, the ReplicaSet is handled like any item: here it already exists.
      .toMatchObject([{ name: rsName, action: 'skipped', reason: expect.stringMatching(/^already exists and (matches|differs)/) }]);
  });
});
