// `stowage backup delete` and `stowage restore delete` against a running server: by name, by
// --selector and --all, with --confirm (no terminal here, so without it they refuse with exit 2).
// Deleting a Restore also deletes its log and results from the bucket, done by the server (the
// restore-artifacts finalizer), and leaves what it restored in place.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, RESTORE_ARTIFACTS_FINALIZER, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { mapLimit } from '../../src/util/concurrency.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureAppNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type CliResult, type RunOptions } from './helpers.js';

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('stowage backup delete and restore delete with a running server', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('cli-del');
  const app = uniqueName('cli-delapp');
  const copy = uniqueName('cli-delcopy');
  const loc = filesystemLocation();
  const bucket = path.join(loc.root, 'backups');
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);
  const exists = (res: typeof RESOURCES.Backup | typeof RESOURCES.Restore, name: string): Promise<boolean> =>
    client.get(res, ns, name).then(() => true, (err: unknown) => {
      if (isNotFound(err)) return false;
      throw err;
    });

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureAppNamespace(client, app, 3);
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc });
    // Generous: on a loaded machine one CLI process can take a minute to start.
    opts = { kubeconfig, namespace: ns, timeoutMs: 300_000 };
    const made = await mapLimit([['keep-1', 'keep'], ['drop-1', 'drop'], ['drop-2', 'drop']] as const, 3, ([name, tier]) =>
      cli('backup', 'create', name, '--include-namespaces', app, '--labels', `tier=${tier}`, '--wait'));
    for (const r of made) expect(r.code, show(r)).toBe(0);
  }, 600_000);

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('refuses bad input with a clear message and exit code 2, and deletes nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['backup', 'delete'], /^error: name the backups, or give --selector SELECTOR or --all$/m],
      [['backup', 'delete', 'drop-1', '--selector', 'tier=drop'], /^error: give backup names, --selector or --all, not more than one of them$/m],
      [['backup', 'delete', '--selector', 'tier in (', '--confirm'], /^error: --selector: /m],
      [['backup', 'delete', '--all'], /^error: refusing to delete without confirmation: stdin is not a terminal, so pass --confirm$/m],
      [['backup', 'delete', 'drop-1', '--confirm', '--timeout', 'soon'], /^error: .*--timeout/m],
      [['restore', 'delete'], /^error: name the restores, or give --selector SELECTOR or --all$/m],
      [['restore', 'delete', 'a', '--all', '--confirm'], /^error: give restore names, --selector or --all, not more than one of them$/m],
      [['restore', 'delete', '--selector', 'a=b'], /^error: refusing to delete without confirmation: stdin is not a terminal, so pass --confirm$/m],
      [['restore', 'delete', '--all', '--bogus'], /^error: unknown option '--bogus'/m],
    ];
    const results = await mapLimit(cases, 4, ([args]) => cli(...args));
    cases.forEach(([args, message], i) => {
      const r = results[i] as CliResult;
      expect(r.code, `${args.join(' ')}\n${show(r)}`).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    });
    for (const n of ['keep-1', 'drop-1', 'drop-2']) expect(await exists(RESOURCES.Backup, n)).toBe(true);
    expect((await client.list(RESOURCES.DeleteBackupRequest, { namespace: ns })).items).toEqual([]);
    const missing = await cli('restore', 'delete', 'nope', '--confirm');
    expect(missing.code, show(missing)).toBe(1);
    expect(missing.stderr.trim()).toBe(`error: restore "nope" not found in namespace ${ns}`);
  }, 900_000);

  it('restore delete removes the Restore and its log and results in the bucket; what it restored stays', async () => {
    const c = await cli('restore', 'create', 'r1', '--from-backup', 'keep-1', '--namespace-mappings', `${app}:${copy}`, '--wait');
    expect(c.code, show(c)).toBe(0);
    const held = await waitUntil('the restore to hold the artifacts finalizer', async () => {
      const r = await client.get<Restore>(RESOURCES.Restore, ns, 'r1');
      return (r.metadata.finalizers ?? []).includes(RESTORE_ARTIFACTS_FINALIZER) ? r : undefined;
    }, 120_000);
    expect(held.status?.phase).toBe('Completed');
    const before = filesUnder(bucket);
    expect(before.filter((f) => f.startsWith('restores/r1/')).length).toBeGreaterThan(0);

    const d = await cli('restore', 'delete', 'r1', '--confirm', '--wait');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toBe('Request to delete restore "r1" submitted successfully.\nRestore "r1" deleted.\n');
    expect(await exists(RESOURCES.Restore, 'r1')).toBe(false);
    const after = filesUnder(bucket);
    expect(after.filter((f) => f.startsWith('restores/r1/'))).toEqual([]);
    // Nothing else in the bucket was touched, and the restored objects are still in the cluster.
    expect(after).toEqual(before.filter((f) => !f.startsWith('restores/r1/')));
    for (let i = 0; i < 3; i++) await client.get(CORE.configMaps, copy, `cm-${i}`);
  }, 600_000);

  it('restore delete --all deletes every restore, finished ones with their artifacts', async () => {
    for (const n of ['dry-1', 'dry-2']) {
      const c = await cli('restore', 'create', n, '--from-backup', 'drop-1', '--dry-run', '--labels', 'kind=dry', '--wait');
      expect(c.code, show(c)).toBe(0);
    }
    expect(filesUnder(bucket).some((f) => f.startsWith('restores/dry-1/'))).toBe(true);
    const d = await cli('restore', 'delete', '--all', '--confirm', '--wait');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toContain('Restore "dry-1" deleted.\n');
    expect(d.stdout).toContain('Restore "dry-2" deleted.\n');
    expect((await client.list<Restore>(RESOURCES.Restore, { namespace: ns })).items).toEqual([]);
    expect(filesUnder(bucket).filter((f) => f.startsWith('restores/'))).toEqual([]);
    const none = await cli('restore', 'delete', '--selector', 'kind=dry', '--confirm');
    expect(none.code, show(none)).toBe(0);
    expect(none.stdout).toBe(`No restores matching "kind=dry" in namespace ${ns}: nothing to delete.\n`);
  }, 600_000);

  it('backup delete --selector deletes exactly the matching backups, data included', async () => {
    const d = await cli('backup', 'delete', '--selector', 'tier=drop', '--confirm', '--wait');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toBe(
      'Request to delete backup "drop-1" submitted successfully.\nRequest to delete backup "drop-2" submitted successfully.\n' +
      'Backup "drop-1" deleted.\nBackup "drop-2" deleted.\n',
    );
    expect(await exists(RESOURCES.Backup, 'drop-1')).toBe(false);
    expect(await exists(RESOURCES.Backup, 'drop-2')).toBe(false);
    const kept = await client.get<Backup>(RESOURCES.Backup, ns, 'keep-1');
    expect(kept.status?.phase).toBe('Completed');
    const files = filesUnder(bucket);
    expect(files.filter((f) => f.startsWith('backups/drop-'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('backups/keep-1/')).length).toBeGreaterThan(0);
    const none = await cli('backup', 'delete', '--selector', 'tier=drop', '--confirm');
    expect(none.code, show(none)).toBe(0);
    expect(none.stdout).toBe(`No backups matching "tier=drop" in namespace ${ns}: nothing to delete.\n`);
  }, 600_000);
});
