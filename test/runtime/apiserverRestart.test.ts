// Restarts kube-apiserver under a running informer and a leader, on a control plane of this test's
// own (the shared one must not be restarted): events keep arriving after the restart, the informer
// relists when its resourceVersion is gone, a leader keeps its lease through an outage longer than
// the lease (nobody can take it meanwhile, not even a candidate that waited all along), and a leader
// whose lease another holder took as the API came back stops within a retry period.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { CORE, LEASES, createDynamicClient, isConflict, loadKubeConfig, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
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
      await waitUntil('the informer to have restarted its watch at least once', async () => (inf.stats().restarts >= 1 ? true : undefined), 20_000, 50);
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

  const timing = { leaseDurationMs: 4000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
  type Lease = KubeObject & { spec: { holderIdentity?: string; renewTime?: string } };

  it('keeps the leader leading through an outage longer than the lease; it renews once the API answers', async () => {
    const log: string[] = [];
    const elect = (identity: string) => startLeaderElection({
      client, namespace: 'watched', name: 'outage', identity, ...timing,
      onStartedLeading: () => void log.push(`start:${identity}`),
      onStoppedLeading: () => void log.push(`stop:${identity}`),
    });
    const leader = elect('leader');
    await waitUntil('leading', async () => (leader.isLeader() ? true : undefined), 10_000, 50);
    const follower = elect('follower');
    try {
      await new Promise((r) => setTimeout(r, 1000));
      await cp.stopApiserver();
      // Longer than leaseDuration and renewDeadline together.
      await new Promise((r) => setTimeout(r, timing.leaseDurationMs + timing.renewDeadlineMs));
      expect(leader.isLeader()).toBe(true);
      await cp.startApiserver();
      const back = Date.now();
      const renewed = await waitUntil('renewed after the outage', async () => {
        const l = await client.get<Lease>(LEASES, 'watched', 'outage');
        return l.spec.holderIdentity === 'leader' && Date.parse(l.spec.renewTime ?? '') >= back - 1000 ? l : undefined;
      }, 20_000, 50);
      process.stderr.write(`[outage] leader renewed ${Date.parse(renewed.spec.renewTime ?? '') - back} ms after the test saw the API ready again (negative: before)\n`);
      // The follower, blind during the outage too, gives the leader a whole lease from the return.
      await new Promise((r) => setTimeout(r, timing.leaseDurationMs + 1000));
      expect(leader.isLeader()).toBe(true);
      expect(follower.isLeader()).toBe(false);
      expect(log).toEqual(['start:leader']);
    } finally {
      await follower.stop();
      await leader.stop();
    }
  });

  it('stops a leader within a retry period when another holder takes the lease as the API returns', async () => {
    let signal: AbortSignal | undefined;
    let stoppedAt = 0;
    const leader = startLeaderElection({
      client, namespace: 'watched', name: 'taken', identity: 'leader', ...timing,
      onStartedLeading: (s) => {
        signal = s;
      },
      onStoppedLeading: () => {
        stoppedAt = Date.now();
      },
    });
    try {
      await waitUntil('leading', async () => (leader.isLeader() ? true : undefined), 10_000, 50);
      await cp.stopApiserver();
      await new Promise((r) => setTimeout(r, timing.leaseDurationMs));
      await cp.startApiserver();
      // Another replica wins the race for the lease the moment the API answers.
      let takenAt = 0;
      for (;;) {
        const l = await client.get<Lease>(LEASES, 'watched', 'taken');
        try {
          await client.replace(LEASES, 'watched', 'taken', { ...l, spec: { ...l.spec, holderIdentity: 'intruder', renewTime: new Date().toISOString().replace(/Z$/, '000Z') } });
          takenAt = Date.now();
          break;
        } catch (err) {
          if (!isConflict(err)) throw err;
        }
      }
      await leader.done;
      process.stderr.write(`[outage] leader stopped ${stoppedAt - takenAt} ms after another holder took the lease\n`);
      expect(stoppedAt - takenAt).toBeLessThan(timing.retryPeriodMs + 700);
      expect(String(signal?.reason)).toContain('intruder holds the lease now');
    } finally {
      await leader.stop();
    }
  });
});
