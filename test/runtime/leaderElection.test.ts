// Leader election on a real Lease: one leader at a time, fast hand-over on release, a leader that
// sees someone else holding the lease steps down at once, and a new process of the same pod takes
// a lease its crashed predecessor holds at once while another pod waits it out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { CORE, LEASES, createDynamicClient, loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { startLeaderElection, type LeaderElector } from '../../src/runtime/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';

type Lease = { metadata: { resourceVersion?: string }; spec: { holderIdentity?: string; leaseTransitions?: number; renewTime?: string } };

describe('leader election', () => {
  let client: DynamicClient;
  let ns = '';
  const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

  beforeAll(async () => {
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath));
    ns = uniqueName('le');
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });
  afterAll(async () => {
    await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    client.close();
  });

  function candidate(identity: string, log: string[]): LeaderElector {
    return startLeaderElection({
      client,
      namespace: ns,
      name: 'stowage',
      identity,
      ...timing,
      onStartedLeading: () => void log.push(`start:${identity}`),
      onStoppedLeading: () => void log.push(`stop:${identity}`),
    });
  }

  it('elects one leader and hands over quickly when it stops', async () => {
    const log: string[] = [];
    const a = candidate('a', log);
    await waitUntil('a leads', async () => (a.isLeader() ? true : undefined), 10_000, 50);
    const b = candidate('b', log);
    // While b runs, a renews twice (each renewal a new renewTime): b saw it held and left it.
    const renewals = new Set<string>();
    await waitUntil('a to renew twice while b runs', async () => {
      const l = await client.get<Lease>(LEASES, ns, 'stowage');
      if (l.spec.holderIdentity === 'a' && l.spec.renewTime !== undefined) renewals.add(l.spec.renewTime);
      return renewals.size >= 3 ? true : undefined;
    }, 10_000, 50);
    expect(b.isLeader()).toBe(false);
    const lease = await client.get<Lease>(LEASES, ns, 'stowage');
    expect(lease.spec.holderIdentity).toBe('a');
    expect(lease.spec.renewTime).toMatch(/\.\d{6}Z$/);

    const t0 = Date.now();
    await a.stop();
    await a.done;
    await waitUntil('b leads', async () => (b.isLeader() ? true : undefined), 10_000, 20);
    // Released, so b did not wait out the 3 s lease.
    expect(Date.now() - t0).toBeLessThan(timing.leaseDurationMs);
    await b.stop();
    expect(log).toEqual(['start:a', 'stop:a', 'start:b', 'stop:b']);
    const after = await client.get<Lease>(LEASES, ns, 'stowage');
    expect(after.spec.leaseTransitions).toBe(1); // a -> b
    expect(after.spec.holderIdentity).toBe('');
  });

  it('steps down at once when another holder takes the lease', async () => {
    const log: string[] = [];
    let signal: AbortSignal | undefined;
    const a = startLeaderElection({
      client,
      namespace: ns,
      name: 'stolen',
      identity: 'a',
      ...timing,
      onStartedLeading: (s) => {
        signal = s;
      },
      onStoppedLeading: () => void log.push('stop'),
    });
    try {
      await waitUntil('a leads', async () => (a.isLeader() ? true : undefined), 10_000, 50);
      const lease = await client.get<Lease>(LEASES, ns, 'stolen');
      await client.replace(LEASES, ns, 'stolen', { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder' } });
      const t0 = Date.now();
      await a.done;
      expect(Date.now() - t0).toBeLessThan(timing.retryPeriodMs * 2 + 500);
      expect(log).toEqual(['stop']);
      expect(signal?.aborted).toBe(true);
      expect(String(signal?.reason)).toContain('intruder holds the lease now');
    } finally {
      await a.stop();
    }
  });

  it('lets a new process of the same pod take the lease at once; another pod waits for it to expire', async () => {
    const log: string[] = [];
    const start = (lease: string, identity: string): LeaderElector => startLeaderElection({
      client, namespace: ns, name: lease, identity, ...timing, releaseOnStop: false,
      onStartedLeading: () => void log.push(`start:${identity}`),
      onStoppedLeading: () => void log.push(`stop:${identity}`),
    });
    // A crash: the first process stops renewing without handing the lease back.
    const first = start('same-pod', 'pod-a_1');
    await waitUntil('first leads', async () => (first.isLeader() ? true : undefined), 10_000, 50);
    await first.stop();
    const t0 = Date.now();
    const second = start('same-pod', 'pod-a_2');
    await waitUntil('second leads', async () => (second.isLeader() ? true : undefined), 10_000, 20);
    const samePodMs = Date.now() - t0;
    expect(samePodMs).toBeLessThan(timing.retryPeriodMs + 500);
    await second.stop();

    const other = start('other-pod', 'pod-b_1');
    await waitUntil('other leads', async () => (other.isLeader() ? true : undefined), 10_000, 50);
    await other.stop();
    const t1 = Date.now();
    const stranger = start('other-pod', 'pod-c_1');
    await waitUntil('stranger leads', async () => (stranger.isLeader() ? true : undefined), 10_000, 20);
    const otherPodMs = Date.now() - t1;
    expect(otherPodMs).toBeGreaterThanOrEqual(timing.leaseDurationMs);
    await stranger.stop();
    process.stderr.write(`[leader] same pod took over in ${samePodMs} ms, another pod in ${otherPodMs} ms\n`);
    const lease = await client.get<Lease>(LEASES, ns, 'same-pod');
    expect(lease.spec.holderIdentity).toBe('pod-a_2');
    expect(lease.spec.leaseTransitions).toBe(1);
  });
});
