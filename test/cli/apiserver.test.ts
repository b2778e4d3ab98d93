// The CLI against the real apiserver with no Stowage server running: what it submits, what it
// prints for get/describe in every output format, and its error lines and exit codes.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import YAML from 'yaml';
import {
  LABEL_SCHEDULE_NAME,
  RESOURCES,
  newBackup,
  newBackupStorageLocation,
  newRestore,
  newSchedule,
  type Backup,
  type BackupStatus,
  type DeleteBackupRequest,
  type Restore,
  type ServerStatusRequest,
} from '../../src/apis/v1/index.js';
import { ensureCrds, recordEvent, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, testClient } from '../support/server.js';
import { ensureBuilt, runCli, show, type RunOptions } from './helpers.js';

describe('stowage CLI against the apiserver (no server running)', () => {
  const ns = uniqueName('cli');
  let kubeconfig: string;
  let client: DynamicClient;
  let opts: RunOptions;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-cli-'));

  const cli = (...args: string[]) => runCli(args, opts);

  async function setStatus(kind: 'Backup' | 'Restore', name: string, status: BackupStatus | Restore['status']): Promise<void> {
    await client.patchStatus(RESOURCES[kind], ns, name, { status });
  }

  beforeAll(async () => {
    kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await Promise.all([ensureBuilt(), ensureCrds(client)]);
    await ensureNamespace(client, ns);
    await client.create(RESOURCES.BackupStorageLocation, ns, newBackupStorageLocation('primary', ns, { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' }, signing: { disabled: true } }));
    opts = { kubeconfig, namespace: ns };
  });

  afterAll(() => {
    client?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  describe('backup create', () => {
    it('submits a Backup with every filter flag translated into the spec', async () => {
      const r = await cli(
        'backup', 'create', 'full-flags',
        '--include-namespaces', 'app,web', '--include-namespaces', 'db',
        '--exclude-namespaces', 'kube-system',
        '--include-resources', 'deployments.apps,configmaps',
        '--exclude-resources', 'secrets',
        '--include-cluster-resources=false',
        '--selector', 'app=web,tier!=db,env in (a,b)',
        '--ttl', '72h',
        '--storage-location', 'primary',
        '--labels', 'team=a,ticket=42',
      );
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout).toContain('Backup request "full-flags" submitted successfully.');
      const b = await client.get<Backup>(RESOURCES.Backup, ns, 'full-flags');
      expect(b.spec).toEqual({
        includedNamespaces: ['app', 'web', 'db'],
        excludedNamespaces: ['kube-system'],
        includedResources: ['deployments.apps', 'configmaps'],
        excludedResources: ['secrets'],
        includeClusterResources: false,
        labelSelector: {
          matchLabels: { app: 'web' },
          matchExpressions: [
            { key: 'tier', operator: 'NotIn', values: ['db'] },
            { key: 'env', operator: 'In', values: ['a', 'b'] },
          ],
        },
        ttl: '72h0m0s',
        storageLocation: 'primary',
      });
      expect(b.metadata.labels).toEqual({ team: 'a', ticket: '42' });
    });

    it('takes --include-cluster-resources without a value as true, and --or-selector as OR-ed selectors', async () => {
      const r = await cli('backup', 'create', 'or-sel', '--include-cluster-resources', '--or-selector', 'app=a or app=b,tier=x');
      expect(r.code, show(r)).toBe(0);
      const b = await client.get<Backup>(RESOURCES.Backup, ns, 'or-sel');
      expect(b.spec.includeClusterResources).toBe(true);
      expect(b.spec.orLabelSelectors).toEqual([{ matchLabels: { app: 'a' } }, { matchLabels: { app: 'b', tier: 'x' } }]);
    });

    it('copies a schedule\'s template with --from-schedule, naming the backup after the schedule', async () => {
      await client.create(RESOURCES.Schedule, ns, newSchedule('nightly', ns, { schedule: '0 1 * * *', template: { includedNamespaces: ['app'], ttl: '24h0m0s' } }));
      const r = await cli('backup', 'create', '--from-schedule', 'nightly');
      expect(r.code, show(r)).toBe(0);
      const name = /Backup request "(nightly-\d{14})"/.exec(r.stdout)?.[1];
      expect(name, r.stdout).toBeDefined();
      const b = await client.get<Backup>(RESOURCES.Backup, ns, name ?? '');
      expect(b.spec).toEqual({ includedNamespaces: ['app'], ttl: '24h0m0s' });
      expect(b.metadata.labels?.[LABEL_SCHEDULE_NAME]).toBe('nightly');

      const mixed = await cli('backup', 'create', '--from-schedule', 'nightly', '--include-namespaces', 'x');
      expect(mixed.code, show(mixed)).toBe(2);
      expect(mixed.stderr).toContain('--from-schedule takes the whole spec from the schedule');
      const missing = await cli('backup', 'create', '--from-schedule', 'weekly');
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toBe(`error: schedule "weekly" not found in namespace ${ns}`);
    });

    it('refuses a duplicate name and an unknown storage location with one line each', async () => {
      await client.create(RESOURCES.Backup, ns, newBackup('dup', ns, {}));
      const dup = await cli('backup', 'create', 'dup');
      expect(dup.code).toBe(1);
      expect(dup.stderr.trim()).toBe(`error: backup "dup" already exists in namespace ${ns}`);
      const loc = await cli('backup', 'create', 'nowhere', '--storage-location', 'nope');
      expect(loc.code).toBe(1);
      expect(loc.stderr.trim()).toBe(`error: backup storage location "nope" not found in namespace ${ns}`);
    });

    it('treats bad flags and arguments as usage errors (exit 2) before contacting the cluster', async () => {
      // A kubeconfig that cannot work proves nothing was sent: the usage error comes first.
      const offline: RunOptions = { kubeconfig: path.join(tmp, 'absent'), namespace: ns };
      const cases: [string[], RegExp][] = [
        [['backup', 'create'], /a backup name is required/],
        [['backup', 'create', 'Bad_Name'], /"Bad_Name" is not a valid backup name/],
        [['backup', 'create', 'x', '--ttl', '3days'], /--ttl "3days" is not a duration like 720h0m0s: unknown unit "days"/],
        [['backup', 'create', 'x', '--selector', 'a=b,,c'], /--selector: label selector "a=b,,c": expected a label key/],
        [['backup', 'create', 'x', '--selector', 'a=b', '--or-selector', 'c=d'], /--selector and --or-selector cannot be used together/],
        [['backup', 'create', 'x', '--include-cluster-resources=maybe'], /--include-cluster-resources takes true or false, not "maybe"/],
        [['backup', 'create', 'x', '--labels', 'novalue'], /--labels: "novalue" is not of the form key=value/],
        [['backup', 'create', 'x', '--snapshot-volumes', 'maybe'], /--snapshot-volumes takes true or false, not "maybe"/],
        [['backup', 'create', 'x', '--csi-snapshot-timeout', 'soon'], /--csi-snapshot-timeout/],
        [['backup', 'create', 'x', '--include-namespace', 'a'], /unknown option '--include-namespace'\n\(Did you mean --include-namespaces\?\)/],
        [['backup', 'get', '-o', 'xml'], /unknown output format "xml"/],
        [['backupp', 'get'], /unknown command 'backupp'\n\(Did you mean backup\?\)/],
        [['backup', 'logs'], /missing required argument 'name'/],
        [['restore', 'create', '--from-backup', 'b', '--existing-resource-policy', 'replace'], /argument 'replace' is invalid. Allowed choices are none, update/],
        [['restore', 'create'], /give exactly one of --from-backup BACKUP or --from-schedule SCHEDULE/],
        [['restore', 'create', '--from-backup', 'b', '--namespace-mappings', 'a:B'], /^error: namespaceMapping\["a"\] = "B" is not a valid namespace name/],
        [['-n', 'Not_A_Namespace', 'backup', 'get'], /namespace "Not_A_Namespace" is not a valid Kubernetes namespace name/],
      ];
      // Three at a time: each is a separate node process.
      for (let i = 0; i < cases.length; i += 3) {
        const batch = cases.slice(i, i + 3);
        const results = await Promise.all(batch.map(([args]) => runCli(args, offline)));
        batch.forEach(([args, re], j) => {
          const r = results[j] ?? { code: null, stdout: '', stderr: '' };
          expect(r.code, `${args.join(' ')}\n${show(r)}`).toBe(2);
          expect(r.stderr, args.join(' ')).toMatch(re);
          expect(r.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
        });
      }
    }, 240_000);
  });

  describe('backup get and describe', () => {
    beforeAll(async () => {
      await client.create(RESOURCES.Backup, ns, newBackup('done', ns, { includedNamespaces: ['app'], storageLocation: 'primary', labelSelector: { matchLabels: { app: 'web' } } }, { tier: 'gold' }));
      await setStatus('Backup', 'done', {
        phase: 'PartiallyFailed', startTimestamp: '2025-01-02T03:04:05Z', completionTimestamp: '2025-01-02T03:05:00Z',
        expiration: new Date(Date.now() + 3 * 86_400_000 + 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
        progress: { totalItems: 40, itemsBackedUp: 38 }, warnings: 2, errors: 1, formatVersion: '1.1.0', failureReason: 'two items could not be read',
      });
      const done = await client.get<Backup>(RESOURCES.Backup, ns, 'done');
      await recordEvent(client, done, 'Warning', 'ItemFailed', 'configmaps app/broken could not be read');
      await client.create(RESOURCES.Backup, ns, newBackup('invalid', ns, { ttl: 'soon' }));
      await setStatus('Backup', 'invalid', { phase: 'FailedValidation', validationErrors: ['spec.ttl "soon" is not a duration', 'backup storage location "x" does not exist'] });
    });

    it('lists backups in a table like velero', async () => {
      const r = await cli('backup', 'get');
      expect(r.code, show(r)).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^NAME\s+STATUS\s+ERRORS\s+WARNINGS\s+CREATED\s+EXPIRES\s+STORAGE LOCATION\s+SELECTOR$/);
      const done = lines.find((l) => l.startsWith('done '));
      expect(done).toMatch(/^done\s+PartiallyFailed\s+1\s+2\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\s+3d\s+primary\s+app=web$/);
      expect(lines.find((l) => l.startsWith('invalid '))).toMatch(/^invalid\s+FailedValidation\s+0\s+0\s+.*\s+n\/a\s+<default>\s+<none>$/);
    });

    it('filters by label and shows named backups, reporting the missing ones after the found ones', async () => {
      const sel = await cli('backup', 'get', '-l', 'tier=gold');
      expect(sel.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['done']);
      const some = await cli('backup', 'get', 'done', 'ghost');
      expect(some.code).toBe(1);
      expect(some.stdout).toMatch(/^done\s+PartiallyFailed/m);
      expect(some.stderr.trim()).toBe(`error: backup "ghost" not found in namespace ${ns}`);
    });

    it('prints objects as JSON and YAML: one named backup as itself, a listing as a BackupList', async () => {
      const one = await cli('backup', 'get', 'done', '-o', 'json');
      expect(one.code, show(one)).toBe(0);
      const obj = JSON.parse(one.stdout) as Backup;
      expect(obj.kind).toBe('Backup');
      expect(obj.status?.progress).toEqual({ totalItems: 40, itemsBackedUp: 38 });
      const all = await cli('backup', 'get', '-o', 'yaml');
      const list = YAML.parse(all.stdout) as { kind: string; items: Backup[] };
      expect(list.kind).toBe('BackupList');
      expect(list.items.map((b) => b.metadata.name)).toEqual(expect.arrayContaining(['done', 'invalid', 'full-flags']));
      const described = await cli('backup', 'describe', 'done', '-o', 'json');
      expect((JSON.parse(described.stdout) as Backup).metadata.name).toBe('done');
    });

    it('describes a backup: spec, phase, failure, timestamps, progress and its events', async () => {
      const r = await cli('backup', 'describe', 'done');
      expect(r.code, show(r)).toBe(0);
      const out = r.stdout;
      expect(out).toMatch(/^Name:\s+done$/m);
      expect(out).toMatch(/^Labels:\s+tier=gold$/m);
      expect(out).toMatch(/^Phase:\s+PartiallyFailed$/m);
      expect(out).toMatch(/^Failure reason:\s+two items could not be read$/m);
      expect(out).toMatch(/^Errors:\s+1$/m);
      expect(out).toMatch(/^Warnings:\s+2$/m);
      expect(out).toMatch(/^ {2}Included:\s+app$/m);
      expect(out).toMatch(/^Label selector:\s+app=web$/m);
      expect(out).toMatch(/^Storage Location:\s+primary$/m);
      expect(out).toMatch(/^Started:\s+2025-01-02 03:04:05 UTC$/m);
      expect(out).toMatch(/^Items backed up:\s+38 of 40$/m);
      expect(out).toContain('Resource List:  <use --details to see it>');
      expect(out).toMatch(/^ {2}Warning\s+ItemFailed\s+\S+\s+configmaps app\/broken could not be read$/m);
    });

    it('names the unimplemented fields a backup sets, and never shows them as if they ran', async () => {
      // As a backup synced from a Velero bucket may carry them; one created here fails validation.
      await client.create(RESOURCES.Backup, ns, newBackup('velero-made', ns, {
        includedNamespaces: ['app'], snapshotMoveData: true, hooks: { resources: [{ name: 'freeze' }] }, defaultVolumesToFsBackup: false,
      }));
      await setStatus('Backup', 'velero-made', { phase: 'Completed', startTimestamp: '2025-01-02T03:04:05Z', completionTimestamp: '2025-01-02T03:05:00Z' });
      const r = await cli('backup', 'describe', 'velero-made');
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout).toMatch(/^Not implemented:\s+spec\.snapshotMoveData \(set, but Stowage does not act on them\)$/m);
      expect(r.stdout).not.toMatch(/^Snapshot volumes:/m);
      // Hooks are implemented (issue 36): shown as set, with the counts of what ran (none here).
      expect(r.stdout).toMatch(/^Hooks:\s+freeze \(0 pre, 0 post\); a pod's own hook annotations win over them$/m);
      expect(r.stdout).toMatch(/^Hooks attempted:\s+0$/m);
      const plain = await cli('backup', 'describe', 'done');
      expect(plain.stdout).not.toMatch(/^(Not implemented|Hooks|Snapshot volumes):/m);
    });

    it('lists every validation error of a backup that failed validation', async () => {
      const r = await cli('backup', 'describe', 'invalid');
      expect(r.stdout).toMatch(/^Phase:\s+FailedValidation$/m);
      expect(r.stdout).toContain('Validation errors:\n  spec.ttl "soon" is not a duration\n  backup storage location "x" does not exist\n');
      const logs = await cli('backup', 'logs', 'invalid');
      expect(logs.code).toBe(1);
      expect(logs.stderr.trim()).toBe('error: backup "invalid" failed validation and has no log: spec.ttl "soon" is not a duration; backup storage location "x" does not exist');
    });

    it('says plainly when a backup does not exist, for every command that takes one', async () => {
      const commands = [['describe', 'nope'], ['logs', 'nope'], ['download', 'nope'], ['verify', 'nope'], ['delete', 'nope', '--confirm']];
      const results = await Promise.all(commands.map((args) => cli('backup', ...args)));
      for (const r of results) {
        expect(r.code, show(r)).toBe(1);
        expect(r.stderr.trim()).toBe(`error: backup "nope" not found in namespace ${ns}`);
      }
    });

    it('refuses to fetch a log, contents or a verification for backups that have none yet', async () => {
      await client.create(RESOURCES.Backup, ns, newBackup('fresh', ns, {}));
      const logs = await cli('backup', 'logs', 'fresh');
      expect(logs.code).toBe(1);
      expect(logs.stderr.trim()).toBe('error: backup "fresh" has not started yet, so it has no log; use --follow to wait for it');
      const dl = await cli('backup', 'download', 'fresh', '-o', path.join(tmp, 'f.tgz'));
      expect(dl.stderr.trim()).toBe('error: backup "fresh" is New; only a Completed or PartiallyFailed backup has contents to download');
      const v = await cli('backup', 'verify', 'fresh');
      expect(v.stderr.trim()).toBe('error: backup "fresh" is New; only a Completed or PartiallyFailed backup can be verified');
    });
  });

  describe('backup delete', () => {
    it('refuses without --confirm when stdin is not a terminal', async () => {
      await client.create(RESOURCES.Backup, ns, newBackup('to-delete', ns, {}));
      const r = await cli('backup', 'delete', 'to-delete');
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe('error: refusing to delete without confirmation: stdin is not a terminal, so pass --confirm');
      const dbrs = await client.list<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, { namespace: ns });
      expect(dbrs.items).toHaveLength(0);
    });

    it('creates a DeleteBackupRequest with --confirm', async () => {
      const r = await cli('backup', 'delete', 'to-delete', '--confirm');
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout).toContain('Request to delete backup "to-delete" submitted successfully.');
      const dbrs = await client.list<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, { namespace: ns });
      expect(dbrs.items.map((d) => d.spec.backupName)).toEqual(['to-delete']);
    });
  });

  describe('restore', () => {
    beforeAll(async () => {
      await client.create(RESOURCES.Backup, ns, newBackup('src', ns, { includedNamespaces: ['app'] }));
      await setStatus('Backup', 'src', { phase: 'Completed', progress: { totalItems: 3, itemsBackedUp: 3 } });
      await client.create(RESOURCES.Backup, ns, newBackup('running', ns, {}));
      await setStatus('Backup', 'running', { phase: 'InProgress' });
    });

    it('submits a Restore with mappings, policy, dry run, status and node ports, named after the backup', async () => {
      const r = await cli(
        'restore', 'create', '--from-backup', 'src',
        '--namespace-mappings', 'app:app-copy,db:db-copy', '--existing-resource-policy', 'update', '--dry-run',
        '--restore-status', 'deployments.apps', '--preserve-nodeports', '--include-resources', 'deployments.apps,services', '--selector', 'app=web',
      );
      expect(r.code, show(r)).toBe(0);
      const name = /Restore request "(src-\d{14})" submitted successfully \(dry run/.exec(r.stdout)?.[1];
      expect(name, r.stdout).toBeDefined();
      const restore = await client.get<Restore>(RESOURCES.Restore, ns, name ?? '');
      expect(restore.spec).toEqual({
        backupName: 'src',
        namespaceMapping: { app: 'app-copy', db: 'db-copy' },
        existingResourcePolicy: 'update',
        dryRun: true,
        restoreStatus: { includedResources: ['deployments.apps'] },
        preserveNodePorts: true,
        includedResources: ['deployments.apps', 'services'],
        labelSelector: { matchLabels: { app: 'web' } },
      });
    });

    it('refuses a backup that does not exist or has not finished', async () => {
      const missing = await cli('restore', 'create', '--from-backup', 'ghost');
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toBe(`error: backup "ghost" not found in namespace ${ns}`);
      const running = await cli('restore', 'create', 'r-running', '--from-backup', 'running');
      expect(running.code).toBe(1);
      expect(running.stderr.trim()).toBe('error: backup "running" is InProgress; only a Completed or PartiallyFailed backup can be restored');
    });

    it('lists and describes restores, in a table, JSON and YAML', async () => {
      await client.create(RESOURCES.Restore, ns, newRestore('r1', ns, { backupName: 'src', namespaceMapping: { app: 'other' } }));
      await setStatus('Restore', 'r1', { phase: 'InProgress', startTimestamp: '2025-01-02T03:04:05Z', progress: { totalItems: 10, itemsRestored: 4 } });
      const get = await cli('restore', 'get', 'r1');
      expect(get.code, show(get)).toBe(0);
      expect(get.stdout).toMatch(/^NAME\s+BACKUP\s+STATUS\s+STARTED\s+COMPLETED\s+ERRORS\s+WARNINGS\s+CREATED\s+SELECTOR\n/);
      expect(get.stdout).toMatch(/^r1\s+src\s+InProgress\s+2025-01-02 03:04:05 UTC\s+<none>\s+0\s+0\s+/m);
      const json = JSON.parse((await cli('restore', 'get', 'r1', '-o', 'json')).stdout) as Restore;
      expect(json.spec.namespaceMapping).toEqual({ app: 'other' });
      const yaml = YAML.parse((await cli('restore', 'get', '-o', 'yaml')).stdout) as { kind: string; items: Restore[] };
      expect(yaml.kind).toBe('RestoreList');
      const d = await cli('restore', 'describe', 'r1');
      expect(d.code, show(d)).toBe(0);
      expect(d.stdout).toMatch(/^Phase:\s+InProgress$/m);
      expect(d.stdout).toMatch(/^Backup:\s+src$/m);
      expect(d.stdout).toMatch(/^Namespace mappings:\s+app -> other$/m);
      expect(d.stdout).toMatch(/^Items restored:\s+4 of 10$/m);
      const none = await cli('restore', 'describe', 'ghost');
      expect(none.code).toBe(1);
      expect(none.stderr.trim()).toBe(`error: restore "ghost" not found in namespace ${ns}`);
    });
  });

  describe('version and connection errors', () => {
    it('shows the client version without any cluster with --client-only', async () => {
      const r = await runCli(['version', '--client-only'], { env: { KUBECONFIG: path.join(tmp, 'absent') } });
      expect(r.code, show(r)).toBe(0);
      const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
      expect(r.stdout).toMatch(new RegExp(`^Client:\\n {2}Version: {2}${pkg.version.replace(/\./g, '\\.')}\\n`));
      const j = JSON.parse((await runCli(['version', '--client-only', '-o', 'json'])).stdout) as { client: { version: string } };
      expect(j.client.version).toBe(pkg.version);
    });

    it('says the server is not running when no ServerStatusRequest is processed in time, and cleans up its request', async () => {
      const r = await cli('version', '--timeout', '2s');
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('Client:');
      expect(r.stderr.trim()).toBe(`error: the Stowage server is not running in namespace ${ns} (no ServerStatusRequest was processed within 2s)`);
      const left = await client.list<ServerStatusRequest>(RESOURCES.ServerStatusRequest, { namespace: ns });
      expect(left.items).toHaveLength(0);
    });

    it('reads the namespace from STOWAGE_NAMESPACE and from -n before the subcommand', async () => {
      const env = await runCli(['backup', 'get', 'done'], { kubeconfig, env: { STOWAGE_NAMESPACE: ns } });
      expect(env.code, show(env)).toBe(0);
      const before = await runCli(['-n', ns, '--kubeconfig', kubeconfig, 'backup', 'get', 'done']);
      expect(before.code, show(before)).toBe(0);
      const other = await runCli(['backup', 'get', 'done'], { kubeconfig, env: { STOWAGE_NAMESPACE: `${ns}-x` } });
      expect(other.stderr.trim()).toBe(`error: backup "done" not found in namespace ${ns}-x`);
    });

    it('names the kubeconfig and the problem when it cannot be loaded; a stack only with --debug', async () => {
      const absent = path.join(tmp, 'absent.kubeconfig');
      const r1 = await runCli(['backup', 'get'], { kubeconfig: absent });
      expect(r1.code).toBe(1);
      expect(r1.stderr.trim()).toBe(`error: cannot load kubeconfig ${absent}: the file does not exist`);
      const broken = path.join(tmp, 'broken.kubeconfig');
      fs.writeFileSync(broken, 'clusters: [\n');
      const r2 = await runCli(['backup', 'get'], { kubeconfig: broken });
      expect(r2.code).toBe(1);
      expect(r2.stderr).toMatch(new RegExp(`^error: cannot load kubeconfig ${broken.replace(/[.]/g, '\\.')}: .+\\n$`));
      const viaEnv = await runCli(['backup', 'get'], { env: { KUBECONFIG: broken } });
      expect(viaEnv.stderr).toMatch(new RegExp(`^error: cannot load kubeconfig ${broken.replace(/[.]/g, '\\.')}: `));
      const debug = await runCli(['backup', 'get', '--debug'], { kubeconfig: broken });
      expect(debug.stderr).toMatch(/\n\s+at /);
    });

    it('says the API server cannot be reached, naming its URL', async () => {
      const port = await new Promise<number>((resolve) => {
        const s = net.createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as net.AddressInfo).port;
          s.close(() => resolve(p));
        });
      });
      const text = fs.readFileSync(kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${port}`);
      const dead = path.join(tmp, 'dead.kubeconfig');
      fs.writeFileSync(dead, text);
      const r = await runCli(['backup', 'get'], { kubeconfig: dead, namespace: ns });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^error: cannot reach the Kubernetes API server at https://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED.*\\n$`));
    });

    it('names the missing permission when RBAC forbids the call', async () => {
      const r = await runCli(['backup', 'get'], { kubeconfig: inject('cluster').userKubeconfigPath, namespace: ns });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        `error: permission denied: backups.stowage.dev is forbidden: User "tester" cannot list resource "backups" in API group "stowage.dev" in the namespace "${ns}"`,
      );
      const create = await runCli(['backup', 'create', 'x'], { kubeconfig: inject('cluster').userKubeconfigPath, namespace: ns });
      expect(create.stderr.trim()).toBe(
        `error: permission denied: backups.stowage.dev is forbidden: User "tester" cannot create resource "backups" in API group "stowage.dev" in the namespace "${ns}"`,
      );
    });
  });
});
