// What happens to a backup when storage goes down, the plugin process dies, or the server dies.
// The servers run with a low --client-qps so a backup stays InProgress long enough to interfere;
// each backs up a small namespace (a slowApp, or its own), so that takes seconds, not a read of
// the whole shared cluster. Servers run in process unless the test kills the server itself (the last test).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { startS3Server } from '../../scripts/cluster/s3.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer, startSuccessor } from '../support/inProcessServer.js';
import { createS3CredentialsSecret, ensureAppNamespace, ensureNamespace, filesystemLocation, s3LocationSpec, startServer, testClient } from '../support/server.js';

const SLOW = ['--client-qps', '4', '--client-burst', '1'];
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** ConfigMaps of a slowApp: read one per LIST page at 16 requests/s (its other requests share them), a backup of them takes at least 4 s. */
const PAGES = 64;
/**
 * 16 requests/s, no burst, one item per LIST page: a backup of a slowApp lasts at least PAGES/16 s
 * whatever the cluster holds, while the rest of the run (admission, status) goes 4 times as fast as SLOW.
 */
const SLOW_PAGES = ['--client-qps', '16', '--client-burst', '1', '--client-page-size', '1'];
/** What a backup of a slowApp includes. */
const slowScope = (app: string) => ({ includedNamespaces: [app], includedResources: ['configmaps'] });

/** A namespace of PAGES ConfigMaps (and the cluster's own kube-root-ca.crt, there before this returns). */
async function slowApp(c: DynamicClient, prefix: string): Promise<string> {
  const app = uniqueName(prefix);
  await ensureAppNamespace(c, app, PAGES);
  cleanups.push(() => c.delete(CORE.namespaces, undefined, app));
  await waitUntil(`kube-root-ca.crt in ${app}`, async () => (await c.get(CORE.configMaps, app, 'kube-root-ca.crt').then(() => true, () => undefined)), 30_000, 100);
  return app;
}

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

/** Pids of a server's plugin processes (children running `run-plugins`; an in-process server's are this process's). */
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

/** The filesystem store's temp files (uploads under way, or left by killed ones) below `dir`. */
function tempFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.startsWith('.stowage-tmp-')).map((e) => e.name);
}

describe('backup failures', () => {
  it('fails cleanly when storage stays down longer than the outage window, and uploads the spooled log when it is back', async () => {
    const c = client();
    const ns = uniqueName('outage');
    const s3 = await startS3Server({ buckets: ['vault'] });
    cleanups.push(() => s3.close());
    await ensureNamespace(c, ns);
    await createS3CredentialsSecret(c, ns, 'cloud-credentials', s3);
    const app = await slowApp(c, 'outage-app');
    const server = await startInProcessServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, args: [...SLOW_PAGES, '--object-store-outage-timeout', '5s'], location: { name: 'default', spec: s3LocationSpec(s3, { bucket: 'vault', prefix: 'cluster-a', secret: 'cloud-credentials', validationFrequency: '2s' }) } });
    cleanups.push(() => server.stop());
    await waitUntil('location Available', async () => {
      const l = await c.get<{ status?: { phase?: string } }>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? true : undefined;
    }, 60_000);

    // A slowApp: the run need only be in progress (for at least 4 s) when storage goes, not read the whole shared cluster.
    await c.create(RESOURCES.Backup, ns, newBackup('doomed', ns, slowScope(app)));
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
    // What the backup reads: a slowApp, so it is in progress for at least 4 s.
    const app = await slowApp(c, 'pluginkill-app');
    const loc = filesystemLocation();
    // Plugin processes of this file's other in-process servers, not to be killed.
    const others = new Set(pluginPids(process.pid));
    // In process: the test kills the plugin process (a child of this process), not the server.
    const server = await startInProcessServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, args: SLOW_PAGES, location: loc });
    cleanups.push(() => server.stop());
    await waitUntil('location Available', async () => {
      const l = await c.get<{ status?: { phase?: string } }>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' ? true : undefined;
    }, 60_000);
    // Every item is what the namespace holds: its ConfigMaps and kube-root-ca.crt (no baseline
    // backup needed, as one was when this read kube-system).
    const every = (await c.listAll(CORE.configMaps, { namespace: app })).items.length;
    expect(every).toBe(PAGES + 1);

    await c.create(RESOURCES.Backup, ns, newBackup('survivor', ns, slowScope(app)));
    // The tarball streams into its temp file from the start of the backup: once that file is
    // there, its upload call is under way in the plugin process.
    await waitUntil('the survivor\'s tarball upload to start', async () => {
      const b = await phaseOf(c, ns, 'survivor');
      return b.status?.phase === 'InProgress' && tempFiles(path.join(loc.root, 'backups')).length > 0 ? true : undefined;
    }, 60_000, 50);
    // One kill per call is what the pool rides out (the call is retried once on the new process):
    // the tarball's upload is one call that lasts the whole backup, so a second kill within it
    // would fail the backup by design (it says so: "died during the call, and again during the retry").
    // The plugin process the backup is using (the pool's, started for the location), killed once.
    const killed = pluginPids(process.pid).filter((pid) => !others.has(pid));
    expect(killed.length).toBeGreaterThan(0);
    expect((await phaseOf(c, ns, 'survivor')).status?.phase).toBe('InProgress');
    for (const pid of killed) process.kill(pid, 'SIGKILL');
    const b = await waitPhase(c, ns, 'survivor', ['Completed', 'PartiallyFailed', 'Failed']);
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
    expect(b.status?.progress?.itemsBackedUp).toBe(every);
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
