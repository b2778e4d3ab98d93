// Cancel (spec.cancel) against a running server: a backup and a restore of 5,000 objects each
// canceled mid-run end Canceled within 2 s of the cancel (the times are printed); the canceled
// backup keeps no tarball and no stowage-backup.json and cannot be restored; the canceled restore
// lists exactly the items it created; a backup still New when canceled never starts; the CLI
// refuses to cancel a finished backup. The server runs in process (nothing here kills it); CLI
// calls that do not depend on each other run at once.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { LABEL_RESTORE_NAME, RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, createDynamicClient, loadKubeConfig, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { mapLimit } from '../../src/util/concurrency.js';
import { ensureBuilt, runCli, show, type RunOptions } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { ensureNamespace, filesystemLocation, testClient, waitFinished } from '../support/server.js';

const OBJECTS = 5000;
// Small pages and a low QPS keep the runs going for several seconds, so the cancel lands mid-run.
const SLOW = ['--client-qps', '50', '--client-burst', '20', '--client-page-size', '10'];
/** The bound from cancel to Canceled. */
const WITHIN_MS = 2000;

describe('cancel', () => {
  const ns = uniqueName('cancel');
  const app = uniqueName('cancel-app');
  const small = uniqueName('cancel-small');
  const target = uniqueName('cancel-to');
  const loc = filesystemLocation();
  let client: DynamicClient;
  let seeder: DynamicClient;
  let server: InProcessServer;
  let opts: RunOptions;
  // The CLI starts slowly on a loaded machine: generous timeouts.
  const cli = (...args: string[]) => runCli(args, { ...opts, timeoutMs: 240_000 });
  const getBackup = (name: string) => client.get<Backup>(RESOURCES.Backup, ns, name);
  const getRestore = (name: string) => client.get<Restore>(RESOURCES.Restore, ns, name);
  /** Sets spec.cancel and returns how long until the run is Canceled, polled every 20 ms. */
  async function cancelAndTime(res: typeof RESOURCES.Backup | typeof RESOURCES.Restore, name: string): Promise<number> {
    await client.patch(res, ns, name, { spec: { cancel: true } }, 'merge');
    const t0 = performance.now();
    await waitUntil(`${name} Canceled`, async () => {
      const phase = (await client.get<Backup | Restore>(res, ns, name)).status?.phase;
      if (phase !== 'InProgress' && phase !== 'Canceled') throw new Error(`${name} ended ${phase}`);
      return phase === 'Canceled' ? true : undefined;
    }, 60_000, 20);
    return performance.now() - t0;
  }
  const backupDir = (name: string): string => path.join(loc.root, 'backups', 'backups', name);

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    // Not rate-limited: the 32 creates in flight are the only bound on seeding.
    seeder = createDynamicClient(loadKubeConfig(kubeconfig), { qps: 0 }).withOutageTimeout(0);
    await ensureBuilt();
    for (const n of [app, small]) await ensureNamespace(client, n);
    await client.create(CORE.configMaps, small, { metadata: { name: 'one' }, data: { a: '1' } });
    // The server starts while the objects are made: it has nothing to do until a test creates a run.
    [server] = await Promise.all([
      startInProcessServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc, args: SLOW }),
      mapLimit(Array.from({ length: OBJECTS }, (_, i) => i), 32, (i) =>
        seeder.create(CORE.configMaps, app, { metadata: { name: `cm-${i}` }, data: { i: String(i), body: 'x'.repeat(256) } })),
    ]);
    opts = { kubeconfig, namespace: ns };
  }, 600_000);

  afterAll(async () => {
    await server?.stop();
    for (const n of [app, small, target]) await client?.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    client?.close();
    seeder?.close();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it(`cancels a backup of ${OBJECTS} objects mid-run; one still New never starts; nothing is restorable`, async () => {
    await client.create(RESOURCES.Backup, ns, newBackup('big', ns, { includedNamespaces: [app] }));
    const running = await waitUntil('big to back up items', async () => {
      const b = await getBackup('big');
      return b.status?.phase === 'InProgress' && (b.status.progress?.itemsBackedUp ?? 0) > 0 ? b : undefined;
    }, 120_000, 50);
    expect(running.status?.phase).toBe('InProgress');
    // Same scope, one worker: this one waits, New, behind the running one, and is canceled there.
    await client.create(RESOURCES.Backup, ns, newBackup('queued', ns, { includedNamespaces: [app] }));
    await client.patch(RESOURCES.Backup, ns, 'queued', { spec: { cancel: true } }, 'merge');

    const ms = await cancelAndTime(RESOURCES.Backup, 'big');
    process.stderr.write(`[cancel] backup of ${OBJECTS} objects: Canceled ${ms.toFixed(0)} ms after spec.cancel was set\n`);
    expect(ms).toBeLessThan(WITHIN_MS);

    const big = await getBackup('big');
    expect(big.status?.phase).toBe('Canceled');
    // The admission webhook recorded who set spec.cancel.
    expect(big.metadata.annotations?.['stowage.dev/canceled-by']).toBeTruthy();
    expect(big.status?.failureReason).toBe(`canceled by ${big.metadata.annotations?.['stowage.dev/canceled-by']}`);
    const done = big.status?.progress?.itemsBackedUp ?? 0;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(OBJECTS);
    // Nothing partial is kept as a backup: no stowage-backup.json, no tarball; the log and results say what happened.
    const files = fs.readdirSync(backupDir('big')).sort();
    expect(files).toEqual(['big-logs.gz', 'big-results.gz']);
    // What the CLI says of it (none of these changes it).
    const [logs, d, r, again] = await Promise.all([
      cli('backup', 'logs', 'big'),
      cli('backup', 'describe', 'big', '--details'),
      // A canceled backup is never restored: the CLI refuses.
      cli('restore', 'create', 'from-canceled', '--from-backup', 'big'),
      // Canceling it again is a no-op that says so.
      cli('backup', 'cancel', 'big'),
    ]);
    expect(logs.code, show(logs)).toBe(0);
    expect(logs.stdout).toContain('(spec.cancel): stopping the backup');
    expect(logs.stdout).toMatch(/backup canceled .*; done before it stopped: \d+ items backed up/);
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^Phase:\s+Canceled$/m);
    expect(d.stdout).toMatch(/^Canceled:\s+canceled /m);
    expect(d.stdout).toContain('Resource List:  <none: the backup was canceled and keeps no tarball>');
    expect(d.stdout).toMatch(/^ {2}configmaps\s+v1\s+\d+\s+\d+/m);

    // The New one: Canceled once the worker reached it, without ever starting.
    const queued = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'queued');
    expect(queued.status?.phase).toBe('Canceled');
    expect(queued.status?.startTimestamp).toBeUndefined();
    expect(queued.status?.failureReason).toMatch(/before it started$/);
    expect(fs.existsSync(backupDir('queued'))).toBe(false);

    // A canceled backup is never restored: the CLI refuses, and so does the server.
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('backup "big" was canceled before it finished: it holds no complete tarball and can never be restored');
    await client.create(RESOURCES.Restore, ns, newRestore('from-canceled', ns, { backupName: 'big' }));
    const refused = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'from-canceled');
    expect(refused.status?.phase).toBe('FailedValidation');
    expect(refused.status?.validationErrors?.join('\n')).toContain('backup "big" was canceled before it finished');
    expect((await getBackup('big')).status?.phase).toBe('Canceled');
    expect(again.code, show(again)).toBe(0);
    expect(again.stdout).toContain('Backup "big" is already Canceled.');
  }, 600_000);

  it('stowage backup cancel --wait stops a backup; a finished one is refused', async () => {
    // The CLI takes seconds to start on a loaded machine: it finds the backup New or InProgress.
    await client.create(RESOURCES.Backup, ns, newBackup('waited', ns, { includedNamespaces: [app] }));
    // Calls that touch neither backup run alongside.
    const others = Promise.all([cli('restore', 'cancel', 'nope'), cli('backup', 'cancel')]);
    const w = await cli('backup', 'cancel', 'waited', '--wait');
    expect(w.code, show(w)).toBe(0);
    expect(w.stdout).toMatch(/Request to cancel backup "waited" submitted successfully \(it was (New|InProgress)\)\./);
    expect(w.stdout).toMatch(/Backup "waited" Canceled: canceled by \S+( before it started)?; \d+ items backed up; nothing of it is restorable\./);
    // The webhook refuses a cancel of a finished run, to kubectl users too.
    await expect(client.patch(RESOURCES.Backup, ns, 'waited', { spec: { cancel: false } }, 'merge')).resolves.toBeDefined();
    await expect(client.patch(RESOURCES.Backup, ns, 'waited', { spec: { cancel: true } }, 'merge')).rejects.toThrow(/Backup is already Canceled: only a New or InProgress backup can be canceled/);
    await expect(client.patch(RESOURCES.Backup, ns, 'waited', { metadata: { annotations: { 'stowage.dev/canceled-by': 'someone-else' } } }, 'merge'))
      .rejects.toThrow(/the stowage.dev\/canceled-by annotation records who canceled this Backup and is set only by the Stowage admission webhook/);

    const b = await cli('backup', 'create', 'done', '--include-namespaces', small, '--wait');
    expect(b.code, show(b)).toBe(0);
    const c = await cli('backup', 'cancel', 'done');
    expect(c.code, show(c)).toBe(2);
    expect(c.stderr).toBe('error: backup "done" is already Completed: only a New or InProgress backup can be canceled\n');
    expect((await getBackup('done')).spec.cancel).toBeUndefined();
    await expect(client.patch(RESOURCES.Backup, ns, 'done', { spec: { cancel: true } }, 'merge')).rejects.toThrow(/Backup is already Completed/);
    const [missing, usage] = await others;
    expect(missing.code, show(missing)).toBe(1);
    expect(missing.stderr).toContain(`restore "nope" not found in namespace ${ns}`);
    expect(usage.code, show(usage)).toBe(2);
    expect(usage.stderr).toContain("missing required argument 'name'");
  }, 300_000);

  it(`cancels a restore of ${OBJECTS} objects mid-run and lists exactly what it created`, async () => {
    await client.create(RESOURCES.Backup, ns, newBackup('whole', ns, { includedNamespaces: [app] }));
    const whole = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'whole', 300_000);
    expect(whole.status?.phase, whole.status?.failureReason).toBe('Completed');
    await client.create(RESOURCES.Restore, ns, newRestore('partial', ns, { backupName: 'whole', namespaceMapping: { [app]: target } }));
    await waitUntil('partial to create items', async () => {
      const r = await getRestore('partial');
      return r.status?.phase === 'InProgress' && (r.status.progress?.itemsRestored ?? 0) >= 100 ? true : undefined;
    }, 300_000, 50);

    const ms = await cancelAndTime(RESOURCES.Restore, 'partial');
    expect((await getRestore('partial')).status?.failureReason).toMatch(/^canceled by \S+$/);
    process.stderr.write(`[cancel] restore of ${OBJECTS} objects: Canceled ${ms.toFixed(0)} ms after spec.cancel was set\n`);
    expect(ms).toBeLessThan(WITHIN_MS);

    const r = await getRestore('partial');
    expect(r.status?.phase).toBe('Canceled');
    const created = r.status?.summary?.created ?? 0;
    expect(created).toBeGreaterThan(0);
    expect(created).toBeLessThan(OBJECTS);
    // What describe lists as created is exactly what is in the cluster with this restore's label.
    const [d, logs] = await Promise.all([cli('restore', 'describe', 'partial'), cli('restore', 'logs', 'partial')]);
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^Phase:\s+Canceled$/m);
    expect(d.stdout).toContain('The restore was canceled: the items listed below as Created or Updated were written before it stopped');
    expect(d.stdout).toContain(`  Created (${created}):`);
    const listed = d.stdout.split('\n').filter((l) => l.startsWith(`    configmaps ${target}/`)).map((l) => l.slice(`    configmaps ${target}/`.length).replace(/:.*$/, '')).sort();
    const live = (await client.listAll<KubeObject>(CORE.configMaps, { namespace: target, labelSelector: `${LABEL_RESTORE_NAME}=partial` })).items.map((o) => o.metadata?.name ?? '').sort();
    expect(listed.length).toBeGreaterThan(0);
    expect(listed).toEqual(live);
    expect(logs.stdout).toMatch(/restore canceled .*; done before it stopped: created \d+, updated 0, skipped \d+, failed 0/);
  }, 600_000);
});
