// Client-side encryption through a running server, against the real API server: a location whose
// key-encryption keys are in a Secret (spec.encryption.keySecretRef). An encrypted backup restores
// exactly; no byte the location stores holds a seeded secret value; what the CLI downloads and
// describes is decrypted; key rotation keeps old backups readable while their key is listed and
// fails them clearly once it is not; a tampered tarball (a flipped bit, a dropped chunk, a
// truncation, another backup's chunks) or a wrong key fails the restore with the exact reason and
// creates nothing; backup sync brings an encrypted backup back from its sealed stowage-backup.json,
// and a location that requires encryption does not import an unencrypted one planted in its bucket.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ANNOTATION_SYNCED_FROM, RESOURCES, newBackup, newRestore, type Backup, type BackupStorageLocation, type Restore,
} from '../../src/apis/v1/index.js';
import { CRASH_AT_ENV } from '../../src/controller/run/faults.js';
import { CORE, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { startSuccessor } from '../support/inProcessServer.js';
import { ensureBuilt, runCli, show } from '../cli/helpers.js';
import { installFileKms, livePids, pluginDir, removeTempDirs, sampleProcesses } from '../plugin/support.js';

type Secret = { metadata: { name: string; labels?: Record<string, string> }; data?: Record<string, string>; type?: string };
type Cm = { metadata: { name: string }; data?: Record<string, string> };
const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };

/** Waits until the location is Available as its spec now is (its validation caught up); an Unavailable one fails with its message. */
function locationAvailable(client: DynamicClient, ns: string): Promise<true> {
  return waitUntil('the location validated Available as it now is', async () => {
    const l = await client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
    if (l.status?.observedGeneration !== l.metadata.generation) return undefined;
    if (l.status?.phase === 'Unavailable') throw new Error(`location Unavailable: ${l.status.message ?? ''}`);
    return l.status?.phase === 'Available' ? true : undefined;
  }, 60_000);
}

/** Stops the describe's server and client and removes its location's files. */
async function tearDown(server: RunningServer | undefined, client: DynamicClient | undefined, root: string): Promise<void> {
  await server?.stop();
  client?.close();
  fs.rmSync(root, { recursive: true, force: true });
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('client-side encryption with keys in a Secret', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('enc');
  const source = uniqueName('enc-src');
  const loc = filesystemLocation();
  const dir = (b: string): string => path.join(loc.root, 'backups', 'backups', b);
  const tarball = (b: string): string => path.join(dir(b), `${b}.tar.gz`);
  const k1 = crypto.randomBytes(32);
  const k2 = crypto.randomBytes(32);
  /** Seeded secret values: none may appear in the bucket, in the clear or base64-encoded. */
  const secretValues = Array.from({ length: 4 }, () => `sv-${crypto.randomBytes(12).toString('hex')}`);
  let client: DynamicClient;
  let server: RunningServer;
  const cli = (...args: string[]) => runCli(args, { kubeconfig, namespace: ns, timeoutMs: 60_000 });

  const setKeys = async (data: Record<string, Buffer>): Promise<void> => {
    await client.patch(CORE.secrets, ns, 'kek', { data: null }, 'merge');
    await client.patch(CORE.secrets, ns, 'kek', { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.toString('base64')])) }, 'merge');
  };
  const backup = async (name: string): Promise<Backup> => {
    await client.create(RESOURCES.Backup, ns, newBackup(name, ns, { includedNamespaces: [source] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, name, 90_000);
    expect(b.status?.phase, b.status?.failureReason ?? b.status?.validationErrors?.join('; ')).toBe('Completed');
    return b;
  };
  const restore = async (name: string, backupName: string, target: string): Promise<Restore> => {
    await client.create(RESOURCES.Restore, ns, newRestore(name, ns, { backupName, namespaceMapping: { [source]: target } }));
    return waitFinished<Restore>(client, RESOURCES.Restore, ns, name, 90_000);
  };
  /** What a restore into `target` created: nothing, for a refused one. */
  const createdIn = async (target: string): Promise<string[]> => {
    try {
      const cms = await client.list<Cm>(CM, { namespace: target });
      const secrets = await client.list<Secret>(CORE.secrets, { namespace: target });
      return [...cms.items.map((c) => `configmap/${c.metadata.name}`), ...secrets.items.map((s) => `secret/${s.metadata.name}`)]
        .filter((n) => n !== 'configmap/kube-root-ca.crt');
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  };

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureNamespace(client, ns);
    await ensureNamespace(client, source);
    await client.create(CORE.secrets, ns, { metadata: { name: 'kek' }, data: { k1: k1.toString('base64') } });
    for (const [i, v] of secretValues.entries()) {
      await client.create(CORE.secrets, source, { metadata: { name: `s${i}` }, type: 'Opaque', data: { password: Buffer.from(v).toString('base64') } });
    }
    // Incompressible data, so the tarball spans several 64 KiB chunks.
    for (let i = 0; i < 4; i++) {
      await client.create(CM, source, { metadata: { name: `bulk-${i}` }, data: { blob: crypto.randomBytes(60_000).toString('base64') } });
    }
    loc.spec.encryption = { keySecretRef: { name: 'kek', key: 'k1' } };
    loc.spec.backupSyncPeriod = '2s';
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc });
    await locationAvailable(client, ns);
  }, 180_000);

  afterAll(() => tearDown(server, client, loc.root));

  it('restores an encrypted backup exactly; the bucket holds no secret value; describe and downloads see through it', { timeout: 240_000 }, async () => {
    const b = await backup('b1');
    expect(b.status?.encryption).toMatchObject({ algorithm: 'AES-256-GCM-CHUNKED-v1', keyManager: 'stowage.dev/secret', keyId: 'k1' });

    // Every object the location stores: none holds a seeded value, in the clear or as the Secret's base64.
    const stored = filesUnder(loc.root);
    expect(stored.map((f) => path.basename(f)).sort()).toEqual(expect.arrayContaining(['b1.tar.gz', 'b1-logs.gz', 'stowage-backup.json']));
    for (const f of stored) {
      const bytes = fs.readFileSync(f);
      for (const v of secretValues) {
        expect(bytes.includes(v), `${f} holds a secret value`).toBe(false);
        expect(bytes.includes(Buffer.from(v).toString('base64')), `${f} holds a secret value in base64`).toBe(false);
      }
    }
    const marker = JSON.parse(fs.readFileSync(path.join(dir('b1'), 'stowage-backup.json'), 'utf8')) as Record<string, unknown>;
    expect(marker).toMatchObject({ kind: 'EncryptedBackup', name: 'b1', keyManager: 'stowage.dev/secret', keyId: 'k1' });
    expect(JSON.stringify(marker)).not.toContain(source);

    // The CLI gets plaintext: the tarball it downloads holds the values the bucket does not.
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-enc-'));
    try {
      const file = path.join(tmp, 'b1.tar.gz');
      const dl = await cli('backup', 'download', 'b1', '-o', file);
      expect(dl.code, show(dl)).toBe(0);
      const tar = zlib.gunzipSync(fs.readFileSync(file));
      for (const v of secretValues) expect(tar.includes(Buffer.from(v).toString('base64'))).toBe(true);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
    const logs = await cli('backup', 'logs', 'b1');
    expect(logs.code, show(logs)).toBe(0);
    expect(logs.stdout).toContain('backup completed');
    const described = await cli('backup', 'describe', 'b1');
    expect(described.stdout).toContain('Encryption:');
    expect(described.stdout).toContain('AES-256-GCM-CHUNKED-v1, key "k1" of stowage.dev/secret');
    const verified = await cli('backup', 'verify', 'b1');
    expect(verified.code, show(verified)).toBe(0);

    const target = uniqueName('enc-dst');
    const r = await restore('r1', 'b1', target);
    expect(r.status?.phase, r.status?.failureReason ?? r.status?.validationErrors?.join('; ')).toBe('Completed');
    for (const [i, v] of secretValues.entries()) {
      const s = await client.get<Secret>(CORE.secrets, target, `s${i}`);
      expect(Buffer.from(s.data?.password ?? '', 'base64').toString()).toBe(v);
    }
    for (let i = 0; i < 4; i++) {
      const [a, c] = await Promise.all([client.get<Cm>(CM, source, `bulk-${i}`), client.get<Cm>(CM, target, `bulk-${i}`)]);
      expect(c.data).toEqual(a.data);
    }
    // The restore's own log is sealed too, and the CLI reads it.
    const rlog = await cli('restore', 'logs', 'r1');
    expect(rlog.code, show(rlog)).toBe(0);
    expect(rlog.stdout).toContain('restore completed');
    // Every object but stowage-backup.json's envelope is in the chunked format, the restore's too.
    const sealed = filesUnder(loc.root).filter((f) => path.basename(f) !== 'stowage-backup.json');
    expect(sealed.map((f) => path.relative(loc.root, f))).toEqual(expect.arrayContaining([path.join('backups', 'restores', 'r1', 'restore-r1-logs.gz'), path.join('backups', 'restores', 'r1', 'restore-r1-results.gz')]));
    for (const f of sealed) expect(fs.readFileSync(f).subarray(0, 6).toString('latin1'), f).toBe('STWENC');
  });

  it.for([
    ['a flipped bit', 'flip', /the tarball of backup "t-flip" fails authentication at chunk 1 \(at byte \d+\): it was altered/],
    ['a dropped chunk', 'drop', /the tarball of backup "t-drop" has lost chunks: chunk 1 \(at byte \d+\) holds chunk 2/],
    ['a truncation', 'trunc', /the tarball of backup "t-trunc" is truncated: it ends after chunk \d+ \(at byte \d+\) without its final chunk/],
    ['another backup\'s chunks', 'swap', /the tarball of backup "t-swap" fails authentication at chunk 0 \(at byte 28\): it was altered, it belongs to another backup, or the data key is wrong/],
    ['its manifest deleted', 'nomanifest', /backup t-nomanifest has no manifest in object storage, though Stowage writes one with every finished backup: it was deleted, so the tarball cannot be checked and is not restored/],
  ] as const)('refuses a backup with %s, naming it, and creates nothing', { timeout: 240_000 }, async ([, tag, reason]) => {
    const name = `t-${tag}`;
    await backup(name);
    const file = tarball(name);
    const bytes = fs.readFileSync(file);
    const CHUNK = 64 * 1024 + 16;
    const HEADER = 28;
    expect(bytes.length).toBeGreaterThan(HEADER + 3 * CHUNK);
    if (tag === 'flip') bytes[HEADER + CHUNK + 100] = (bytes[HEADER + CHUNK + 100] ?? 0) ^ 0x01;
    const altered = tag === 'flip' ? bytes
      : tag === 'drop' ? Buffer.concat([bytes.subarray(0, HEADER + CHUNK), bytes.subarray(HEADER + 2 * CHUNK)])
        : tag === 'trunc' ? bytes.subarray(0, HEADER + 2 * CHUNK)
          : fs.readFileSync(tarball('b1'));
    if (tag === 'nomanifest') {
      fs.rmSync(path.join(dir(name), `${name}-manifest.json.gz`));
      const v = await cli('backup', 'verify', name);
      expect(v.code).not.toBe(0);
      expect(v.stderr).toContain(`backup "${name}" has no manifest in object storage: Stowage writes one with every finished backup, so it was deleted`);
    } else fs.writeFileSync(file, altered);
    const target = uniqueName(`enc-${tag}`);
    const r = await restore(`r-${tag}`, name, target);
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toMatch(reason);
    expect(await createdIn(target)).toEqual([]);
  });

  it('rotates keys: an old backup restores while its key is listed, and fails clearly once it is removed or replaced', { timeout: 240_000 }, async () => {
    await backup('old');
    await setKeys({ k1, k2 });
    await client.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { encryption: { keySecretRef: { name: 'kek', key: 'k2' } } } }, 'merge');
    await locationAvailable(client, ns);
    const fresh = await backup('new');
    expect(fresh.status?.encryption?.keyId).toBe('k2');

    const r1 = await restore('r-old-listed', 'old', uniqueName('enc-rot'));
    expect(r1.status?.phase, r1.status?.failureReason).toBe('Completed');

    await setKeys({ k2 });
    const gone = uniqueName('enc-gone');
    const r2 = await restore('r-old-removed', 'old', gone);
    expect(r2.status?.phase).toBe('Failed');
    expect(r2.status?.failureReason).toContain('backup "old" cannot be read: the data key is wrapped with key "k1", which Secret');
    expect(r2.status?.failureReason).toContain('no longer lists (it lists "k2"); put that key back to read this backup');
    expect(await createdIn(gone)).toEqual([]);

    await setKeys({ k1: crypto.randomBytes(32), k2 });
    const wrong = uniqueName('enc-wrong');
    const r3 = await restore('r-old-wrong', 'old', wrong);
    expect(r3.status?.phase).toBe('Failed');
    expect(r3.status?.failureReason).toContain('the data key does not unwrap with key "k1" of Secret');
    expect(await createdIn(wrong)).toEqual([]);
    const r4 = await restore('r-new', 'new', uniqueName('enc-new'));
    expect(r4.status?.phase, r4.status?.failureReason).toBe('Completed');
    // Nothing of a key reaches a status or the server's log.
    for (const k of [k1, k2]) {
      expect(server.output()).not.toContain(k.toString('base64'));
      expect(server.output()).not.toContain(k.toString('hex'));
    }
  });

  it('syncs an encrypted backup back from the bucket, and a location that requires encryption does not import a planted unencrypted one', { timeout: 240_000 }, async () => {
    await setKeys({ k1, k2 });
    const b = await backup('synced');
    await client.delete(RESOURCES.Backup, ns, 'synced');
    const back = await waitUntil('the synced Backup', async () => {
      try {
        const x = await client.get<Backup>(RESOURCES.Backup, ns, 'synced');
        return x.status?.phase !== undefined ? x : undefined;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    }, 60_000, 250);
    expect(back.status?.phase).toBe('Completed');
    expect(back.status?.encryption).toEqual(b.status?.encryption);

    // A plain Stowage backup planted in the bucket, as anyone who can write to it could.
    fs.mkdirSync(dir('planted'), { recursive: true });
    const planted = { ...newBackup('planted', ns, { includedNamespaces: [source] }), status: { phase: 'Completed' } };
    fs.writeFileSync(path.join(dir('planted'), 'stowage-backup.json'), JSON.stringify(planted));
    await client.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { encryption: { required: true } } }, 'merge');
    await server.waitForOutput(/planted.*is not encrypted, and location "default" requires encryption \(spec\.encryption\.required\)/, 60_000);
    await expect(client.get<Backup>(RESOURCES.Backup, ns, 'planted')).rejects.toSatisfy(isNotFound);
  });

  it('refuses to restore an unencrypted backup from a location that requires encryption, before its key or anything else is used', { timeout: 240_000 }, async () => {
    // The planted plain backup, as a Completed Backup resource (marked synced, so no backup runs it): what a
    // Backup made before the location required encryption looks like.
    fs.mkdirSync(dir('plain'), { recursive: true });
    fs.writeFileSync(path.join(dir('plain'), 'stowage-backup.json'), JSON.stringify({ ...newBackup('plain', ns, { includedNamespaces: [source] }), status: { phase: 'Completed' } }));
    await client.patch(RESOURCES.BackupStorageLocation, ns, 'default', { spec: { encryption: { required: true } } }, 'merge');
    const made = newBackup('plain', ns, { includedNamespaces: [source], storageLocation: 'default' });
    made.metadata.annotations = { [ANNOTATION_SYNCED_FROM]: 'default' };
    await client.create(RESOURCES.Backup, ns, made);
    await client.patchStatus(RESOURCES.Backup, ns, 'plain', { status: { phase: 'Completed' } });
    const target = uniqueName('enc-plain');
    const r = await restore('r-plain', 'plain', target);
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toBe('backup "plain" is not encrypted, and location "default" requires encryption (spec.encryption.required), so it is not restored');
    expect(await createdIn(target)).toEqual([]);
  });
});

describe('client-side encryption through a KeyManager plugin (examples/file-kms)', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('enc-kms');
  const source = uniqueName('enc-kms-src');
  const loc = filesystemLocation();
  const LAUNCHER = 'stowage-file-kms-in-server';
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    const plugins = pluginDir({ [LAUNCHER]: installFileKms() });
    await ensureNamespace(client, source);
    for (let i = 0; i < 3; i++) await client.create(CORE.secrets, source, { metadata: { name: `s${i}` }, data: { v: Buffer.from(`kms-${i}`).toString('base64') } });
    loc.spec.encryption = { keyManager: { provider: 'example.com/file-kms', config: { currentKeyId: 'k1', 'key.k1': crypto.randomBytes(32).toString('base64') } } };
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc, args: ['--plugin-dir', plugins.dir, '--client-qps', '20', '--client-burst', '5'] });
    await locationAvailable(client, ns);
  }, 180_000);

  afterAll(async () => {
    await tearDown(server, client, loc.root);
    removeTempDirs();
  });

  it('wraps the data key with the plugin, and a SIGKILLed plugin is restarted to unwrap it for the restore, one process at a time', { timeout: 180_000 }, async () => {
    const sampler = sampleProcesses(LAUNCHER);
    try {
      // Validating the location started the plugin; it is killed as the (throttled) backup starts, when the data key is wrapped.
      const killed: number[] = [];
      const kill = (): void => {
        for (const pid of livePids(LAUNCHER)) {
          process.kill(pid, 'SIGKILL');
          killed.push(pid);
        }
      };
      expect(livePids(LAUNCHER)).toHaveLength(1);
      await client.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [source] }));
      await waitUntil('the backup InProgress', async () => {
        const x = await client.get<Backup>(RESOURCES.Backup, ns, 'b');
        return x.status?.phase !== undefined && x.status.phase !== 'New' ? true : undefined;
      }, 30_000, 10);
      kill();
      const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'b', 90_000);
      expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
      expect(b.status?.encryption).toMatchObject({ keyManager: 'example.com/file-kms', keyId: 'k1' });
      expect(fs.readFileSync(path.join(loc.root, 'backups', 'backups', 'b', 'b.tar.gz')).subarray(0, 6).toString('latin1')).toBe('STWENC');

      // Killed again before the restore: a new process unwraps the key.
      kill();
      expect(killed.length).toBeGreaterThanOrEqual(1);
      await waitUntil('the killed plugins gone', async () => (livePids(LAUNCHER).some((p) => killed.includes(p)) ? undefined : true), 10_000, 50);
      const target = uniqueName('enc-kms-dst');
      await client.create(RESOURCES.Restore, ns, newRestore('r', ns, { backupName: 'b', namespaceMapping: { [source]: target } }));
      const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'r', 90_000);
      expect(r.status?.phase, r.status?.failureReason ?? r.status?.validationErrors?.join('; ')).toBe('Completed');
      for (let i = 0; i < 3; i++) {
        const s = await client.get<Secret>(CORE.secrets, target, `s${i}`);
        expect(Buffer.from(s.data?.v ?? '', 'base64').toString()).toBe(`kms-${i}`);
      }
      expect(livePids(LAUNCHER)).toHaveLength(1);
      expect(livePids(LAUNCHER).some((p) => killed.includes(p))).toBe(false);
      expect(sampler.samples()).toBeGreaterThan(0);
      expect(sampler.max()).toBe(1);
    } finally {
      sampler.stop();
    }
  });
});

describe('a server SIGKILLed mid-backup on an encrypting location', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('enc-crash');
  const source = uniqueName('enc-crash-src');
  const loc = filesystemLocation();
  const servers: Pick<RunningServer, 'stop'>[] = [];
  let client: DynamicClient;

  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    client?.close();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('seals the log its successor salvages, with the data key the dead run recorded, and the CLI reads it', { timeout: 180_000 }, async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureNamespace(client, ns);
    await ensureNamespace(client, source);
    await client.create(CORE.secrets, ns, { metadata: { name: 'kek' }, data: { k1: crypto.randomBytes(32).toString('base64') } });
    for (let i = 0; i < 3; i++) await client.create(CM, source, { metadata: { name: `c${i}` }, data: { v: `crash-${i}` } });
    loc.spec.encryption = { keySecretRef: { name: 'kek', key: 'k1' } };
    // Throttled, so the run's log has lines on disk when the hook kills the server after the tarball.
    const first = await startServer({
      kubeconfigPath: kubeconfig, namespace: ns, location: loc, env: { [CRASH_AT_ENV]: 'after-tarball' }, args: ['--client-qps', '4', '--client-burst', '1'],
    });
    servers.push(first);
    await locationAvailable(client, ns);
    await client.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [source], includedResources: ['configmaps'] }));
    await waitUntil('the server to kill itself', async () => (first.proc.signalCode !== null || first.proc.exitCode !== null ? true : undefined), 90_000);
    expect(first.proc.signalCode).toBe('SIGKILL');
    const recorded = (await client.get<Backup>(RESOURCES.Backup, ns, 'b')).status?.encryption;
    expect(recorded).toMatchObject({ keyManager: 'stowage.dev/secret', keyId: 'k1' });
    expect(recorded?.wrappedKey).toMatch(/^[A-Za-z0-9+/]+=*$/);

    // The successor runs in process and moves its clock past the dead server's lease instead of waiting it out.
    const second = await startSuccessor({ kubeconfigPath: kubeconfig, namespace: ns, scratchDir: first.scratchDir });
    servers.push(second);
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'b', 90_000);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toMatch(/its partial log \(\d+ lines\) was recovered from this server's scratch directory and uploaded/);
    expect(b.status?.encryption, 'the successor keeps the recorded key').toEqual(recorded);
    const logFile = path.join(loc.root, 'backups', 'backups', 'b', 'b-logs.gz');
    expect(fs.readFileSync(logFile).subarray(0, 6).toString('latin1')).toBe('STWENC');
    expect(fs.readFileSync(path.join(loc.root, 'backups', 'backups', 'b', 'b.tar.gz')).subarray(0, 6).toString('latin1')).toBe('STWENC');
    const logs = await runCli(['backup', 'logs', 'b'], { kubeconfig, namespace: ns, timeoutMs: 60_000 });
    expect(logs.code, show(logs)).toBe(0);
    expect(logs.stdout).toContain('backup failed: the Stowage server running this backup stopped before it finished');
    // The lines the dead run wrote, decrypted, then the successor's closing line that counts them.
    const recovered = /its partial log \((\d+) lines\)/.exec(b.status?.failureReason ?? '')?.[1];
    expect(recovered, b.status?.failureReason).toMatch(/^\d+$/);
    // The throttled run has flushed its first lines before the hook fires (crashPoints counts on it too).
    if (Number(recovered) > 0) expect(logs.stdout, logs.stdout).toContain(`starting backup ${ns}/b`);
    expect(logs.stdout, logs.stdout).toContain(`recoveredLines=${recovered ?? ''}`);
  });
});
