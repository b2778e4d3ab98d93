// What two concurrent backups gain over running them one after the other: the same two namespaces
// of CONFIGMAPS ConfigMaps each, backed up by one server (--concurrent-backups=2) in turns, then
// both at once, ROUNDS times after a warm-up backup; each time runs from the creates to the last
// completion seen through a watch. The figure is printed (the issue asks for it), not asserted: the
// machine is shared. What is asserted is that every backup completed with all its items.
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { createInformer, type Informer } from '../../src/runtime/index.js';
import { mapLimit } from '../../src/util/concurrency.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';

const CONFIGMAPS = 1500;
const ROUNDS = 4;
const FINAL = ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'];

describe('two concurrent backups against one after the other', () => {
  const ns = uniqueName('stowage');
  const apps = [uniqueName('gain-a'), uniqueName('gain-b')];
  let client: DynamicClient;
  let server: RunningServer;
  let backups: Informer<Backup>;
  /** When the watch first saw each backup in a final phase. */
  const finished = new Map<string, { at: number; backup: Backup }>();

  beforeAll(async () => {
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    const filler = 'x'.repeat(1024);
    for (const app of apps) {
      await ensureNamespace(client, app);
      await mapLimit(Array.from({ length: CONFIGMAPS }, (_, i) => i), 16, (i) => client.create(CORE.configMaps, app, { metadata: { name: `cm-${i}` }, data: { filler } }));
    }
    server = await startServer({ kubeconfigPath: kc, namespace: ns, location: filesystemLocation(), args: ['--concurrent-backups', '2'] });
    backups = createInformer<Backup>(client, RESOURCES.Backup, { namespace: ns });
    backups.addHandler((ev) => {
      const name = ev.object.metadata.name;
      if (FINAL.includes(ev.object.status?.phase ?? '') && !finished.has(name)) finished.set(name, { at: performance.now(), backup: ev.object });
    });
    backups.start();
    await backups.waitForSync();
  }, 600_000);

  afterAll(async () => {
    await backups?.stop();
    await server?.stop();
    for (const app of apps) await client?.delete(CORE.namespaces, undefined, app).catch(() => undefined);
  });

  /** Creates backups of `apps` (one each, named `<prefix>-<i>`) and resolves when all have finished. */
  async function run(prefix: string, which: number[]): Promise<void> {
    const names = which.map((i) => `${prefix}-${i}`);
    await Promise.all(which.map((i) => client.create(RESOURCES.Backup, ns, newBackup(`${prefix}-${i}`, ns, { includedNamespaces: [apps[i] as string] }))));
    const deadline = Date.now() + 300_000;
    while (!names.every((n) => finished.has(n))) {
      if (Date.now() > deadline) throw new Error(`${names.join(', ')} did not finish`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('completes both ways and prints the gain', async () => {
    // Not measured: the first backup starts the plugin process and warms the server's caches.
    await run('warm', [0]);
    const times = { sequential: [] as number[], concurrent: [] as number[] };
    const load: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, so a drift in the machine's load weighs on both alike.
      const ways = [
        async (): Promise<void> => {
          const t0 = performance.now();
          await run(`seq${round}`, [0]);
          await run(`seq${round}`, [1]);
          times.sequential.push(performance.now() - t0);
        },
        async (): Promise<void> => {
          const t0 = performance.now();
          await run(`con${round}`, [0, 1]);
          times.concurrent.push(performance.now() - t0);
        },
      ];
      for (const way of round % 2 === 0 ? ways : ways.reverse()) await way();
      load.push(os.loadavg()[0] ?? 0);
    }
    for (const { backup } of finished.values()) {
      expect(backup.status?.phase, JSON.stringify(backup.status)).toBe('Completed');
      expect(backup.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(CONFIGMAPS);
    }
    // The concurrent pair really ran together: each started before the other completed.
    for (let round = 0; round < ROUNDS; round++) {
      const [x, y] = [0, 1].map((i) => finished.get(`con${round}-${i}`)?.backup.status);
      expect(Date.parse(x?.startTimestamp ?? '')).toBeLessThanOrEqual(Date.parse(y?.completionTimestamp ?? ''));
      expect(Date.parse(y?.startTimestamp ?? '')).toBeLessThanOrEqual(Date.parse(x?.completionTimestamp ?? ''));
    }
    const sum = (xs: number[]): number => xs.reduce((s, x) => s + x, 0);
    const fmt = (xs: number[]): string => xs.map((x) => (x / 1000).toFixed(2)).join(' / ');
    console.log(`concurrent backups, 2 namespaces x ${CONFIGMAPS} ConfigMaps (1 KiB), ${ROUNDS} rounds: `
      + `one after the other ${fmt(times.sequential)} s, both at once ${fmt(times.concurrent)} s; `
      + `gain ${(sum(times.sequential) / sum(times.concurrent)).toFixed(2)}x (load average ${load.map((l) => l.toFixed(1)).join(' / ')} on ${os.cpus().length} cores)`);
  });
});
