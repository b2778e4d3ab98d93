// Two replicas: only the Lease holder reconciles; when it dies the other takes over once the
// lease goes unrenewed for its duration, and a backup created afterwards completes exactly once.
// Metrics show it. The leader is a process (it is SIGKILLed); the follower runs in process and
// moves its clock through the lease duration instead of waiting it out.
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer } from '../support/inProcessServer.js';
import { filesystemLocation, startServer, testClient } from '../support/server.js';

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

describe('high availability and metrics', () => {
  it('fails over to the follower once the lease goes unrenewed for its duration; the backup runs exactly once', async () => {
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const c = testClient(kubeconfigPath);
    const ns = uniqueName('ha');
    const loc = filesystemLocation();
    const a = await startServer({ kubeconfigPath, namespace: ns, location: loc });
    const b = await startInProcessServer({ kubeconfigPath, namespace: ns, waitForLeader: false });
    try {
      expect(b.output()).not.toContain('became the leader');
      const ready = await fetch(`http://127.0.0.1:${b.metricsPort}/readyz`);
      expect(ready.status).toBe(200);

      // The follower has seen the leader's lease, and says how long it must go unrenewed.
      await b.waitForOutput(/lease \S+: held by test-pod-\S+; \S+ takes it once it goes 15 s unrenewed/);
      await a.stop('SIGKILL');
      // The lease duration passes at once: the follower takes over at its next attempt. (Had the
      // leader renewed after the follower's last read, the follower waits the full duration from
      // the read that saw it: slower, never wrong.)
      b.clock.advance(15_000);
      await b.waitForOutput(/became the leader/);

      await c.create(RESOURCES.Backup, ns, newBackup('after-failover', ns, { includedNamespaces: ['default'] }));
      const done = await waitUntil('backup completed', async () => {
        const x = await c.get<Backup>(RESOURCES.Backup, ns, 'after-failover');
        return x.status?.phase === 'Completed' ? x : undefined;
      }, 60_000, 250);
      expect(done.status?.phase).toBe('Completed');
      // The controller logs the outcome and counts it in metrics just after the status patch lands.
      await b.waitForOutput(/backup \S+\/after-failover Completed/);
      expect(b.output().match(/backup \S+\/after-failover Completed/g)?.length).toBe(1);

      const metrics = await scrape(b.metricsPort);
      expect(metrics).toMatch(/stowage_backup_attempt_total\{[^}]*\} 1/);
      expect(metrics).toMatch(/stowage_backup_success_total\{[^}]*\} 1/);
      expect(metrics).toMatch(/stowage_backup_storage_location_available\{location="default"\} 1/);
      expect(metrics).toMatch(/stowage_backup_last_successful_timestamp\{[^}]*\} \d{9,}/);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
