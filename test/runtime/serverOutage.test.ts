// kube-apiserver stopped for 60 s under a running `stowage server` (a control plane of this test's
// own): a backup and then a restore caught mid-run pause and complete once the API is back, with
// every object right, and the server process never exits. An outage longer than a short
// --api-outage-timeout fails the run naming the outage, and the process still stays up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const OBJECTS = 150;
const OUTAGE_MS = 60_000;
// Slow and finely paged, so a run is still going when the API is stopped under it.
const SLOW = ['--client-qps', '5', '--client-burst', '1', '--client-page-size', '10'];

describe('an API server outage under a running server', () => {
  let cp: ControlPlane;
  let c: DynamicClient;
  const servers: RunningServer[] = [];

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false });
    c = testClient(cp.kubeconfigPath);
    await ensureNamespace(c, 'app');
    const queue = Array.from({ length: OBJECTS }, (_, i) => i);
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        await c.create(CORE.configMaps, 'app', { metadata: { name: `cm-${i}` }, data: { index: String(i), text: `value ${i} `.repeat(50) } });
      }
    }));
  }, 180_000);

  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    c?.close();
    await cp?.stop();
  });

  /** Stops the API as soon as the run is InProgress, for `ms`; resolves when it answers again. */
  async function outageDuring(what: () => Promise<string | undefined>, ms: number): Promise<{ stoppedAt: number; backAt: number }> {
    await waitUntil('the run in progress', async () => ((await what()) === 'InProgress' ? true : undefined), 60_000, 50);
    await cp.stopApiserver();
    const stoppedAt = Date.now();
    await new Promise((r) => setTimeout(r, ms));
    await cp.startApiserver();
    return { stoppedAt, backAt: Date.now() };
  }

  function alive(s: RunningServer, pid: number | undefined): void {
    expect(s.proc.pid).toBe(pid);
    expect(s.proc.exitCode).toBeNull();
    expect(s.proc.signalCode).toBeNull();
    expect(s.output()).not.toContain('stowage server stopped');
    expect(s.output().match(/became the leader/g)?.length).toBe(1);
  }

  it('pauses a backup and a restore through a 60 s outage; both complete with every object, the process never exits', async () => {
    const loc = filesystemLocation();
    const server = await startServer({ kubeconfigPath: cp.kubeconfigPath, namespace: 'stowage', location: loc, args: SLOW });
    servers.push(server);
    const pid = server.proc.pid;

    const t0 = Date.now();
    await c.create(RESOURCES.Backup, 'stowage', newBackup('through', 'stowage', { includedNamespaces: ['app'] }));
    const bOutage = await outageDuring(async () => (await c.get<Backup>(RESOURCES.Backup, 'stowage', 'through')).status?.phase, OUTAGE_MS);
    const b = await waitFinished<Backup>(c, RESOURCES.Backup, 'stowage', 'through', 120_000);
    const backupMs = Date.now() - t0;
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
    expect(b.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(OBJECTS);
    alive(server, pid);
    expect(server.output()).toMatch(/cannot reach the API to renew .*still leading/);

    const t1 = Date.now();
    await c.create(RESOURCES.Restore, 'stowage', newRestore('through', 'stowage', { backupName: 'through', namespaceMapping: { app: 'app-copy' } }));
    const rOutage = await outageDuring(async () => (await c.get<Restore>(RESOURCES.Restore, 'stowage', 'through')).status?.phase, OUTAGE_MS);
    const r = await waitFinished<Restore>(c, RESOURCES.Restore, 'stowage', 'through', 180_000);
    const restoreMs = Date.now() - t1;
    expect(r.status?.phase, r.status?.failureReason).toBe('Completed');
    alive(server, pid);

    const original = (await c.listAll<ConfigMap>(CORE.configMaps, { namespace: 'app' })).items;
    const copy = new Map((await c.listAll<ConfigMap>(CORE.configMaps, { namespace: 'app-copy' })).items.map((o) => [o.metadata?.name, o.data]));
    expect(original.length).toBe(OBJECTS);
    for (const o of original) expect(copy.get(o.metadata?.name), o.metadata?.name).toEqual(o.data);
    process.stderr.write(`[outage] backup: ${backupMs} ms in all, API down ${bOutage.backAt - bOutage.stoppedAt} ms (${OUTAGE_MS} ms stopped, then start-up), Completed ${t0 + backupMs - bOutage.backAt} ms after the API was ready\n`);
    process.stderr.write(`[outage] restore: ${restoreMs} ms in all, API down ${rOutage.backAt - rOutage.stoppedAt} ms, Completed ${t1 + restoreMs - rOutage.backAt} ms after the API was ready\n`);
    await server.stop();
    servers.pop();
  }, 420_000);

  it('fails a run whose outage outlasts --api-outage-timeout, naming the outage; the process stays up', async () => {
    const loc = filesystemLocation();
    const server = await startServer({ kubeconfigPath: cp.kubeconfigPath, namespace: 'stowage-short', location: loc, args: [...SLOW, '--api-outage-timeout', '10s'] });
    servers.push(server);
    const pid = server.proc.pid;
    await c.create(RESOURCES.Backup, 'stowage-short', newBackup('cut', 'stowage-short', { includedNamespaces: ['app'] }));
    const o = await outageDuring(async () => (await c.get<Backup>(RESOURCES.Backup, 'stowage-short', 'cut')).status?.phase, 25_000);
    const b = await waitFinished<Backup>(c, RESOURCES.Backup, 'stowage-short', 'cut', 60_000);
    process.stderr.write(`[outage] short timeout: Failed ${Date.now() - o.backAt} ms after the API was ready again: ${b.status?.failureReason ?? ''}\n`);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toContain('the Kubernetes API was unreachable for 10s');
    await server.waitForOutput(/the Kubernetes API was unreachable for 10s/, 10_000);
    alive(server, pid);
  }, 180_000);
});
