// The dynamic client against the real apiserver: discovery, CRUD, patches, paging, status, watch,
// errors (RBAC, not found, gone, unreachable), rate limiting, events and CRD install.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import {
  CORE,
  KubeError,
  createDynamicClient,
  createEventRecorder,
  ensureCrds,
  isGone,
  isNotFound,
  loadKubeConfig,
  recordEvent,
  type DynamicClient,
  type KubeObject,
  type WatchEvent,
} from '../../src/kube/index.js';
import { uniqueName } from '../support/kube.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };

describe('DynamicClient', () => {
  let client: DynamicClient;
  let ns = '';

  beforeAll(async () => {
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 200, burst: 400 });
    ns = uniqueName('kube');
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });

  afterAll(async () => {
    await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    client.close();
  });

  it('discovers every resource once, at its group\'s preferred version where that serves it, without subresources', async () => {
    await ensureCrds(client);
    const res = await client.discover();
    const cm = res.find((r) => r.groupResource === 'configmaps');
    expect(cm).toMatchObject({ group: '', version: 'v1', kind: 'ConfigMap', namespaced: true, apiVersion: 'v1' });
    expect(cm?.verbs).toContain('list');
    expect(res.find((r) => r.groupResource === 'deployments.apps')).toMatchObject({ version: 'v1', kind: 'Deployment', shortNames: ['deploy'] });
    // autoscaling serves v2 (preferred) and v1. Every served version is listed, best first.
    expect(res.filter((r) => r.groupResource === 'horizontalpodautoscalers.autoscaling').map((r) => [r.version, r.versions])).toEqual([['v2', ['v2', 'v1']]]);
    expect(res.find((r) => r.groupResource === 'cronjobs.batch')).toMatchObject({ version: 'v1', apiVersion: 'batch/v1', kind: 'CronJob', versions: ['v1'] });
    // Removed since 1.20: policy/v1beta1 (PodSecurityPolicy, PDBs), discovery.k8s.io/v1beta1.
    expect(res.find((r) => r.groupResource === 'podsecuritypolicies.policy')).toBeUndefined();
    expect(res.find((r) => r.groupResource === 'poddisruptionbudgets.policy')).toMatchObject({ version: 'v1', versions: ['v1'] });
    expect(res.find((r) => r.groupResource === 'endpointslices.discovery.k8s.io')).toMatchObject({ version: 'v1', versions: ['v1'] });
    expect(res.find((r) => r.groupResource === 'jobs.batch')).toMatchObject({ version: 'v1', versions: ['v1'] });
    expect(res.find((r) => r.groupResource === 'namespaces')?.namespaced).toBe(false);
    expect(res.some((r) => r.resource.includes('/'))).toBe(false);
    expect(res.find((r) => r.groupResource === 'backups.stowage.dev')).toMatchObject({ kind: 'Backup', version: 'v1' });
    expect(new Set(res.map((r) => r.groupResource)).size).toBe(res.length);
  });

  it('creates, gets, replaces, patches (merge, json, strategic, apply) and deletes', async () => {
    const created = await client.create<ConfigMap>(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c1' }, data: { a: '1' } });
    expect(created.metadata?.uid).toBeTruthy();
    const got = await client.get<ConfigMap>(CORE.configMaps, ns, 'c1');
    expect(got.data).toEqual({ a: '1' });

    const replaced = await client.replace<ConfigMap>(CORE.configMaps, ns, 'c1', { ...got, data: { a: '2' } });
    expect(replaced.data).toEqual({ a: '2' });
    expect((await client.patch<ConfigMap>(CORE.configMaps, ns, 'c1', { data: { b: '3' } }, 'merge')).data).toEqual({ a: '2', b: '3' });
    expect((await client.patch<ConfigMap>(CORE.configMaps, ns, 'c1', [{ op: 'remove', path: '/data/a' }], 'json')).data).toEqual({ b: '3' });
    expect((await client.patch<ConfigMap>(CORE.configMaps, ns, 'c1', { data: { c: '4' } }, 'strategic')).data).toEqual({ b: '3', c: '4' });
    const applied = await client.patch<ConfigMap>(
      CORE.configMaps,
      ns,
      'c2',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c2' }, data: { x: 'y' } },
      'apply',
      { fieldManager: 'stowage-test', force: true },
    );
    expect(applied.data).toEqual({ x: 'y' });

    // A server-side dry run is validated but never stored.
    await client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dry' } }, { dryRun: true });
    await expect(client.get(CORE.configMaps, ns, 'dry')).rejects.toSatisfy(isNotFound);

    await client.delete(CORE.configMaps, ns, 'c1');
    const err = await client.get(CORE.configMaps, ns, 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeError);
    expect(isNotFound(err)).toBe(true);
    expect((err as KubeError).message).toBe(`get configmaps "c1" in namespace "${ns}": configmaps "c1" not found (404 NotFound)`);
  });

  it('lists page by page, filling in apiVersion and kind of every item', async () => {
    const pns = uniqueName('pages');
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: pns } });
    try {
      await Promise.all(
        Array.from({ length: 23 }, (_, i) => client.create(CORE.configMaps, pns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `p${i}`, labels: { set: 'p' } } })),
      );
      const pages: number[] = [];
      for await (const page of client.listPages<ConfigMap>(CORE.configMaps, { namespace: pns, labelSelector: 'set=p', pageSize: 10 })) {
        pages.push(page.items.length);
        expect(page.resourceVersion).not.toBe('');
        for (const item of page.items) expect([item.apiVersion, item.kind]).toEqual(['v1', 'ConfigMap']);
      }
      expect(pages).toEqual([10, 10, 3]);
      const all = await client.listAll<ConfigMap>(CORE.configMaps, { namespace: pns, labelSelector: 'set=p', pageSize: 7 });
      expect(all.items.map((c) => c.metadata?.name).sort()).toEqual(Array.from({ length: 23 }, (_, i) => `p${i}`).sort());
      const first = await client.list(CORE.configMaps, { namespace: pns, labelSelector: 'set=p', limit: 23 });
      expect(first.continue).toBeUndefined();
    } finally {
      await client.delete(CORE.namespaces, undefined, pns);
    }
  });

  it('patches status through the status subresource only', async () => {
    await ensureCrds(client);
    const b = await client.create<Backup>(RESOURCES.Backup, ns, newBackup('b1', ns, { ttl: '1h' }));
    // A status in a normal update is ignored when the status subresource is on.
    const viaMain = await client.patch<Backup>(RESOURCES.Backup, ns, 'b1', { status: { phase: 'Completed' } }, 'merge');
    expect(viaMain.status).toBeUndefined();
    const patched = await client.patchStatus<Backup>(RESOURCES.Backup, ns, 'b1', { status: { phase: 'InProgress', progress: { totalItems: 5, itemsBackedUp: 2 } } });
    expect(patched.status).toEqual({ phase: 'InProgress', progress: { totalItems: 5, itemsBackedUp: 2 } });
    // replaceStatus honours optimistic concurrency.
    const stale = { ...b, status: { phase: 'Failed' as const } };
    await expect(client.replaceStatus(RESOURCES.Backup, ns, 'b1', stale)).rejects.toMatchObject({ status: 409 });
  });

  it('names the missing permission when RBAC refuses', async () => {
    const user = createDynamicClient(loadKubeConfig(inject('cluster').userKubeconfigPath));
    try {
      const err = await user.list(RESOURCES.Backup, { namespace: ns }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KubeError);
      expect((err as KubeError).status).toBe(403);
      expect((err as KubeError).message).toContain(`list backups.stowage.dev in namespace "${ns}"`);
      expect((err as KubeError).message).toContain('User "tester" cannot list resource "backups" in API group "stowage.dev"');
    } finally {
      user.close();
    }
  });

  it('streams watch events from a resourceVersion and ends cleanly on abort', async () => {
    const start = await client.list(CORE.configMaps, { namespace: ns, limit: 1 });
    const ac = new AbortController();
    const seen: WatchEvent<ConfigMap>[] = [];
    const done = (async () => {
      for await (const ev of client.watch<ConfigMap>(CORE.configMaps, { namespace: ns, resourceVersion: start.resourceVersion, signal: ac.signal })) {
        if (ev.type === 'BOOKMARK') continue;
        seen.push(ev);
        if (seen.length === 3) ac.abort();
      }
    })().catch((e: unknown) => (ac.signal.aborted ? undefined : Promise.reject(e)));
    await client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w1' } });
    await client.patch(CORE.configMaps, ns, 'w1', { data: { k: 'v' } }, 'merge');
    await client.delete(CORE.configMaps, ns, 'w1');
    await done;
    expect(seen.map((e) => `${e.type}:${e.object.metadata?.name}`)).toEqual(['ADDED:w1', 'MODIFIED:w1', 'DELETED:w1']);
  });

  it('reports a too-old resourceVersion as Gone', async () => {
    // The watch cache of a resource starts when its CRD is served, so resourceVersion 1 predates it.
    await ensureCrds(client);
    const err = await (async () => {
      for await (const ev of client.watch(RESOURCES.Backup, { namespace: ns, resourceVersion: '1', allowWatchBookmarks: false })) return ev;
      return undefined;
    })().catch((e: unknown) => e);
    expect(isGone(err)).toBe(true);
    expect((err as KubeError).message).toMatch(new RegExp(`^watch backups.stowage.dev in namespace "${ns}": too old resource version: 1 .*\\(410 Expired\\)$`));
  });

  it('holds requests to qps once the burst is spent', async () => {
    const slow = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 10, burst: 2 });
    try {
      const t0 = Date.now();
      await Promise.all(Array.from({ length: 7 }, () => slow.get(CORE.namespaces, undefined, ns)));
      // 2 at once, then 5 more at 10/s: at least ~500 ms.
      expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    } finally {
      slow.close();
    }
  });

  it('discovery has a token bucket of its own: reading every group version leaves the burst to the other calls', async () => {
    const c = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 2, burst: 60 });
    try {
      const gvs = (await c.request<{ groups: { versions: unknown[] }[] }>({ method: 'GET', path: '/apis' })).groups.reduce((n, g) => n + g.versions.length, 0);
      expect(gvs + 3).toBeLessThan(60);
      await c.discover();
      const t0 = Date.now();
      // One shared bucket would have ~60 - 1 - (gvs + 3) tokens left, and hold the rest of these 50 to 2/s: well over 5 s.
      await Promise.all(Array.from({ length: 50 }, () => c.get(CORE.namespaces, undefined, ns)));
      expect(Date.now() - t0).toBeLessThan(3000);
    } finally {
      c.close();
    }
  });

  it('fails with a clear error when the apiserver cannot be reached', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kc-'));
    const file = path.join(dir, 'config');
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'),
    );
    const dead = createDynamicClient(loadKubeConfig(file));
    const err = await dead.get(CORE.namespaces, undefined, 'default').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeError);
    expect((err as KubeError).status).toBe(0);
    expect((err as KubeError).message).toMatch(/^get namespaces "default": cannot reach the apiserver at https:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
    fs.writeFileSync(file, 'clusters: [not: a, kubeconfig');
    expect(() => loadKubeConfig(file)).toThrow(`invalid kubeconfig ${file}`);
    fs.rmSync(dir, { recursive: true });
  });

  it('records events and counts repeats on the same Event', async () => {
    await ensureCrds(client);
    const b = await client.create<Backup>(RESOURCES.Backup, ns, newBackup('evented', ns));
    await recordEvent(client, b, 'Normal', 'Started', 'backup started');
    await recordEvent(client, b, 'Normal', 'Started', 'backup started');
    await recordEvent(client, b, 'Warning', 'Failed', 'bucket unreachable');
    const events = await client.listAll<KubeObject & { reason: string; count: number; type: string; involvedObject: { uid: string; kind: string } }>(CORE.events, {
      namespace: ns,
      fieldSelector: `involvedObject.name=evented`,
    });
    const byReason = Object.fromEntries(events.items.map((e) => [e.reason, e]));
    expect(events.items).toHaveLength(2);
    expect(byReason.Started?.count).toBe(2);
    expect(byReason.Failed).toMatchObject({ type: 'Warning', count: 1, involvedObject: { uid: b.metadata.uid, kind: 'Backup' } });

    // A recorder whose writes are refused reports the error instead of throwing.
    const user = createDynamicClient(loadKubeConfig(inject('cluster').userKubeconfigPath));
    const errors: unknown[] = [];
    await createEventRecorder(user, { onError: (e) => errors.push(e) }).event(b, 'Normal', 'X', 'y');
    user.close();
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain('cannot create resource "events"');
  });
});
