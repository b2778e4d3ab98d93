// kube-apiserver stopped for 60 s under a running `stowage server` (a control plane of this test's
// own): a backup and a restore caught mid-run pause and complete once the API is back, with
// every object right, and the server never stops. An outage longer than a short
// --api-outage-timeout fails the run naming the outage, and that server stays up too.
// The servers run in process (support/inProcessServer.ts): the 60 s are a move of the first one's
// clock, which times the outage window, the retries and the lease, while the API stays really
// stopped; the short-window server's clock is moved on until both of its runs have failed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { waitUntil } from '../support/kube.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { ensureNamespace, filesystemLocation, testClient, waitFinished } from '../support/server.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const OBJECTS = 60;
const OUTAGE_MS = 60_000;
// Slow and finely paged, so a run is still going when the API is stopped under it: at 5 requests a
// second a backup takes at least 10 s (38 resource types and 12 pages of ConfigMaps), a restore at
// least 12 s (a create per object), and stopping the apiserver takes a few seconds.
const SLOW = ['--client-qps', '5', '--client-burst', '1', '--client-page-size', '5'];
/** The restores' source: only the kinds the namespace holds, so it is taken in a few requests. */
const SEED = { includedNamespaces: ['app'], includedResources: ['namespaces', 'configmaps'] };

describe('an API server outage under a running server', () => {
  let cp: ControlPlane;
  let c: DynamicClient;
  const servers: InProcessServer[] = [];

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

  function alive(s: InProcessServer): void {
    expect(s.stoppedWith()).toBeUndefined();
    expect(s.output()).not.toContain('stowage server stopped');
    expect(s.output().match(/became the leader/g)?.length).toBe(1);
  }

  // One outage for all four runs (a backup and a restore on one server, and on a server with a short
  // --api-outage-timeout): each outage costs a stop and a start of the apiserver.
  it('pauses a backup and a restore through a 60 s outage (both complete with every object) and fails a run whose outage outlasts --api-outage-timeout; no process exits', async () => {
    const server = await startInProcessServer({ kubeconfigPath: cp.kubeconfigPath, namespace: 'stowage', location: filesystemLocation(), args: SLOW });
    servers.push(server);
    const short = await startInProcessServer({ kubeconfigPath: cp.kubeconfigPath, namespace: 'stowage-short', location: filesystemLocation(), args: [...SLOW, '--api-outage-timeout', '10s'] });
    servers.push(short);

    // The restores' backups, taken before the outage.
    for (const ns of ['stowage', 'stowage-short']) await c.create(RESOURCES.Backup, ns, newBackup('seed', ns, SEED));
    for (const ns of ['stowage', 'stowage-short']) expect((await waitFinished<Backup>(c, RESOURCES.Backup, ns, 'seed', 120_000)).status?.phase).toBe('Completed');

    const t0 = Date.now();
    await c.create(RESOURCES.Backup, 'stowage', newBackup('through', 'stowage', { includedNamespaces: ['app'] }));
    await c.create(RESOURCES.Restore, 'stowage', newRestore('through', 'stowage', { backupName: 'seed', namespaceMapping: { app: 'app-copy' } }));
    await c.create(RESOURCES.Backup, 'stowage-short', newBackup('cut', 'stowage-short', { includedNamespaces: ['app'] }));
    await c.create(RESOURCES.Restore, 'stowage-short', newRestore('cut', 'stowage-short', { backupName: 'seed', namespaceMapping: { app: 'app-cut' } }));
    const phases = async (): Promise<(string | undefined)[]> => [
      (await c.get<Backup>(RESOURCES.Backup, 'stowage', 'through')).status?.phase,
      (await c.get<Restore>(RESOURCES.Restore, 'stowage', 'through')).status?.phase,
      (await c.get<Backup>(RESOURCES.Backup, 'stowage-short', 'cut')).status?.phase,
      (await c.get<Restore>(RESOURCES.Restore, 'stowage-short', 'cut')).status?.phase,
    ];
    await waitUntil('all four runs in progress', async () => ((await phases()).every((p) => p === 'InProgress') ? true : undefined), 60_000, 50);
    await cp.stopApiserver();
    const stoppedAt = Date.now();
    // Both leaders notice the outage (their renewals fail) before the clock jumps, and stay leaders.
    await server.waitForOutput(/cannot reach the API to renew .*still leading/);
    await short.waitForOutput(/cannot reach the API to renew .*still leading/);
    server.clock.advance(OUTAGE_MS);
    // The short window ends both of its runs while the API is still down; the long window holds the
    // others. A request of the short server that first fails after a jump starts its own 10 s, so
    // its clock moves on (the API stays down) until both runs have given up.
    short.clock.advance(OUTAGE_MS);
    const pump = setInterval(() => short.clock.advance(10_000), 250);
    try {
      await short.waitForOutput(/unreachable for 10s.* backup=\S*cut/);
      await short.waitForOutput(/unreachable for 10s.* restore=\S*cut/);
    } finally {
      clearInterval(pump);
    }
    await cp.startApiserver();
    const backAt = Date.now();

    const b = await waitFinished<Backup>(c, RESOURCES.Backup, 'stowage', 'through', 120_000);
    const backupMs = Date.now() - t0;
    const r = await waitFinished<Restore>(c, RESOURCES.Restore, 'stowage', 'through', 180_000);
    const restoreMs = Date.now() - t0;
    const cut = await waitFinished<Backup>(c, RESOURCES.Backup, 'stowage-short', 'cut', 60_000);
    const rcut = await waitFinished<Restore>(c, RESOURCES.Restore, 'stowage-short', 'cut', 60_000);
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
    expect(b.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(OBJECTS);
    expect(r.status?.phase, r.status?.failureReason).toBe('Completed');
    expect(server.output()).toMatch(/cannot reach the API to renew .*still leading/);
    expect(cut.status?.phase).toBe('Failed');
    expect(cut.status?.failureReason).toContain('the Kubernetes API was unreachable for 10s');
    // The restore fails as a whole, naming the outage (not each item as "not served", nor each waiting it out again).
    expect(rcut.status?.phase, JSON.stringify(rcut.status)).toBe('Failed');
    expect(rcut.status?.failureReason).toContain('the Kubernetes API was unreachable for 10s');
    alive(server);
    alive(short);

    const original = (await c.listAll<ConfigMap>(CORE.configMaps, { namespace: 'app' })).items;
    const copy = new Map((await c.listAll<ConfigMap>(CORE.configMaps, { namespace: 'app-copy' })).items.map((o) => [o.metadata?.name, o.data]));
    expect(original.length).toBe(OBJECTS);
    for (const o of original) expect(copy.get(o.metadata?.name), o.metadata?.name).toEqual(o.data);
    process.stderr.write(`[outage] API down ${backAt - stoppedAt} ms on the wall clock (the server's clock moved ${OUTAGE_MS} ms, the short one's ${short.clock.offsetMs()} ms), then start-up; backup Completed ${t0 + backupMs - backAt} ms and restore Completed ${t0 + restoreMs - backAt} ms after the API was ready; ` +
      `with --api-outage-timeout 10s the backup Failed: ${cut.status?.failureReason ?? ''}; the restore Failed: ${rcut.status?.failureReason ?? ''}\n`);
  }, 420_000);
});
