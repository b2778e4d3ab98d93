// The informer and a controller against the shared real apiserver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { CORE, createDynamicClient, ensureCrds, loadKubeConfig, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { createInformer, splitKey, startController, type InformerEvent } from '../../src/runtime/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };

describe('informer', () => {
  let client: DynamicClient;
  let ns = '';

  beforeAll(async () => {
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 100, burst: 200 });
    ns = uniqueName('inf');
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });
  afterAll(async () => {
    await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    client.close();
  });

  it('lists, syncs, then delivers add/update/delete events by key and keeps its cache current', async () => {
    await client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pre', labels: { t: 'x' } } });
    const inf = createInformer<ConfigMap>(client, CORE.configMaps, { namespace: ns, labelSelector: 't=x' });
    const events: string[] = [];
    inf.addHandler((ev: InformerEvent<ConfigMap>) => events.push(`${ev.type}:${ev.key}`));
    expect(inf.hasSynced()).toBe(false);
    inf.start();
    try {
      await inf.waitForSync();
      expect(inf.hasSynced()).toBe(true);
      expect(inf.keys()).toEqual([`${ns}/pre`]);
      expect(events).toEqual([`add:${ns}/pre`]);

      await client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'new', labels: { t: 'x' } } });
      await client.patch(CORE.configMaps, ns, 'new', { data: { k: 'v' } }, 'merge');
      await client.delete(CORE.configMaps, ns, 'pre');
      // Not matching the selector: never seen.
      await client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } });
      await waitUntil('delete event', async () => (events.includes(`delete:${ns}/pre`) ? true : undefined), 20_000);
      expect(events).toEqual([`add:${ns}/pre`, `add:${ns}/new`, `update:${ns}/new`, `delete:${ns}/pre`]);
      expect(inf.get(`${ns}/new`)?.data).toEqual({ k: 'v' });
      expect(inf.get(`${ns}/pre`)).toBeUndefined();
      expect(inf.list().map((c) => c.metadata?.name)).toEqual(['new']);

      // A late subscriber gets the cache replayed as adds.
      const late: string[] = [];
      inf.addHandler((ev) => late.push(`${ev.type}:${ev.key}`));
      expect(late).toEqual([`add:${ns}/new`]);
    } finally {
      await inf.stop();
    }
    await expect(inf.waitForSync()).resolves.toBeUndefined();
  });

  it('feeds a controller that reconciles custom resources and patches their status', async () => {
    await ensureCrds(client);
    const inf = createInformer<Backup>(client, RESOURCES.Backup, { namespace: ns });
    const reconciled: string[] = [];
    const ctl = startController({
      name: 'test-backup',
      informers: [inf],
      workers: 3,
      reconciler: {
        async reconcile(key) {
          const b = inf.get(key);
          if (b === undefined || b.status?.phase === 'Completed') return;
          reconciled.push(key);
          const { namespace, name } = splitKey(key);
          await client.patchStatus(RESOURCES.Backup, namespace, name, { status: { phase: 'Completed', progress: { totalItems: 1, itemsBackedUp: 1 } } });
        },
      },
    });
    try {
      await ctl.ready;
      await Promise.all(['b1', 'b2', 'b3', 'b4'].map((n) => client.create(RESOURCES.Backup, ns, newBackup(n, ns))));
      await waitUntil('all completed', async () => {
        const list = await client.list<Backup>(RESOURCES.Backup, { namespace: ns });
        return list.items.length === 4 && list.items.every((b) => b.status?.phase === 'Completed') ? true : undefined;
      }, 20_000);
      // Each backup needed one reconcile that did work; the status updates it caused were no-ops.
      expect(reconciled.sort()).toEqual(['b1', 'b2', 'b3', 'b4'].map((n) => `${ns}/${n}`));
    } finally {
      await ctl.stop();
      await inf.stop();
    }
  });
});
