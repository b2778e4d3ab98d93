// A backup of 300 ConfigMaps of about 1 MiB each (random data, so gzip cannot shrink it away) by the
// real server under the deployed heap (1 GiB container: 512 MiB of old space): LIST pages keep to
// --client-page-bytes, so the heap stays far below its limit, and the restore brings back every
// byte. A control plane of this test's own, so the shared etcd does not take 600 MiB; its etcd does
// not fsync (the data is thrown away), so the 600 MiB of writes do not wait on a disk other tests share.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverHeapFlags } from '../../bench/server.js';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const OBJECTS = 300;
// 740,000 random bytes as base64: 986,668 characters, just under a ConfigMap's 1 MiB.
const RAW_BYTES = 740_000;
const HEAP_LIMIT_MIB = 512;

const digestOf = (data: Record<string, string>): string => crypto.createHash('sha256').update(JSON.stringify(data)).digest('hex');

/** SHA-256 of each ConfigMap's data, by name, read a few at a time (the test's own heap stays small). */
async function digests(c: DynamicClient, namespace: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const page of c.listPages<ConfigMap>(CORE.configMaps, { namespace, pageSize: 10 })) {
    for (const o of page.items) out.set(o.metadata?.name ?? '', digestOf(o.data ?? {}));
  }
  return out;
}

/** CPU seconds (user + system) the process has used: a figure the machine's other load does not inflate. */
function cpuSeconds(pid: number): number {
  const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

describe('a backup of 300 ConfigMaps of 1 MiB each', () => {
  let cp: ControlPlane;
  let c: DynamicClient;
  let server: RunningServer | undefined;
  /** The digest of each ConfigMap's data as the test created it: what the restore must bring back (no second read of 300 MiB). */
  const created = new Map<string, string>();

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false, noFsync: true });
    c = testClient(cp.kubeconfigPath);
    await ensureNamespace(c, 'big');
    const t0 = Date.now();
    const queue = Array.from({ length: OBJECTS }, (_, i) => i);
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const data = { blob: crypto.randomBytes(RAW_BYTES).toString('base64') };
        await c.create(CORE.configMaps, 'big', { metadata: { name: `big-${i}` }, data });
        created.set(`big-${i}`, digestOf(data));
      }
    }));
    process.stderr.write(`[large] created ${OBJECTS} ConfigMaps of ${Math.round((RAW_BYTES * 4) / 3 / 1024)} KiB in ${Date.now() - t0} ms\n`);
  }, 240_000);

  afterAll(async () => {
    await server?.stop();
    c?.close();
    await cp?.stop();
  });

  it('stays far below the deployed heap and restores every byte', async () => {
    const loc = filesystemLocation();
    const flags = serverHeapFlags(1024);
    expect(flags).toContain(`--max-old-space-size=${HEAP_LIMIT_MIB}`);
    server = await startServer({ kubeconfigPath: cp.kubeconfigPath, namespace: 'stowage', location: loc, env: { NODE_OPTIONS: flags.join(' ') } });
    const pid = server.proc.pid ?? -1;
    let peakHeap = 0;
    const sampler = setInterval(() => {
      void fetch(`http://127.0.0.1:${server?.metricsPort}/metrics`).then((r) => r.text()).then((t) => {
        const used = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(t)?.[1] ?? 0);
        peakHeap = Math.max(peakHeap, used);
      }).catch(() => undefined);
    }, 100);
    try {
      const t0 = Date.now();
      const cpu0 = cpuSeconds(pid);
      await c.create(RESOURCES.Backup, 'stowage', newBackup('big', 'stowage', { includedNamespaces: ['big'] }));
      // Generous: ~900 MiB goes through the apiserver and gzip on a machine other tests share.
      const b = await waitFinished<Backup>(c, RESOURCES.Backup, 'stowage', 'big', 400_000);
      const backupMs = Date.now() - t0;
      const backupCpu = cpuSeconds(pid) - cpu0;
      expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
      expect(b.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(OBJECTS);
      const backupHeap = peakHeap;
      const backupRss = peakRssMiB(pid);

      const t1 = Date.now();
      await c.create(RESOURCES.Restore, 'stowage', newRestore('big', 'stowage', { backupName: 'big', namespaceMapping: { big: 'big-copy' } }));
      const cpu1 = cpuSeconds(pid);
      const r = await waitFinished<Restore>(c, RESOURCES.Restore, 'stowage', 'big', 400_000);
      const restoreMs = Date.now() - t1;
      const restoreCpu = cpuSeconds(pid) - cpu1;
      expect(r.status?.phase, r.status?.failureReason).toBe('Completed');
      const rss = peakRssMiB(pid);
      process.stderr.write(`[large] backup ${backupMs} ms (server CPU ${backupCpu.toFixed(1)} s), peak heap used ${Math.round(backupHeap / 2 ** 20)} MiB, peak RSS ${Math.round(backupRss)} MiB; ` +
        `restore ${restoreMs} ms (server CPU ${restoreCpu.toFixed(1)} s), peak heap used ${Math.round(peakHeap / 2 ** 20)} MiB, peak RSS ${Math.round(rss)} MiB (heap limit ${HEAP_LIMIT_MIB} MiB)\n`);
      expect(server.proc.exitCode).toBeNull();
      expect(peakHeap).toBeGreaterThan(0);
      expect(backupHeap / 2 ** 20).toBeLessThan(HEAP_LIMIT_MIB / 2);

      expect(created.size).toBe(OBJECTS);
      expect(await digests(c, 'big-copy')).toEqual(created);
    } finally {
      clearInterval(sampler);
    }
  }, 900_000);
});
