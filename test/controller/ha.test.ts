// Two replicas: only the Lease holder reconciles; when it dies the other takes over within the
// lease duration, and a backup created afterwards completes exactly once. Metrics show it.
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient } from '../support/server.js';

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

describe('high availability and metrics', () => {
  it('fails over to the follower within the lease duration; the backup runs exactly once', async () => {
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const c = testClient(kubeconfigPath);
    const ns = uniqueName('ha');
    const loc = filesystemLocation();
    const a = await startServer({ kubeconfigPath, namespace: ns, location: loc });
    const b = await startServer({ kubeconfigPath, namespace: ns, waitForLeader: false });
    try {
      expect(b.output()).not.toContain('became the leader');
      const ready = await fetch(`http://127.0.0.1:${b.metricsPort}/readyz`);
      expect(ready.status).toBe(200);

      await a.stop('SIGKILL');
      const t0 = Date.now();
      await b.waitForOutput(/became the leader/, 30_000);
      const failoverMs = Date.now() - t0;
      process.stderr.write(`[ha] failover took ${failoverMs} ms\n`);
      expect(failoverMs).toBeLessThanOrEqual(15_000 + 2_000 + 1_000); // lease duration + one retry period + slack

      await c.create(RESOURCES.Backup, ns, newBackup('after-failover', ns, { includedNamespaces: ['default'] }));
      const done = await waitUntil('backup completed', async () => {
        const x = await c.get<Backup>(RESOURCES.Backup, ns, 'after-failover');
        return x.status?.phase === 'Completed' ? x : undefined;
      }, 60_000, 250);
      expect(done.status?.phase).toBe('Completed');
      // The controller logs the outcome and counts it in metrics just after the status patch lands.
      await b.waitForOutput(/backup \S+\/after-failover Completed/, 10_000);
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
