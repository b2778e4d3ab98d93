// Restarts kube-apiserver under a running informer and a leader, on a control plane of this test's
// own (the shared one must not be restarted): events keep arriving after the restart, the informer
// relists when its resourceVersion is gone, and a leader that cannot renew steps down in time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { CORE, createDynamicClient, loadKubeConfig, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { createInformer, startController, startLeaderElection } from '../../src/runtime/index.js';
import { waitUntil } from '../support/kube.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const cm = (name: string): ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });

describe('kube-apiserver restart', () => {
  let cp: ControlPlane;
  let client: DynamicClient;

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false });
    client = createDynamicClient(loadKubeConfig(cp.kubeconfigPath), { qps: 100, burst: 200 });
    for (const name of ['watched', 'elsewhere']) await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await cp?.stop();
  });

  it('keeps delivering events to an informer-fed controller across a restart, relisting when needed', async () => {
    const inf = createInformer<ConfigMap>(client, CORE.configMaps, { namespace: 'watched', backoff: { baseMs: 100, maxMs: 1000 } });
    const seen = new Set<string>();
    const deleted: string[] = [];
    inf.addHandler((ev) => {
      if (ev.type === 'delete') deleted.push(ev.key);
    });
    const ctl = startController({
      name: 'restart-test',
      informers: [inf],
      reconciler: {
        async reconcile(key) {
          const obj = inf.get(key);
          if (obj !== undefined) seen.add(`${key}@${obj.data?.v ?? ''}`);
        },
      },
    });
    try {
      await ctl.ready;
      await client.create(CORE.configMaps, 'watched', cm('before'));
      await client.create(CORE.configMaps, 'watched', cm('doomed'));
      await waitUntil('event before restart', async () => (seen.has('watched/before@') ? true : undefined), 20_000, 50);

      // Move the global resourceVersion past the informer's, so its watch position is gone after the restart.
      await client.create(CORE.configMaps, 'elsewhere', cm('bump'));
      await cp.stopApiserver();
      // While it is down the informer keeps failing and backing off, not giving up.
      await new Promise((r) => setTimeout(r, 1500));
      expect(inf.stats().restarts).toBeGreaterThanOrEqual(1);
      await cp.startApiserver();

      // Deleted while the informer is probably still backing off: seen by its relist or its new watch.
      await client.delete(CORE.configMaps, 'watched', 'doomed');
      await client.create(CORE.configMaps, 'watched', cm('after'));
      await client.patch(CORE.configMaps, 'watched', 'before', { data: { v: '2' } }, 'merge');
      await waitUntil('events after restart', async () => (seen.has('watched/after@') && seen.has('watched/before@2') ? true : undefined), 60_000, 50);
      await waitUntil('delete after restart', async () => (deleted.includes('watched/doomed') ? true : undefined), 20_000, 50);
      expect(deleted).toEqual(['watched/doomed']);
      expect(inf.stats().relists).toBeGreaterThanOrEqual(1);
      // No controller-manager here, so no kube-root-ca.crt: the cache holds exactly our two objects.
      expect(inf.keys().sort()).toEqual(['watched/after', 'watched/before']);
      expect(inf.get('watched/before')?.data).toEqual({ v: '2' });
    } finally {
      await ctl.stop();
      await inf.stop();
    }
  });

  it('makes a leader that cannot renew step down within renewDeadline', async () => {
    let lostAt = 0;
    const leader = startLeaderElection({
      client,
      namespace: 'watched',
      name: 'stowage',
      leaseDurationMs: 4000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 300,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => {
        lostAt = Date.now();
      },
    });
    try {
      await waitUntil('leading', async () => (leader.isLeader() ? true : undefined), 10_000, 50);
      const down = Date.now();
      await cp.stopApiserver();
      await leader.done;
      // The last renewal happened at most retryPeriod before `down`; it must give up by renewDeadline
      // after that, plus one retry period of slack, and certainly before the lease could expire.
      expect(lostAt - down).toBeLessThan(2000 + 300 + 500);
      expect(lostAt - down).toBeLessThan(4000);
      expect(leader.isLeader()).toBe(false);
    } finally {
      await leader.stop();
      await cp.startApiserver();
    }
  });
});
