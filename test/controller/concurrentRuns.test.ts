// Concurrent runs end to end: `stowage server --concurrent-backups=2 --concurrent-restores=2`
// against the real apiserver. A plugin action (fixtures/plugins/gate-plugin.mjs) holds each run at
// its "gate" ConfigMap until the test opens the gate, so "both InProgress at once" and "queued
// while the other runs" are states the test observes (through a watch), not timing luck.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { createInformer, type Informer } from '../../src/runtime/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { pluginDir, removeTempDirs, tempDir } from '../plugin/support.js';

type Run = Backup | Restore;

describe('concurrent runs', () => {
  const ns = uniqueName('stowage');
  const [a, b] = [uniqueName('conc-a'), uniqueName('conc-b')];
  const gates = tempDir('gates');
  let client: DynamicClient;
  let server: RunningServer;
  let backups: Informer<Backup>;
  let restores: Informer<Restore>;
  /** Every moment (per the watch) at which two or more runs of a kind were InProgress together. */
  const together: string[][] = [];

  const open = (gate: string): void => fs.writeFileSync(path.join(gates, gate), '');
  const watchTogether = (inf: Informer<Run>): void => {
    inf.addHandler(() => {
      const running = inf.list().filter((o) => o.status?.phase === 'InProgress').map((o) => o.metadata.name).sort();
      if (running.length > 1) together.push(running);
    });
  };
  const sawTogether = (...names: string[]): Promise<boolean> =>
    waitUntil(`${names.join(' and ')} InProgress at the same time`, () => Promise.resolve(together.some((t) => names.every((n) => t.includes(n))) ? true : undefined), 90_000, 50);
  const phaseOf = (inf: Informer<Run>, name: string): string => inf.get(`${ns}/${name}`)?.status?.phase ?? 'New';
  const waitPhase = (inf: Informer<Run>, name: string, phase: string): Promise<boolean> =>
    waitUntil(`${name} ${phase}`, () => Promise.resolve(phaseOf(inf, name) === phase ? true : undefined), 90_000, 50);

  async function backup(name: string, namespaces: string[]): Promise<void> {
    await client.create(RESOURCES.Backup, ns, newBackup(name, ns, { includedNamespaces: namespaces }));
  }
  async function restore(name: string, spec: RestoreSpec): Promise<void> {
    await client.create(RESOURCES.Restore, ns, { apiVersion: 'stowage.dev/v1', kind: 'Restore', metadata: { name, namespace: ns }, spec });
  }

  beforeAll(async () => {
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    for (const n of [a, b]) {
      await ensureNamespace(client, n);
      for (const name of ['gate', 'one', 'two']) await client.create(CORE.configMaps, n, { metadata: { name }, data: { k: name } });
    }
    // The plugin gets a minimal environment: its launcher sets where the gates are.
    const plugins = pluginDir({ gate: 'gate-plugin.mjs' }, { GATE_DIR: gates });
    server = await startServer({
      kubeconfigPath: kc, namespace: ns, location: filesystemLocation(),
      args: ['--plugin-dir', plugins.dir, '--concurrent-backups', '2', '--concurrent-restores', '2'],
    });
    backups = createInformer<Backup>(client, RESOURCES.Backup, { namespace: ns });
    restores = createInformer<Restore>(client, RESOURCES.Restore, { namespace: ns });
    watchTogether(backups);
    watchTogether(restores);
    backups.start();
    restores.start();
    await Promise.all([backups.waitForSync(), restores.waitForSync()]);
  });

  afterAll(async () => {
    await Promise.all([backups?.stop(), restores?.stop()]);
    await server?.stop();
    for (const n of [a, b, `${a}-r`, `${b}-r`, `${a}-t`]) await client?.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    removeTempDirs();
  });

  it('runs two backups of disjoint namespaces at the same time', async () => {
    await backup('disjoint-a', [a]);
    await backup('disjoint-b', [b]);
    // Both are held at their gates: both InProgress at once, seen through the watch.
    await sawTogether('disjoint-a', 'disjoint-b');
    open(`backup-${a}`);
    open(`backup-${b}`);
    const [x, y] = await Promise.all([
      waitFinished<Backup>(client, RESOURCES.Backup, ns, 'disjoint-a'), waitFinished<Backup>(client, RESOURCES.Backup, ns, 'disjoint-b'),
    ]);
    for (const done of [x, y]) {
      expect(done.status?.phase, JSON.stringify(done.status)).toBe('Completed');
      expect(done.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(4); // three ConfigMaps and the Namespace
      expect(done.status?.waitingFor).toBeUndefined();
    }
    // Their times overlap: each started before the other completed.
    const t = (s: string | undefined): number => Date.parse(s ?? '');
    expect(t(x.status?.startTimestamp)).toBeLessThanOrEqual(t(y.status?.completionTimestamp));
    expect(t(y.status?.startTimestamp)).toBeLessThanOrEqual(t(x.status?.completionTimestamp));
  });

  it('queues a backup that overlaps a running one, says what it waits for, then runs it after', async () => {
    await backup('first', [a]);
    await waitPhase(backups, 'first', 'InProgress');
    await backup('second', [b, a]);
    const queued = await waitUntil('second to say what it waits for', async () => {
      const o = await client.get<Backup>(RESOURCES.Backup, ns, 'second');
      return o.status?.waitingFor !== undefined ? o : undefined;
    });
    expect(queued.status?.phase ?? 'New').toBe('New');
    expect(queued.status?.waitingFor).toBe(`waiting for backup "first" (overlapping namespaces: ${a})`);
    // The event and the log line follow the status patch: waited for, not read at once.
    await waitUntil('the Queued event', async () => {
      const events = await client.listAll<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(
        { group: '', version: 'v1', resource: 'events', namespaced: true }, { namespace: ns },
      );
      return events.items.some((e) => e.involvedObject?.name === 'second' && e.reason === 'Queued' && e.message === queued.status?.waitingFor) ? true : undefined;
    });
    await waitUntil('the queued line in the server log', () =>
      Promise.resolve(server.output().includes(`backup ${ns}/second is queued: waiting for backup "first"`) ? true : undefined));
    // Held at its gate, "first" keeps "second" queued: it is not InProgress while "first" is.
    expect(phaseOf(backups, 'second')).toBe('New');

    open(`backup-${a}`);
    const first = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'first');
    expect(first.status?.phase).toBe('Completed');
    // Woken by the end of "first" (no polling): it starts and waits at its own gates.
    await waitPhase(backups, 'second', 'InProgress');
    open(`backup-${a}`);
    open(`backup-${b}`);
    const second = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'second');
    expect(second.status?.phase, JSON.stringify(second.status)).toBe('Completed');
    expect(second.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(8);
    expect(second.status?.waitingFor).toBeUndefined();
    expect(Date.parse(second.status?.startTimestamp ?? '')).toBeGreaterThanOrEqual(Date.parse(first.status?.completionTimestamp ?? ''));
    expect(together.some((t) => t.includes('first') && t.includes('second'))).toBe(false);
  });

  it('runs two restores into disjoint namespaces at the same time, and queues one writing where another does', async () => {
    // disjoint-a holds namespace a, disjoint-b namespace b (first test).
    await restore('restore-a', { backupName: 'disjoint-a', namespaceMapping: { [a]: `${a}-r` } });
    await restore('restore-b', { backupName: 'disjoint-b', namespaceMapping: { [b]: `${b}-r` } });
    await sawTogether('restore-a', 'restore-b');
    open(`restore-${a}`);
    open(`restore-${b}`);
    for (const name of ['restore-a', 'restore-b']) {
      const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, name);
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      expect(r.status?.summary?.created).toBeGreaterThanOrEqual(4);
    }
    expect((await client.get<KubeObject>(CORE.configMaps, `${b}-r`, 'one')).metadata?.name).toBe('one');

    // Both write to one target namespace: the second queues behind the first.
    await restore('into-t-1', { backupName: 'disjoint-a', namespaceMapping: { [a]: `${a}-t` } });
    await waitPhase(restores, 'into-t-1', 'InProgress');
    await restore('into-t-2', { backupName: 'disjoint-b', namespaceMapping: { [b]: `${a}-t` } });
    const queued = await waitUntil('into-t-2 to say what it waits for', async () => {
      const o = await client.get<Restore>(RESOURCES.Restore, ns, 'into-t-2');
      return o.status?.waitingFor !== undefined ? o : undefined;
    });
    expect(queued.status?.phase ?? 'New').toBe('New');
    expect(queued.status?.waitingFor).toBe(`waiting for restore "into-t-1" (overlapping namespaces: ${a}-t)`);
    expect(phaseOf(restores, 'into-t-2')).toBe('New');
    open(`restore-${a}`);
    const first = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'into-t-1');
    expect(first.status?.phase, JSON.stringify(first.status)).toBe('Completed');
    open(`restore-${b}`);
    const second = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'into-t-2');
    // Its items exist already in the shared namespace (same names): skipped with warnings, not failed.
    expect(['Completed', 'PartiallyFailed'], JSON.stringify(second.status)).toContain(second.status?.phase);
    expect(second.status?.waitingFor).toBeUndefined();
    expect(Date.parse(second.status?.startTimestamp ?? '')).toBeGreaterThanOrEqual(Date.parse(first.status?.completionTimestamp ?? ''));
    expect(together.some((t) => t.includes('into-t-1') && t.includes('into-t-2'))).toBe(false);
  });
});
