// `stowage debug` against a running server: the bundle for a backup and for a restore holds each
// expected file, and no seeded secret value (a Secret in the backup's scope, the credential Secret
// of a location, an access key, credentials in annotations, the kubeconfig's own) appears in any
// file, plain or base64. Also: unknown runs and bad flags, and `--wait`'s plain progress lines
// (rate and time left) when stdout is not a terminal, for a backup and a restore.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as tar from 'tar-stream';
import YAML from 'yaml';
import { RESOURCES, newBackupStorageLocation, newDownloadRequest, newRestore, type DownloadRequest } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, createLinkKey, formatRequester, sealContext, type Requester } from '../../src/auth/index.js';
import { CORE, loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureAppNamespace, filesystemLocation, s3LocationSpec, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type CliResult, type RunOptions } from './helpers.js';

const random = (n: number): string => crypto.randomBytes(n).toString('hex');

// As the API server authenticates the test control plane's admin token; alice has no rights in the server's namespace.
const ADMIN: Requester = { username: 'admin', uid: 'admin', groups: ['system:masters', 'system:authenticated'] };
const ALICE: Requester = { username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] };

/** Every file of a tar.gz, by path. */
async function readBundle(file: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const extract = tar.extract();
  fs.createReadStream(file).pipe(zlib.createGunzip()).pipe(extract);
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const c of entry) chunks.push(c as Buffer);
    if (entry.header.type === 'file') files.set(entry.header.name, Buffer.concat(chunks).toString('utf8'));
  }
  return files;
}

/** Where a seeded value shows up in a file: as is, in base64 (padded or not, url-safe), or inside any base64 run decoded. */
function leaks(content: string, seed: string): string | undefined {
  const b64 = Buffer.from(seed).toString('base64');
  for (const form of [seed, b64, b64.replace(/=+$/, ''), Buffer.from(seed).toString('base64url')]) {
    if (content.includes(form)) return `contains ${JSON.stringify(form)}`;
  }
  for (const run of content.match(/[A-Za-z0-9+/_-]{12,}={0,2}/g) ?? []) {
    if (Buffer.from(run, 'base64').toString('latin1').includes(seed)) return `contains base64 ${run.slice(0, 40)}... of it`;
  }
  return undefined;
}

describe('stowage debug with a running server', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const s3 = inject('s3');
  const ns = uniqueName('cli-dbg');
  const app = uniqueName('cli-dbgapp');
  const copy = uniqueName('cli-dbgcopy');
  const loc = filesystemLocation();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-cli-debug-'));
  const seeds = {
    appPassword: `pw-${random(12)}`,
    appToken: `tok-${random(12)}`,
    accessKey: `AKIA${crypto.randomBytes(8).toString('hex').toUpperCase()}`,
    cloudSecret: random(20),
    annotationToken: `at-${random(12)}`,
    annotationKey: `ak-${random(12)}`,
  };
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;
  let backupWait: CliResult;
  let restoreWait: CliResult;
  const cli = (...args: string[]) => runCli(args, { ...opts, cwd: tmp, timeoutMs: 120_000 });

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureAppNamespace(client, app, 60);
    // In the backup's scope: its data is in the backup's tarball, never in the bundle.
    await client.create(CORE.secrets, app, { metadata: { name: 'db-creds' }, stringData: { password: seeds.appPassword, token: seeds.appToken } });
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc });
    // A second location whose credential Secret holds an access key: it cannot validate (no such
    // bucket), so its status and the server log speak of it.
    await client.create(CORE.secrets, ns, {
      metadata: { name: 'seeded-cloud' },
      stringData: { cloud: `[default]\naws_access_key_id=${seeds.accessKey}\naws_secret_access_key=${seeds.cloudSecret}\n` },
    });
    const spec = { ...s3LocationSpec(s3, { bucket: `no-such-${random(3)}`, prefix: 'p', secret: 'seeded-cloud', validationFrequency: '10s' }), default: false };
    await client.create(RESOURCES.BackupStorageLocation, ns, newBackupStorageLocation('seeded', ns, spec));
    opts = { kubeconfig, namespace: ns };
    backupWait = await cli('backup', 'create', 'b', '--include-namespaces', app, '--wait');
    expect(backupWait.code, show(backupWait)).toBe(0);
    // Credentials a user put where they do not belong: annotations shown by describe and the object.
    await client.patch(RESOURCES.Backup, ns, 'b', {
      metadata: { annotations: { 'example.com/api-token': seeds.annotationToken, 'example.com/note': `aws_secret_access_key=${seeds.annotationKey}` } },
    }, 'merge');
    restoreWait = await cli('restore', 'create', 'r', '--from-backup', 'b', '--namespace-mappings', `${app}:${copy}`, '--wait');
    expect(restoreWait.code, show(restoreWait)).toBe(0);
    await waitUntil('location "seeded" validated', async () => {
      const l = await client.get<{ status?: { phase?: string } }>(RESOURCES.BackupStorageLocation, ns, 'seeded');
      return l.status?.phase === 'Unavailable' ? true : undefined;
    }, 90_000);
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  function kubeconfigCredentials(): string[] {
    const user = loadKubeConfig(kubeconfig).getCurrentUser();
    return [user?.token, user?.password, user?.keyData, user?.keyData === undefined ? undefined : Buffer.from(user.keyData, 'base64').toString('utf8')]
      .filter((v): v is string => typeof v === 'string' && v.length >= 8);
  }

  function expectNoSeed(files: Map<string, string>): void {
    const all = [...Object.values(seeds), ...kubeconfigCredentials()];
    expect(all.length).toBeGreaterThanOrEqual(Object.keys(seeds).length + 1);
    for (const [name, content] of files) {
      for (const seed of all) expect(leaks(content, seed), `${name} holds a seeded secret`).toBeUndefined();
    }
  }

  it('prints plain progress lines for backup and restore --wait when stdout is not a terminal', () => {
    for (const [r, noun] of [[backupWait, 'items backed up'], [restoreWait, 'items restored']] as const) {
      expect(r.stdout).not.toContain('\r');
      expect(r.stdout).not.toContain('\u001b');
      expect(r.stdout).toMatch(new RegExp(`^Completed: (\\d+)/\\1 ${noun} \\(100%\\)$`, 'm'));
      // Every progress line is a plain one: phase, counts, and rate and time left once measured.
      const progress = r.stdout.split('\n').filter((l) => /^(New|InProgress|Completed):/.test(l));
      for (const l of progress) expect(l).toMatch(new RegExp(`^\\w+: \\d+(/\\d+)? ${noun}( \\(\\d+%\\))?(, [\\d.]+ items/s(, ETA \\d+[smh]\\S*)?)?$`));
    }
  });

  it('writes a bundle for a backup with every expected file, and no seeded secret anywhere', async () => {
    const r = await cli('debug', '--backup', 'b', '--output', 'b.tar.gz');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/Debug bundle written to .*b\.tar\.gz \(9 files, /);
    expect(r.stderr).toBe('');
    const files = await readBundle(path.join(tmp, 'b.tar.gz'));
    expect([...files.keys()].sort()).toEqual([
      'b/README.txt', 'b/backup/b/backup.yaml', 'b/backup/b/describe.txt', 'b/backup/b/log.txt', 'b/backup/b/results.json',
      'b/crds.yaml', 'b/locations.yaml', 'b/server.log', 'b/version.yaml',
    ].sort());
    const f = (n: string): string => files.get(`b/${n}`) ?? '';
    expect(f('README.txt')).toContain('Everything asked for was gathered.');
    expect(f('README.txt')).toMatch(/Scrubbed: the values of \d+ Secrets in namespaces /);
    const versions = YAML.parse(f('version.yaml')) as { client: { version: string }; server: { version: string; namespace: string; plugins: { name: string }[] } };
    expect(versions.server.namespace).toBe(ns);
    expect(versions.server.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(versions.server.plugins.map((p) => p.name)).toContain('stowage.dev/filesystem');
    // The tail the server kept: its start-up lines and the backup's own lines, mirrored to it.
    expect(f('server.log')).toMatch(/became the leader/);
    expect(f('server.log')).toContain('backup=');
    const crds = YAML.parse(f('crds.yaml')) as { expected: { name: string; installed: boolean; installedVersions: { name: string; schema: string }[] }[]; unexpected: string[] };
    const backups = crds.expected.find((c) => c.name === 'backups.stowage.dev');
    expect(backups?.installed).toBe(true);
    expect(backups?.installedVersions).toEqual([{ name: 'v1', served: true, storage: true, schema: 'same as this CLI' }]);
    expect(crds.unexpected).toEqual([]);
    const locations = YAML.parse(f('locations.yaml')) as { items: { metadata: { name: string }; spec: { credential?: { name: string } }; status?: { phase?: string } }[] };
    expect(locations.items.map((l) => [l.metadata.name, l.status?.phase])).toEqual([['default', 'Available'], ['seeded', 'Unavailable']]);
    // A credential Secret is named, never its content.
    expect(locations.items[1]?.spec.credential).toEqual({ name: 'seeded-cloud', key: 'cloud' });
    expect(f('backup/b/describe.txt')).toMatch(/^Phase:\s+Completed$/m);
    expect(f('backup/b/describe.txt')).toMatch(/^Resource List:\n/m);
    expect(f('backup/b/describe.txt')).toContain('example.com/api-token=[REDACTED]');
    expect(f('backup/b/backup.yaml')).toMatch(/example\.com\/api-token: "?\[REDACTED\]"?/);
    expect(f('backup/b/log.txt')).toMatch(/info +/);
    const results = JSON.parse(f('backup/b/results.json')) as { resources?: { groupResource: string }[] };
    expect(results.resources?.map((x) => x.groupResource)).toContain('secrets');
    expectNoSeed(files);
  });

  it('writes a bundle for a restore', async () => {
    const r = await cli('debug', '--restore', 'r', '--output', 'r.tar.gz');
    expect(r.code, show(r)).toBe(0);
    const files = await readBundle(path.join(tmp, 'r.tar.gz'));
    expect([...files.keys()].sort()).toEqual([
      'r/README.txt', 'r/crds.yaml', 'r/locations.yaml', 'r/restore/r/describe.txt', 'r/restore/r/log.txt', 'r/restore/r/restore.yaml',
      'r/restore/r/results.json', 'r/server.log', 'r/version.yaml',
    ].sort());
    expect(files.get('r/restore/r/describe.txt')).toMatch(/^Phase:\s+Completed$/m);
    expect(files.get('r/restore/r/describe.txt')).toContain(`secrets ${copy}/db-creds`);
    expect(files.get('r/README.txt')).toContain('Asked for:  restore "r"');
    expectNoSeed(files);
  });

  it('names what it could not gather (a restore that failed validation has no log nor results) and writes the rest', async () => {
    await client.create(RESOURCES.Restore, ns, newRestore('broken', ns, { backupName: 'missing-backup' }));
    await waitUntil('restore "broken" failed validation', async () => {
      const r = await client.get<{ status?: { phase?: string } }>(RESOURCES.Restore, ns, 'broken');
      return r.status?.phase === 'FailedValidation' ? true : undefined;
    });
    const r = await cli('debug', '--restore', 'broken', '--output', 'broken.tar.gz');
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toBe(
      'warning: not gathered: the log of restore "broken": the restore is FailedValidation, so it has no log\n' +
      'warning: not gathered: the results of restore "broken": the restore is FailedValidation, so it has no results yet\n',
    );
    const files = await readBundle(path.join(tmp, 'broken.tar.gz'));
    expect([...files.keys()].sort()).toEqual(['broken/README.txt', 'broken/crds.yaml', 'broken/locations.yaml', 'broken/restore/broken/describe.txt',
      'broken/restore/broken/restore.yaml', 'broken/server.log', 'broken/version.yaml']);
    expect(files.get('broken/README.txt')).toContain('Not gathered:\n  - the log of restore "broken": the restore is FailedValidation, so it has no log\n');
    expect(files.get('broken/restore/broken/describe.txt')).toContain('missing-backup');
    expectNoSeed(files);
  });

  /** A ServerLog DownloadRequest created by admin with `who`'s requester stamp (admin may impersonate, so the webhook lets it). */
  async function serverLogRequest(who: Requester, name = ns): Promise<{ url?: string; message?: string }> {
    const req = newDownloadRequest(ns, { kind: 'ServerLog', name });
    const key = createLinkKey();
    req.spec.publicKey = key.publicKey;
    req.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester(who) };
    const created = await client.create<DownloadRequest>(RESOURCES.DownloadRequest, ns, req);
    const dr = await waitUntil('the ServerLog request answered', async () => {
      const d = await client.get<DownloadRequest>(RESOURCES.DownloadRequest, ns, created.metadata.name);
      return d.status?.phase === 'Processed' ? d : undefined;
    }, 30_000);
    if (dr.status?.sealedURL === undefined) return { message: dr.status?.message ?? '' };
    const url = key.open(dr.status.sealedURL, sealContext(created));
    if (typeof url !== 'string') throw new Error(url.error);
    return { url };
  }

  it('serves the server log tail only to a requester who may get pods/log in the server\'s namespace, and only for its own namespace', async () => {
    const admin = await serverLogRequest(ADMIN);
    expect(admin.url).toMatch(/\/download\//);
    const res = await fetch(admin.url ?? '');
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/became the leader/);
    const alice = await serverLogRequest(ALICE);
    expect(alice.message).toBe(`alice may not read the server's log: that takes get pods/log in namespace ${ns} (what \`kubectl logs\` of the server pod takes)`);
    const other = await serverLogRequest(ADMIN, 'kube-system');
    expect(other.message).toBe(`a ServerLog target names the namespace of the server whose log it reads: this DownloadRequest is in namespace ${ns}, and its target names "kube-system"`);
  });

  it('refuses an unknown backup or restore with exit 1 and a bad name or flag with exit 2, writing nothing', async () => {
    const unknown = await cli('debug', '--backup', 'nope', '--output', 'x.tar.gz');
    expect(unknown.code, show(unknown)).toBe(1);
    expect(unknown.stderr).toBe(`error: backup "nope" not found in namespace ${ns}\n`);
    const unknownRestore = await cli('debug', '--restore', 'nope', '--output', 'x.tar.gz');
    expect(unknownRestore.code, show(unknownRestore)).toBe(1);
    expect(unknownRestore.stderr).toBe(`error: restore "nope" not found in namespace ${ns}\n`);
    expect(fs.existsSync(path.join(tmp, 'x.tar.gz'))).toBe(false);
    const bad = await cli('debug', '--backup', 'Bad_Name');
    expect(bad.code, show(bad)).toBe(2);
    expect(bad.stderr).toMatch(/^error: "Bad_Name" is not a valid backup name/);
    const flag = await cli('debug', '--timeout', 'soon');
    expect(flag.code, show(flag)).toBe(2);
    const exists = await cli('debug', '--output', 'b.tar.gz');
    expect(exists.code, show(exists)).toBe(1);
    expect(exists.stderr).toMatch(/b\.tar\.gz already exists; use --force to overwrite it/);
  });
});
