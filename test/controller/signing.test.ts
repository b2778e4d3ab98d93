// Signed manifests through a running server, against the real API server: locations that sign
// with an HMAC key or an Ed25519 private key in a Secret (spec.signing.keySecretRef). A signed
// backup restores, verifies and shows its signature; a forged manifest (tarball and a matching
// manifest replaced) and a deleted manifest fail verify and the restore with the exact reason and
// create nothing; backup sync imports no planted stowage-backup.json (unsigned, relabelled, or
// naming another location); a restore from a schedule does not pick a backup whose schedule label
// was synced unverified; and a second cluster's location holding only the Ed25519 public key syncs,
// verifies and restores a backup signed elsewhere but refuses to make backups.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  LABEL_SCHEDULE_NAME, RESOURCES, newBackup, newBackupStorageLocation, newRestore, type Backup, type BackupStorageLocation, type Restore,
} from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show } from '../cli/helpers.js';

type Cm = { metadata: { name: string }; data?: Record<string, string> };
const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const BSLS = RESOURCES.BackupStorageLocation;

function locationAvailable(client: DynamicClient, ns: string, name: string): Promise<true> {
  return waitUntil(`location ${name} validated Available as it now is`, async () => {
    const l = await client.get<BackupStorageLocation>(BSLS, ns, name);
    if (l.status?.observedGeneration !== l.metadata.generation) return undefined;
    if (l.status?.phase === 'Unavailable') throw new Error(`location ${name} Unavailable: ${l.status.message ?? ''}`);
    return l.status?.phase === 'Available' ? true : undefined;
  }, 60_000);
}

const b64 = (v: string | Buffer): string => Buffer.from(v).toString('base64');

describe('signed manifests', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('sig');
  const drNs = uniqueName('sig-dr');
  const source = uniqueName('sig-src');
  const hmacLoc = filesystemLocation('hmac');
  const edLoc = filesystemLocation('ed');
  const plainLoc = filesystemLocation('plain');
  const dirOf = (root: string, b: string): string => path.join(root, 'backups', 'backups', b);
  const hmacKey = crypto.randomBytes(32);
  const ed = crypto.generateKeyPairSync('ed25519');
  const privatePem = ed.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicPem = ed.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  let client: DynamicClient;
  let server: RunningServer;
  let drServer: RunningServer | undefined;
  const cli = (...args: string[]) => runCli(args, { kubeconfig, namespace: ns, timeoutMs: 60_000 });

  const backup = async (name: string, location: string, labels?: Record<string, string>, namespace = ns): Promise<Backup> => {
    await client.create(RESOURCES.Backup, namespace, newBackup(name, namespace, { includedNamespaces: [source], storageLocation: location }, labels));
    return waitFinished<Backup>(client, RESOURCES.Backup, namespace, name, 90_000);
  };
  const completed = async (name: string, location: string, labels?: Record<string, string>): Promise<Backup> => {
    const b = await backup(name, location, labels);
    expect(b.status?.phase, b.status?.failureReason ?? b.status?.validationErrors?.join('; ')).toBe('Completed');
    return b;
  };
  const restore = async (name: string, spec: { backupName?: string; scheduleName?: string }, target: string, namespace = ns): Promise<Restore> => {
    await client.create(RESOURCES.Restore, namespace, newRestore(name, namespace, { ...spec, namespaceMapping: { [source]: target } }));
    return waitFinished<Restore>(client, RESOURCES.Restore, namespace, name, 90_000);
  };
  const createdIn = async (target: string): Promise<string[]> => {
    try {
      return (await client.list<Cm>(CM, { namespace: target })).items.map((c) => c.metadata.name).filter((n) => n !== 'kube-root-ca.crt');
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  };
  const absent = async (namespace: string, name: string): Promise<void> => {
    await expect(client.get<Backup>(RESOURCES.Backup, namespace, name)).rejects.toSatisfy(isNotFound);
  };
  /** Writes a stowage-backup.json into a location's bucket, as anyone who can write to it could. */
  const plant = (root: string, name: string, obj: unknown): void => {
    fs.mkdirSync(dirOf(root, name), { recursive: true });
    fs.writeFileSync(path.join(dirOf(root, name), 'stowage-backup.json'), JSON.stringify(obj));
  };

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureNamespace(client, ns);
    await ensureNamespace(client, source);
    await client.create(CORE.secrets, ns, { metadata: { name: 'signing' }, data: { hmac: b64(hmacKey), ed: b64(privatePem) } });
    for (let i = 0; i < 3; i++) await client.create(CM, source, { metadata: { name: `c${i}` }, data: { v: `value-${i}` } });
    hmacLoc.spec.signing = { keySecretRef: { name: 'signing', key: 'hmac' } };
    hmacLoc.spec.backupSyncPeriod = '2s';
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: hmacLoc });
    await client.create(BSLS, ns, newBackupStorageLocation('ed', ns, { ...edLoc.spec, default: false, signing: { keySecretRef: { name: 'signing', key: 'ed' } } }));
    await client.create(BSLS, ns, newBackupStorageLocation('plain', ns, { ...plainLoc.spec, default: false, backupSyncPeriod: '2s', signing: { disabled: true } }));
    for (const l of ['hmac', 'ed', 'plain']) await locationAvailable(client, ns, l);
  }, 180_000);

  afterAll(async () => {
    await drServer?.stop();
    await server?.stop();
    client?.close();
    for (const l of [hmacLoc, edLoc, plainLoc]) fs.rmSync(l.root, { recursive: true, force: true });
  });

  it.for([
    ['HMAC-SHA256', 'hmac', 'h1'],
    ['Ed25519', 'ed', 'e1'],
  ] as const)('signs a %s backup: it restores, verifies, and describe shows the signature', { timeout: 240_000 }, async ([algorithm, location, name]) => {
    const b = await completed(name, location);
    const keyId = algorithm === 'Ed25519' ? expect.stringMatching(/^ed25519:[0-9a-f]{32}$/) : 'hmac';
    expect(b.status?.signature).toEqual({ algorithm, keyId });
    const root = location === 'hmac' ? hmacLoc.root : edLoc.root;
    const file = JSON.parse(fs.readFileSync(path.join(dirOf(root, name), `${name}-signature.json`), 'utf8')) as Record<string, unknown>;
    expect(file).toMatchObject({ kind: 'StowageBackupSignature', algorithm, statement: { backup: name, location, phase: 'Completed' } });
    // stowage-backup.json records the signature and names the location.
    const marker = JSON.parse(fs.readFileSync(path.join(dirOf(root, name), 'stowage-backup.json'), 'utf8')) as Backup;
    expect(marker.status?.signature).toEqual(b.status?.signature);
    expect(marker.spec.storageLocation).toBe(location);

    const described = await cli('backup', 'describe', name);
    expect(described.code, show(described)).toBe(0);
    expect(described.stdout).toMatch(new RegExp(`^Signature: +${algorithm}, key "${algorithm === 'Ed25519' ? 'ed25519:[0-9a-f]{32}' : 'hmac'}"$`, 'm'));
    const verified = await cli('backup', 'verify', name);
    expect(verified.code, show(verified)).toBe(0);
    expect(verified.stdout).toContain(`Backup "${name}" is intact`);

    const target = uniqueName(`sig-${location}`);
    const r = await restore(`r-${name}`, { backupName: name }, target);
    expect(r.status?.phase, r.status?.failureReason ?? r.status?.validationErrors?.join('; ')).toBe('Completed');
    expect((await createdIn(target)).sort()).toEqual(['c0', 'c1', 'c2']);
    // The HMAC key never leaves the server: not in the bucket, not in its log.
    for (const f of fs.readdirSync(dirOf(root, name))) expect(fs.readFileSync(path.join(dirOf(root, name), f)).includes(hmacKey)).toBe(false);
    expect(server.output()).not.toContain(b64(hmacKey));
    expect(server.output()).not.toContain('PRIVATE KEY');
  });

  it('refuses a forged manifest (tarball replaced, matching manifest written) in verify and restore, and creates nothing', { timeout: 240_000 }, async () => {
    await completed('forged', 'hmac');
    // The attacker's version: the namespace with an extra object, its tarball and manifest moved in.
    await client.create(CM, source, { metadata: { name: 'evil' }, data: { v: 'planted' } });
    try {
      await completed('evil-src', 'hmac');
    } finally {
      await client.delete(CM, source, 'evil');
    }
    for (const suffix of ['.tar.gz', '-manifest.json.gz']) {
      fs.copyFileSync(path.join(dirOf(hmacLoc.root, 'evil-src'), `evil-src${suffix}`), path.join(dirOf(hmacLoc.root, 'forged'), `forged${suffix}`));
    }
    const reason = /the manifest of backup "forged" is not the one signed: its SHA-256 is [0-9a-f]{64}, the signature says [0-9a-f]{64} \(it was replaced after the backup was made\)/;
    const v = await cli('backup', 'verify', 'forged');
    expect(v.code, show(v)).not.toBe(0);
    expect(v.stderr).toMatch(reason);
    expect(v.stderr).toContain('the signature of backup "forged" does not hold');
    const target = uniqueName('sig-forged');
    const r = await restore('r-forged', { backupName: 'forged' }, target);
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toMatch(reason);
    expect(await createdIn(target)).toEqual([]);
  });

  it('refuses a backup whose manifest was deleted, in verify and restore', { timeout: 240_000 }, async () => {
    await completed('nomanifest', 'hmac');
    fs.rmSync(path.join(dirOf(hmacLoc.root, 'nomanifest'), 'nomanifest-manifest.json.gz'));
    const reason = 'backup "nomanifest" has no manifest (it was deleted), and location "hmac" signs its backups (spec.signing): the backup cannot be verified';
    const v = await cli('backup', 'verify', 'nomanifest');
    expect(v.code, show(v)).not.toBe(0);
    expect(v.stderr).toContain(reason);
    const target = uniqueName('sig-nomani');
    const r = await restore('r-nomanifest', { backupName: 'nomanifest' }, target);
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toContain(reason);
    expect(await createdIn(target)).toEqual([]);
  });

  it('does not sync a planted stowage-backup.json: unsigned, relabelled after signing, or naming another location', { timeout: 240_000 }, async () => {
    const planted = (name: string, location: string, labels?: Record<string, string>) => ({
      ...newBackup(name, ns, { includedNamespaces: [source], storageLocation: location }, labels), status: { phase: 'Completed', startTimestamp: new Date().toISOString() },
    });
    plant(hmacLoc.root, 'unsigned', planted('unsigned', 'hmac'));
    await server.waitForOutput(/backup sync of location hmac: backup unsigned: backup "unsigned" has no signature \(backups\/unsigned\/unsigned-signature\.json is missing\), and location "hmac" signs its backups/, 60_000);
    await absent(ns, 'unsigned');

    // A signed backup whose stowage-backup.json was given a schedule label afterwards.
    await completed('relabel', 'hmac');
    await client.delete(RESOURCES.Backup, ns, 'relabel');
    const file = path.join(dirOf(hmacLoc.root, 'relabel'), 'stowage-backup.json');
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Backup;
    fs.writeFileSync(file, JSON.stringify({ ...stored, metadata: { ...stored.metadata, labels: { [LABEL_SCHEDULE_NAME]: 'nightly' } } }));
    await server.waitForOutput(/backup sync of location hmac: backup relabel: its stowage-backup\.json's labels are not the ones signed: it was altered after the backup was made/, 60_000);
    await absent(ns, 'relabel');

    // On a location that does not sign: a marker naming another location is refused, one naming it is imported.
    plant(plainLoc.root, 'foreign', planted('foreign', 'elsewhere'));
    plant(plainLoc.root, 'own', planted('own', 'plain'));
    await server.waitForOutput(/backup sync of location plain: backup foreign: its stowage-backup\.json names location "elsewhere", not "plain"/, 60_000);
    await waitUntil('own imported', async () => (await client.get<Backup>(RESOURCES.Backup, ns, 'own').catch(() => undefined))?.status?.phase, 60_000, 250);
    await absent(ns, 'foreign');
  });

  it('a restore from a schedule does not pick a backup whose schedule label was synced unverified from a location that now signs', { timeout: 240_000 }, async () => {
    await completed('nightly-1', 'hmac', { [LABEL_SCHEDULE_NAME]: 'nightly' });
    // Synced while "plain" did not sign: newer, Completed, labelled for the schedule.
    const later = new Date(Date.now() + 3_600_000).toISOString();
    plant(plainLoc.root, 'nightly-planted', {
      ...newBackup('nightly-planted', ns, { includedNamespaces: [source], storageLocation: 'plain' }, { [LABEL_SCHEDULE_NAME]: 'nightly' }),
      status: { phase: 'Completed', startTimestamp: later },
    });
    const synced = await waitUntil('nightly-planted synced', async () => {
      const b = await client.get<Backup>(RESOURCES.Backup, ns, 'nightly-planted').catch(() => undefined);
      return b?.status?.phase !== undefined ? b : undefined;
    }, 60_000, 250);
    expect(synced.status?.signature).toBeUndefined();
    // "plain" now signs: the label it synced unverified steers nothing.
    await client.patch(BSLS, ns, 'plain', { spec: { signing: { disabled: null, keySecretRef: { name: 'signing', key: 'hmac' } } } }, 'merge');
    await locationAvailable(client, ns, 'plain');
    const target = uniqueName('sig-sched');
    const r = await restore('r-nightly', { scheduleName: 'nightly' }, target);
    expect(r.status?.phase, r.status?.failureReason ?? r.status?.validationErrors?.join('; ')).toBe('Completed');
    expect(r.spec.backupName).toBe('nightly-1');
    expect((await createdIn(target)).sort()).toEqual(['c0', 'c1', 'c2']);
    // Named, the unverified backup is refused at the signature.
    const named = await restore('r-planted', { backupName: 'nightly-planted' }, uniqueName('sig-planted'));
    expect(named.status?.phase).toBe('Failed');
    expect(named.status?.failureReason).toContain('backup "nightly-planted" has no signature');
  });

  it('a location holding only the Ed25519 public key syncs, verifies and restores a backup signed elsewhere, and makes no backups', { timeout: 300_000 }, async () => {
    await ensureNamespace(client, drNs);
    await client.create(CORE.secrets, drNs, { metadata: { name: 'verify-only' }, data: { public: b64(publicPem) } });
    drServer = await startServer({
      kubeconfigPath: kubeconfig, namespace: drNs,
      location: { name: 'dr', spec: { ...edLoc.spec, backupSyncPeriod: '2s', signing: { keySecretRef: { name: 'verify-only', key: 'public' } } } },
    });
    await locationAvailable(client, drNs, 'dr');
    const imported = await waitUntil('e1 synced into the DR namespace', async () => {
      const b = await client.get<Backup>(RESOURCES.Backup, drNs, 'e1').catch(() => undefined);
      return b?.status?.phase !== undefined ? b : undefined;
    }, 90_000, 250);
    const original = await client.get<Backup>(RESOURCES.Backup, ns, 'e1');
    expect(imported.spec.storageLocation).toBe('dr');
    expect(imported.status?.signature).toEqual(original.status?.signature);
    const v = await runCli(['backup', 'verify', 'e1'], { kubeconfig, namespace: drNs, timeoutMs: 60_000 });
    expect(v.code, show(v)).toBe(0);
    const target = uniqueName('sig-dr-dst');
    const r = await restore('r-dr', { backupName: 'e1' }, target, drNs);
    expect(r.status?.phase, r.status?.failureReason ?? r.status?.validationErrors?.join('; ')).toBe('Completed');
    expect((await createdIn(target)).sort()).toEqual(['c0', 'c1', 'c2']);

    const refused = await backup('dr-new', 'dr', undefined, drNs);
    expect(refused.status?.phase).toBe('FailedValidation');
    expect(refused.status?.validationErrors).toEqual([
      expect.stringMatching(/^backup storage location "dr" holds only the Ed25519 public key "ed25519:[0-9a-f]{32}" \(Secret entry "public"\): it verifies and restores backups signed elsewhere but cannot sign new ones, so backups cannot be written to it$/),
    ]);
    expect(fs.existsSync(dirOf(edLoc.root, 'dr-new'))).toBe(false);
  });
});
