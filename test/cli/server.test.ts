// The CLI against a running `stowage server` with a filesystem location: version, backup create
// --wait, describe --details, logs (stored, live and followed), download, verify (intact and
// tampered) and delete. Downloads go through the server's own /download/<token> endpoint, since the
// filesystem store cannot presign URLs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { newBackupStorageLocation, newDownloadRequest, newRestore, RESOURCES, type Backup, type DownloadRequest, type Restore, type ServerStatusRequest } from '../../src/apis/v1/index.js';
import { createLinkKey } from '../../src/auth/index.js';
import { isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureAppNamespace, ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { ensureBuilt, rewriteTarball, runCli, show, slowPluginDir, type RunOptions } from './helpers.js';

const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const PVS = { group: '', version: 'v1', resource: 'persistentvolumes', namespaced: false };
const NAMESPACES = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };
const PVCS = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true };

describe('stowage CLI with a running server', () => {
  const ns = uniqueName('cli-srv');
  const app = uniqueName('cli-app');
  const slowApp = uniqueName('cli-slow');
  const loc = filesystemLocation();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-cli-srv-'));
  const plugins = slowPluginDir();
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);
  const stored = (backup: string, file: string): string => path.join(loc.root, 'backups', 'backups', backup, file);

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureAppNamespace(client, app, 12);
    await ensureNamespace(client, slowApp);
    // A claim bound to a volume: the namespace backup pulls the (cluster-scoped) volume in.
    await client.create(PVS, undefined, { metadata: { name: `${app}-pv` }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/cli' }, storageClassName: '' } });
    await client.create(PVCS, app, { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: `${app}-pv`, storageClassName: '' } });
    for (let i = 0; i < 6; i++) {
      await client.create(CONFIGMAPS, slowApp, { metadata: { name: `slow-${i}`, labels: { 'stowage-test/slow': 'true' } }, data: { i: String(i) } });
    }
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc, args: ['--plugin-dir', plugins] });
    opts = { kubeconfig, namespace: ns };
  });

  afterAll(async () => {
    await server?.stop();
    await client?.delete(PVS, undefined, `${app}-pv`).catch(() => undefined);
    client?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(plugins, { recursive: true, force: true });
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('shows the server version and its plugins through a ServerStatusRequest, and leaves no request behind', async () => {
    const r = await cli('version');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Server \\(namespace ${ns}\\):\\n {2}Version: {2}\\d+\\.\\d+\\.\\d+`, 'm'));
    expect(r.stdout).toMatch(/^ {2}stowage\.dev\/filesystem\s+ObjectStore$/m);
    expect(r.stdout).toMatch(/^ {2}test\.stowage\.dev\/slow\s+BackupItemAction$/m);
    const j = JSON.parse((await cli('version', '-o', 'json')).stdout) as { server: { version: string; plugins: { name: string; kind: string }[] } };
    expect(j.server.plugins).toContainEqual({ name: 'stowage.dev/aws', kind: 'ObjectStore' });
    const left = await client.list<ServerStatusRequest>(RESOURCES.ServerStatusRequest, { namespace: ns });
    expect(left.items).toHaveLength(0);
  });

  it('creates a backup and waits for it, printing plain progress lines when stdout is not a terminal', async () => {
    const r = await cli('backup', 'create', 'app', '--include-namespaces', app, '--wait');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Backup request "app" submitted successfully.');
    expect(r.stdout).toMatch(/^Completed: (\d+)\/\1 items backed up \(100%\)$/m);
    expect(r.stdout).toContain('Backup completed with status: Completed.');
    expect(r.stdout).not.toContain('\r');
    const b = await client.get<Backup>(RESOURCES.Backup, ns, 'app');
    expect(b.status?.phase).toBe('Completed');
  });

  it('exits non-zero with the reason when the waited-for backup does not complete', async () => {
    // A spec the server's validation refuses is refused by the CLI first, with the same message, and nothing is created.
    const early = await cli('backup', 'create', 'bad', '--include-namespaces', app, '--exclude-namespaces', app, '--wait');
    expect(early.code, show(early)).toBe(2);
    expect(early.stderr.trim()).toBe(`error: namespace "${app}" is in both includedNamespaces and excludedNamespaces`);
    await expect(client.get(RESOURCES.Backup, ns, 'bad')).rejects.toSatisfy(isNotFound);
    // What only the server knows (the location is ReadOnly) ends the waited-for backup FailedValidation.
    await client.create(RESOURCES.BackupStorageLocation, ns, newBackupStorageLocation('read-only', ns, { ...loc.spec, default: false, accessMode: 'ReadOnly' }));
    const r = await cli('backup', 'create', 'bad', '--storage-location', 'read-only', '--wait');
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toContain('Backup completed with status: FailedValidation.');
    expect(r.stderr).toMatch(/^error: backup "bad" finished FailedValidation: .*backup storage location "read-only" is ReadOnly: backups cannot be written to it/);
    await client.delete(RESOURCES.BackupStorageLocation, ns, 'read-only');
  });

  it('describes a backup with --details: the resource list read from object storage, and its events', async () => {
    const r = await cli('backup', 'describe', 'app', '--details');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/^Phase:\s+Completed$/m);
    expect(r.stdout).toMatch(/^Resource List:\n {2}configmaps:\n/m);
    for (let i = 0; i < 12; i++) expect(r.stdout).toContain(`    - ${app}/cm-${i}\n`);
    expect(r.stdout).toContain(`Pulled in (cluster-scoped dependencies):\n  persistentvolumes:\n    - ${app}-pv: PersistentVolume "${app}-pv" is bound to PersistentVolumeClaim "${app}/data"\n`);
    // The completeness record: the 12 configmaps and kube-root-ca.crt, listed and written at v1.
    expect(r.stdout).toMatch(/^Resources: +\d+ in scope, \d+ items written\n {2}RESOURCE +VERSION +LISTED +WRITTEN +ERROR\n/m);
    expect(r.stdout).toMatch(/^ {2}configmaps +v1 +13 +13$/m);
    expect(r.stdout).toMatch(/^ {2}\(\d+ more listed with no items\)$/m);
    expect(r.stdout).toMatch(/^ {2}Normal\s+Completed\s+/m);
    const j = JSON.parse((await cli('backup', 'describe', 'app', '--details', '-o', 'json')).stdout) as {
      backup: Backup; resourceList: Record<string, string[]>; resources: { groupResource: string; apiVersion: string; listed: number; written: number }[]; pulledIn: unknown[];
    };
    expect(j.backup.metadata.name).toBe('app');
    expect(j.resourceList.configmaps).toContain(`${app}/cm-3`);
    expect(j.resources.find((x) => x.groupResource === 'configmaps')).toEqual({ groupResource: 'configmaps', apiVersion: 'v1', listed: 13, written: 13 });
    expect(j.pulledIn).toContainEqual({ groupResource: 'persistentvolumes', name: `${app}-pv`, requiredBy: `persistentvolumeclaims "${app}/data"`, reason: `PersistentVolume "${app}-pv" is bound to PersistentVolumeClaim "${app}/data"` });
  });

  it('prints a finished backup\'s log as text lines, or as the stored JSON lines with -o json', async () => {
    const r = await cli('backup', 'logs', 'app');
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+ info +starting backup ${ns}/app`));
    expect(r.stdout).toMatch(/ info +backup completed: \d+ items/);
    const json = await cli('backup', 'logs', 'app', '-o', 'json');
    const parsed = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; level: string; backup: string });
    expect(parsed.length).toBe(lines.length);
    expect(parsed.every((l) => l.backup === `${ns}/app`)).toBe(true);
  });

  it('answers a DownloadRequest it cannot serve with the reason in status.message, and the CLI says it', async () => {
    const req = newDownloadRequest(ns, { kind: 'BackupContents', name: 'no-such-backup' });
    req.spec.publicKey = createLinkKey().publicKey;
    const created = await client.create<DownloadRequest>(RESOURCES.DownloadRequest, ns, req);
    const done = await waitUntil('the DownloadRequest to be processed', async () => {
      const dr = await client.get<DownloadRequest>(RESOURCES.DownloadRequest, ns, created.metadata.name);
      return dr.status?.phase === 'Processed' ? dr : undefined;
    }, 30_000, 200);
    expect(done.status?.sealedURL).toBeUndefined();
    expect(done.status?.message).toBe(`backup "no-such-backup" not found in namespace ${ns}`);
    const r = await cli('backup', 'download', 'no-such-backup', '-o', path.join(tmp, 'none.tar.gz'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('not found');
  });

  it('downloads the tarball byte for byte, and will not overwrite a file without --force', async () => {
    const file = path.join(tmp, 'app.tar.gz');
    const r = await cli('backup', 'download', 'app', '-o', file);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Backup "app" downloaded to ${file.replace(/[.]/g, '\\.')} \\(\\d`));
    expect(fs.readFileSync(file).equals(fs.readFileSync(stored('app', 'app.tar.gz')))).toBe(true);
    const again = await cli('backup', 'download', 'app', '-o', file);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`error: ${file} already exists; use --force to overwrite it`);
    const forced = await cli('backup', 'download', 'app', '-o', file, '--force');
    expect(forced.code, show(forced)).toBe(0);
    const def = await runCli(['backup', 'download', 'app'], { ...opts, cwd: tmp });
    expect(def.code, show(def)).toBe(0);
    expect(fs.existsSync(path.join(tmp, 'app-data.tar.gz'))).toBe(true);
  });

  it('verifies an intact backup, then reports every changed, missing and extra item of a tampered one', async () => {
    const ok = await cli('backup', 'verify', 'app');
    expect(ok.code, show(ok)).toBe(0);
    expect(ok.stdout).toMatch(/^Items: +(\d+) of \1 files match the manifest$/m);
    expect(ok.stdout).toContain('Backup "app" is intact');

    const changed = `resources/configmaps/namespaces/${app}/cm-1.json`;
    const removed = `resources/configmaps/namespaces/${app}/cm-2.json`;
    const added = `resources/configmaps/namespaces/${app}/intruder.json`;
    await rewriteTarball(stored('app', 'app.tar.gz'), (entries) => {
      expect(entries.has(changed)).toBe(true);
      expect(entries.has(removed)).toBe(true);
      const cm1 = JSON.parse((entries.get(changed) ?? Buffer.alloc(0)).toString()) as { data: Record<string, string> };
      cm1.data.i = 'tampered';
      entries.set(changed, Buffer.from(JSON.stringify(cm1)));
      entries.delete(removed);
      entries.set(added, Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'intruder', namespace: app } })));
      return entries;
    });
    const bad = await cli('backup', 'verify', 'app');
    expect(bad.code, show(bad)).toBe(1);
    expect(bad.stdout).toMatch(/^TARBALL +the tarball's SHA-256 is [0-9a-f]{64} \(\d+ bytes\), the manifest says [0-9a-f]{64}/m);
    expect(bad.stdout).toMatch(new RegExp(`^MISMATCH +${changed} has SHA-256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}$`, 'm'));
    expect(bad.stdout).toMatch(new RegExp(`^MISSING +${removed} is in the manifest but not in the tarball$`, 'm'));
    expect(bad.stdout).toMatch(new RegExp(`^EXTRA +${added} is in the tarball but not in the manifest$`, 'm'));
    expect(bad.stderr.trim()).toBe('error: backup "app" failed verification: 4 problems');
    const j = JSON.parse((await cli('backup', 'verify', 'app', '-o', 'json')).stdout) as { ok: boolean; problems: { kind: string; path?: string }[] };
    expect(j.ok).toBe(false);
    expect(j.problems.map((p) => [p.kind, p.path])).toEqual([['tarball', undefined], ['mismatch', changed], ['missing', removed], ['extra', added]]);
  });

  it('verify reports, precisely and with a non-zero exit, a resource list or completeness record that disagrees with the tarball', async () => {
    const r = await cli('backup', 'create', 'agree', '--include-namespaces', app, '--include-resources', 'configmaps', '--wait');
    expect(r.code, show(r)).toBe(0);
    const ok = await cli('backup', 'verify', 'agree');
    expect(ok.code, show(ok)).toBe(0);
    expect(ok.stdout).toContain('and the resource list and the completeness record agree with it');
    // The resource list loses an item; the record claims one more configmap than was written.
    const listFile = stored('agree', 'agree-resource-list.json.gz');
    const list = JSON.parse(gunzipSync(fs.readFileSync(listFile)).toString()) as Record<string, string[]>;
    list.configmaps = (list.configmaps ?? []).filter((n) => n !== `${app}/cm-5`);
    fs.writeFileSync(listFile, gzipSync(JSON.stringify(list)));
    const resultsFile = stored('agree', 'agree-results.gz');
    const results = JSON.parse(gunzipSync(fs.readFileSync(resultsFile)).toString()) as { resources: { groupResource: string; written: number }[] };
    for (const x of results.resources) if (x.groupResource === 'configmaps') x.written = 14;
    fs.writeFileSync(resultsFile, gzipSync(JSON.stringify(results)));
    const bad = await cli('backup', 'verify', 'agree');
    expect(bad.code, show(bad)).toBe(1);
    expect(bad.stdout).toMatch(/^Items: +(\d+) of \1 files match the manifest$/m);
    expect(bad.stdout).toContain(`DISAGREEMENT resources/configmaps/namespaces/${app}/cm-5.json is in the manifest but configmaps "${app}/cm-5" is not in the resource list\n`);
    expect(bad.stdout).toContain(`DISAGREEMENT resources/configmaps/v1-preferredversion/namespaces/${app}/cm-5.json is in the manifest but configmaps "${app}/cm-5" is not in the resource list\n`);
    expect(bad.stdout).toContain('DISAGREEMENT the completeness record says 14 configmaps written, the resource list holds 12\n');
    expect(bad.stderr.trim()).toBe('error: backup "agree" failed verification: 3 problems');
  });

  it('refuses to restore a swapped tarball whose manifest was forged to match: verify and the restore report the same problems, and nothing is created', async () => {
    // Two unsigned backups of two configmaps each; the first's tarball and manifest are replaced by the second's.
    const [mine, donor, target] = [uniqueName('cli-forged'), uniqueName('cli-donor'), uniqueName('cli-forged-to')];
    for (const n of [mine, donor]) {
      await ensureNamespace(client, n);
      for (const cm of ['a', 'b']) await client.create(CONFIGMAPS, n, { metadata: { name: `${n}-${cm}` }, data: { v: cm } });
    }
    for (const [b, n] of [['forged', mine], ['donor', donor]] as const) {
      const r = await cli('backup', 'create', b, '--include-namespaces', n, '--include-resources', 'configmaps', '--wait');
      expect(r.code, show(r)).toBe(0);
    }
    fs.copyFileSync(stored('donor', 'donor.tar.gz'), stored('forged', 'forged.tar.gz'));
    fs.copyFileSync(stored('donor', 'donor-manifest.json.gz'), stored('forged', 'forged-manifest.json.gz'));

    const v = await cli('backup', 'verify', 'forged', '-o', 'json');
    expect(v.code, show(v)).toBe(1);
    const report = JSON.parse(v.stdout) as { ok: boolean; matched: number; checked: number; problems: { kind: string; message: string }[] };
    // The tarball matches the (forged) manifest; only the records give it away.
    expect(report.matched).toBe(report.checked);
    expect(report.problems.every((p) => p.kind === 'disagreement')).toBe(true);
    const problems = report.problems.map((p) => p.message);
    expect(problems).toContain(`configmaps "${mine}/${mine}-a" is in the resource list but the manifest has no resources/configmaps/namespaces/${mine}/${mine}-a.json`);
    expect(problems).toContain(`resources/configmaps/namespaces/${donor}/${donor}-b.json is in the manifest but configmaps "${donor}/${donor}-b" is not in the resource list`);
    // Each item of either side is named twice (its classic and its preferred-version copy); kube-root-ca.crt may add more.
    for (const [n, side] of [[mine, 'list'], [donor, 'manifest']] as const) {
      for (const cm of [`${n}-a`, `${n}-b`]) expect(problems.filter((p) => p.includes(`${n}/${cm}`) && p.includes(side === 'list' ? 'the manifest has no' : 'is not in the resource list'))).toHaveLength(2);
    }

    await client.create(RESOURCES.Restore, ns, newRestore('forged', ns, { backupName: 'forged', namespaceMapping: { [donor]: target, [mine]: target } }));
    const done = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'forged');
    expect(done.status?.phase).toBe('Failed');
    expect(done.status?.failureReason).toBe(
      `the restore was refused (records-disagree): the backup's manifest, resource list and completeness record disagree (as \`stowage backup verify\` reports), so it is not restored: ${problems.join('; ')}`,
    );
    expect(done.status?.progress?.itemsRestored ?? 0).toBe(0);
    expect((await client.list(CONFIGMAPS, { namespace: target })).items).toEqual([]);
    await expect(client.get(NAMESPACES, undefined, target)).rejects.toSatisfy(isNotFound);
  });

  it('shows the log of a running backup so far, and --follow streams it to the end', async () => {
    const create = await cli('backup', 'create', 'live', '--include-namespaces', slowApp);
    expect(create.code, show(create)).toBe(0);
    await waitUntil('backup live to be InProgress', async () => {
      const b = await client.get<Backup>(RESOURCES.Backup, ns, 'live');
      return b.status?.phase === 'InProgress' ? true : undefined;
    }, 60_000, 100);
    const sofar = await cli('backup', 'logs', 'live');
    expect(sofar.code, show(sofar)).toBe(0);
    expect(sofar.stdout).toContain(`starting backup ${ns}/live`);
    const phaseAfter = (await client.get<Backup>(RESOURCES.Backup, ns, 'live')).status?.phase;
    // The slow action holds the backup for ~6 s; a log read while it ran cannot contain its end.
    if (phaseAfter === 'InProgress') expect(sofar.stdout).not.toContain('backup completed');

    const followed = await cli('backup', 'logs', 'live', '--follow');
    expect(followed.code, show(followed)).toBe(0);
    for (let i = 0; i < 6; i++) expect(followed.stdout).toContain(`slow action on slow-${i}`);
    expect(followed.stdout).toMatch(/backup completed: \d+ items/);
    const done = await client.get<Backup>(RESOURCES.Backup, ns, 'live');
    expect(done.status?.phase).toBe('Completed');
  });

  it('--follow on a backup that has not started waits for it, then streams its whole log', async () => {
    const create = await cli('backup', 'create', 'later', '--include-namespaces', slowApp, '--include-resources', 'configmaps');
    expect(create.code, show(create)).toBe(0);
    const followed = await cli('backup', 'logs', 'later', '--follow');
    expect(followed.code, show(followed)).toBe(0);
    expect(followed.stdout).toContain(`starting backup ${ns}/later`);
    expect(followed.stdout).toMatch(/backup completed: \d+ items/);
  });

  it('deletes a backup with --confirm --wait: the Backup and its data in storage are gone', async () => {
    const r = await runCli(['backup', 'delete', 'later', '--confirm', '--wait', '--timeout', '90s'], { ...opts, timeoutMs: 110_000 });
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Backup "later" deleted.');
    expect(fs.existsSync(stored('later', 'stowage-backup.json'))).toBe(false);
    const get = await cli('backup', 'get', 'later');
    expect(get.stderr.trim()).toBe(`error: backup "later" not found in namespace ${ns}`);
  }, 150_000);
});
