// What happens to a backup when storage goes down, the plugin process dies, or the server dies.
// The servers run with a low --client-qps so a backup stays InProgress long enough to interfere.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { startS3Server } from '../../scripts/cluster/s3.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startSuccessor } from '../support/inProcessServer.js';
import { createS3CredentialsSecret, ensureNamespace, filesystemLocation, s3LocationSpec, startServer, testClient } from '../support/server.js';

const SLOW = ['--client-qps', '4', '--client-burst', '1'];
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function client(): DynamicClient {
  return testClient(inject('cluster').kubeconfigPath);
}

async function phaseOf(c: DynamicClient, ns: string, name: string): Promise<Backup> {
  return c.get<Backup>(RESOURCES.Backup, ns, name);
}

async function waitPhase(c: DynamicClient, ns: string, name: string, phases: string[], timeoutMs = 120_000): Promise<Backup> {
  return waitUntil(`backup ${name} in ${phases.join('|')}`, async () => {
    const b = await phaseOf(c, ns, name);
    return phases.includes(b.status?.phase ?? 'New') ? b : undefined;
  }, timeoutMs, 100);
}

/** Pids of the server's plugin processes (children running `run-plugins`). */
function pluginPids(serverPid: number): number[] {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      return ppid === serverPid && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('run-plugins');
    } catch {
      return false;
    }
  });
}

describe('backup failures', () => {
  it('fails cleanly when storage stays down longer than the outage window, and uploads the spooled log when it is back', async () => {
    const c = client();
    const ns = uniqueName('outage');
    const s3 = await startS3Server({ buckets: ['vault'] });
    cleanups.push(() => s3.close());
    await ensureNamespace(c, ns);
    await createS3CredentialsSecret(c, ns, 'cloud-credentials', s3);
    const server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, args: [...SLOW, '--object-store-outage-timeout', '5s'], location: { name: 'default', spec: s3LocationSpec(s3, { bucket: 'vault', prefix: 'cluster-a', secret: 'cloud-credentials', validationFrequency: '2s' }) } });
    cleanups.push(() => server.stop());
    await waitUntil('location Available', async () => {
      const l = await c.get<{ status?: { phase?: string } }>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? true : undefined;
    }, 60_000);

    // Its own namespace only: the run need only be in progress when storage goes, not read the whole shared cluster at 4 requests/s.
    await c.create(RESOURCES.Backup, ns, newBackup('doomed', ns, { includedNamespaces: [ns] }));
    await waitPhase(c, ns, 'doomed', ['InProgress']);
    await s3.stop();
    const down = Date.now();
    const b = await waitPhase(c, ns, 'doomed', ['Completed', 'PartiallyFailed', 'Failed']);
    const failedAfterMs = Date.now() - down;
    expect(b.status?.phase).toBe('Failed');
    const outage = /the object store was unreachable for \d+(\.\d+)?s( \(\d+ attempts\))?, longer than the 5s outage window \(--object-store-outage-timeout\): .*ECONNREFUSED/;
    expect(b.status?.failureReason).toMatch(outage);
    expect(server.output()).toMatch(outage);
    await server.waitForOutput(/kept it at \S+ and will upload it when the location is available/);

    await s3.start();
    const up = Date.now();
    const s3c = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    cleanups.push(async () => s3c.destroy());
    const keys = await waitUntil('the spooled log to be uploaded', async () => {
      const r = await s3c.send(new ListObjectsV2Command({ Bucket: 'vault', Prefix: 'cluster-a/backups/doomed/' }));
      const ks = (r.Contents ?? []).map((o) => o.Key ?? '');
      return ks.includes('cluster-a/backups/doomed/doomed-logs.gz') ? ks : undefined;
    }, 60_000, 500);
    expect(keys).not.toContain('cluster-a/backups/doomed/stowage-backup.json');
    process.stderr.write(`[backupFailures] S3 down: backup Failed ${(failedAfterMs / 1000).toFixed(1)} s after the stop (window 5s): ${b.status?.failureReason}; log uploaded ${((Date.now() - up) / 1000).toFixed(1)} s after S3 was back\n`);
    const log = await s3c.send(new GetObjectCommand({ Bucket: 'vault', Key: 'cluster-a/backups/doomed/doomed-logs.gz' }));
    const text = (await import('node:zlib')).gunzipSync(Buffer.from(await log.Body!.transformToByteArray())).toString();
    expect(text).toContain('backup failed');
    expect(text).toMatch(outage);
    // The spool is empty again.
    expect(fs.readdirSync(path.join(server.scratchDir, 'log-spool')).filter((f) => f.endsWith('.gz'))).toEqual([]);
  });

  it('completes with every item when the plugin process is SIGKILLed mid-backup', async () => {
    const c = client();
    const ns = uniqueName('pluginkill');
    const loc = filesystemLocation();
    const server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, args: SLOW, location: loc });
    cleanups.push(() => server.stop());
    await waitUntil('location Available', async () => {
      const l = await c.get<{ status?: { phase?: string } }>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? true : undefined;
    }, 60_000);
    const baseline = await c.create(RESOURCES.Backup, ns, newBackup('baseline', ns, { includedNamespaces: ['kube-system', 'default'] }))
      .then(() => waitPhase(c, ns, 'baseline', ['Completed', 'PartiallyFailed', 'Failed']));
    expect(baseline.status?.phase).toBe('Completed');

    await c.create(RESOURCES.Backup, ns, newBackup('survivor', ns, { includedNamespaces: ['kube-system', 'default'] }));
    await waitPhase(c, ns, 'survivor', ['InProgress']);
    // One kill per call is what the pool rides out (the call is retried once on the new process):
    // the tarball's upload is one call that lasts the whole backup, so a second kill within it
    // would fail the backup by design (it says so: "died during the call, and again during the retry").
    // The plugin process the backup is using (the pool's, started for the location), killed once.
    const killed = await waitUntil('a plugin process of the server', async () => {
      const pids = pluginPids(server.proc.pid ?? -1);
      return pids.length > 0 ? pids : undefined;
    }, 20_000, 100);
    expect((await phaseOf(c, ns, 'survivor')).status?.phase).toBe('InProgress');
    for (const pid of killed) process.kill(pid, 'SIGKILL');
    const b = await waitPhase(c, ns, 'survivor', ['Completed', 'PartiallyFailed', 'Failed']);
    expect(killed.length).toBeGreaterThan(0);
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
    expect(b.status?.progress?.itemsBackedUp).toBe(baseline.status?.progress?.itemsBackedUp);
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'survivor', 'stowage-backup.json'))).toBe(true);
  });

  it('marks a backup Failed, with a reason, when the server dies mid-backup and comes back', async () => {
    const c = client();
    const ns = uniqueName('crash');
    const loc = filesystemLocation();
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const first = await startServer({ kubeconfigPath, namespace: ns, args: SLOW, location: loc });
    cleanups.push(() => first.stop());
    await c.create(RESOURCES.Backup, ns, newBackup('orphan', ns, { includedNamespaces: [ns] }));
    await waitPhase(c, ns, 'orphan', ['InProgress'], 60_000);
    await first.stop('SIGKILL');
    // The second server runs in process: it moves its clock past the dead leader's lease (15 s
    // unrenewed) once it has seen it held, then sweeps at once.
    const second = await startSuccessor({ kubeconfigPath, namespace: ns });
    cleanups.push(() => second.stop());
    expect(second.output()).toMatch(/held by test-pod-\S+; \S+ takes it once it goes 15 s unrenewed/);
    const b = await waitPhase(c, ns, 'orphan', ['Failed', 'Completed'], 40_000);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toContain('stopped before it finished');
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'orphan', 'stowage-backup.json'))).toBe(false);
  });
});
