// Tamper-evident by default (issue 31, item 7), through `stowage server` and the real API server:
// a Stowage location with no spec.signing is Unavailable, naming both fixes, in its status, an
// Event and the server log, and a backup to it is refused with that reason. spec.signing.disabled:
// true is the explicit opt-out: Available, and the server log, its Available event and
// `backup-location describe` name it. A keyed location signs. A Velero location (spec.velero, or
// Velero's layout detected in the bucket) needs no spec.signing: Velero signs nothing. A location
// made before signing was the default (its spec.signing removed here) turns Unavailable, refusing
// a restore with that reason but losing none of its Backups, and `disabled: true` brings it and
// them back.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  RESOURCES, newBackup, newBackupStorageLocation, newRestore, type Backup, type BackupStorageLocation, type BackupStorageLocationSpec, type Restore,
} from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { veleroBackupJson, veleroTarball } from '../fixtures/velero/bucket.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show } from '../cli/helpers.js';

const BSLS = RESOURCES.BackupStorageLocation;
const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true } as const;
type Event = { reason?: string; message?: string; type?: string; involvedObject?: { kind?: string; name?: string } };

/** What the server says of a Stowage location in namespace `ns` that has no spec.signing. */
const missingSigning = (ns: string, name: string): string =>
  `spec.signing is missing, and a Stowage location signs its backups unless told otherwise: set spec.signing.keySecretRef to an entry of a Secret in namespace ${ns} ` +
  `holding the signing key (a new one: kubectl -n ${ns} create secret generic ${name}-signing --from-literal=hmac="$(openssl rand -base64 48)", key hmac), ` +
  'or spec.signing.disabled: true to opt out (its backups are then not tamper-evident; a location made before signing was the default keeps its unsigned backups restorable this way, docs/install.md "Upgrading")';

describe('a Stowage location signs, or opts out explicitly', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('signreq');
  const source = uniqueName('signreq-src');
  const locs = {
    keyed: filesystemLocation('keyed'),
    bare: filesystemLocation('bare'),
    optout: filesystemLocation('optout'),
    legacy: filesystemLocation('legacy'),
    veleroMarked: filesystemLocation('velero-marked'),
    veleroFound: filesystemLocation('velero-found'),
  };
  let client: DynamicClient;
  let server: RunningServer;
  const cli = (...args: string[]) => runCli(args, { kubeconfig, namespace: ns, timeoutMs: 60_000 });

  /** The location once its status describes its current spec with `phase` (a wrong final phase fails at once, with its message). */
  const validated = (name: string, phase: 'Available' | 'Unavailable'): Promise<BackupStorageLocation> =>
    waitUntil(`location ${name} ${phase} for its current spec`, async () => {
      const l = await client.get<BackupStorageLocation>(BSLS, ns, name);
      if (l.status?.observedGeneration !== l.metadata.generation || l.status?.phase === undefined) return undefined;
      if (l.status.phase !== phase) throw new Error(`location ${name} is ${l.status.phase}, not ${phase}: ${l.status.message ?? ''}`);
      return l;
    }, 60_000);
  /** Creates the location with no spec.signing but what `extra` gives (the helpers' locations opt out explicitly). */
  const create = (name: string, spec: BackupStorageLocationSpec, extra: Partial<BackupStorageLocationSpec> = {}): Promise<unknown> => {
    const { signing: _, ...rest } = spec;
    return client.create(BSLS, ns, newBackupStorageLocation(name, ns, { ...rest, default: false, ...extra }));
  };
  const backup = async (name: string, location: string): Promise<Backup> => {
    await client.create(RESOURCES.Backup, ns, newBackup(name, ns, { includedNamespaces: [source], includedResources: ['configmaps'], storageLocation: location }));
    return waitFinished<Backup>(client, RESOURCES.Backup, ns, name, 90_000);
  };
  const backupDir = (root: string, name: string): string => path.join(root, 'backups', 'backups', name);

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    for (const n of [ns, source]) await ensureNamespace(client, n);
    await client.create(CORE.configMaps, source, { metadata: { name: 'settings' }, data: { color: 'blue' } });
    await client.create(CORE.secrets, ns, { metadata: { name: 'signing' }, data: { hmac: crypto.randomBytes(32).toString('base64') } });
    // Velero's layout, as Velero leaves a bucket: a backup folder with its velero-backup.json.
    const found = backupDir(locs.veleroFound.root, 'nightly');
    const items = [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: source }, data: { color: 'green' } }];
    fs.mkdirSync(found, { recursive: true });
    fs.writeFileSync(path.join(found, 'nightly.tar.gz'), await veleroTarball(items));
    fs.writeFileSync(path.join(found, 'velero-backup.json'), JSON.stringify(veleroBackupJson({ name: 'nightly', items }, new Date())));
    server = await startServer({
      kubeconfigPath: kubeconfig, namespace: ns,
      location: { name: 'keyed', spec: { ...locs.keyed.spec, signing: { keySecretRef: { name: 'signing', key: 'hmac' } } } },
    });
    const { bare, optout, legacy, veleroMarked, veleroFound } = locs;
    await create('bare', bare.spec);
    await create('optout', optout.spec, { signing: { disabled: true } });
    await create('legacy', legacy.spec, { signing: { disabled: true }, validationFrequency: '1s', backupSyncPeriod: '1s' });
    await create('velero-marked', veleroMarked.spec, { velero: true, accessMode: 'ReadOnly' });
    await create('velero-found', veleroFound.spec, { accessMode: 'ReadOnly' });
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    for (const n of [source, ns]) await client?.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    client?.close();
    for (const l of Object.values(locs)) fs.rmSync(l.root, { recursive: true, force: true });
  });

  it('refuses a Stowage location with no spec.signing: Unavailable, naming both fixes in status, an Event and the log; a backup to it is refused', { timeout: 120_000 }, async () => {
    const message = missingSigning(ns, 'bare');
    const l = await validated('bare', 'Unavailable');
    expect(l.status?.message).toBe(message);
    const event = await waitUntil('the Unavailable event of bare', async () => {
      const evs = (await client.list<Event>(EVENTS, { namespace: ns })).items;
      return evs.find((e) => e.involvedObject?.kind === 'BackupStorageLocation' && e.involvedObject.name === 'bare' && e.reason === 'Unavailable');
    }, 30_000);
    expect(event).toMatchObject({ type: 'Warning', message });
    await server.waitForOutput(new RegExp(`backup storage location bare is Unavailable: ${escape(message)}`), 30_000);

    const b = await backup('to-bare', 'bare');
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.validationErrors).toContain(`backup storage location "bare" is Unavailable: ${message}`);
    expect(fs.existsSync(backupDir(locs.bare.root, 'to-bare'))).toBe(false);

    const described = await cli('backup-location', 'describe', 'bare');
    expect(described.code, show(described)).toBe(0);
    expect(described.stdout).toMatch(/^Signing: +missing \(no spec\.signing\): the location is Unavailable until it signs \(--signing-key-secret\) or opts out \(--signing=false\)$/m);
    expect(described.stdout).toContain(`Message:`);
  });

  it('takes spec.signing.disabled: true as the explicit opt-out: Available, and the server log, its Available event and describe name it', { timeout: 120_000 }, async () => {
    await validated('optout', 'Available');
    await server.waitForOutput(/backup storage location optout: it is unsigned by choice \(spec\.signing\.disabled: true\): its backups are not tamper-evident/, 30_000);
    const event = await waitUntil('the Available event of optout', async () => {
      const evs = (await client.list<Event>(EVENTS, { namespace: ns })).items;
      return evs.find((e) => e.involvedObject?.kind === 'BackupStorageLocation' && e.involvedObject.name === 'optout' && e.reason === 'Available');
    }, 30_000);
    expect(event).toMatchObject({ type: 'Normal', message: 'location validated; it is unsigned by choice (spec.signing.disabled: true): its backups are not tamper-evident' });
    const described = await cli('backup-location', 'describe', 'optout');
    expect(described.code, show(described)).toBe(0);
    expect(described.stdout).toMatch(/^Signing: +disabled \(spec\.signing\.disabled: true\): backups here are not tamper-evident$/m);
    const listed = await cli('backup-location', 'get', 'optout');
    expect(listed.stdout).toMatch(/^optout .* disabled\s*$/m);

    const b = await backup('unsigned', 'optout');
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(b.status?.signature).toBeUndefined();
    expect(fs.readdirSync(backupDir(locs.optout.root, 'unsigned'))).not.toContain('unsigned-signature.json');
  });

  it('signs every backup of a keyed location', { timeout: 120_000 }, async () => {
    await validated('keyed', 'Available');
    expect(server.output()).not.toMatch(/backup storage location keyed: it is unsigned/);
    const event = await waitUntil('the Available event of keyed', async () => {
      const evs = (await client.list<Event>(EVENTS, { namespace: ns })).items;
      return evs.find((e) => e.involvedObject?.kind === 'BackupStorageLocation' && e.involvedObject.name === 'keyed' && e.reason === 'Available');
    }, 30_000);
    expect(event.message).toBe('location validated');
    const b = await backup('signed', 'keyed');
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(b.status?.signature).toEqual({ algorithm: 'HMAC-SHA256', keyId: 'hmac' });
    expect(fs.readdirSync(backupDir(locs.keyed.root, 'signed'))).toContain('signed-signature.json');
    const described = await cli('backup-location', 'describe', 'keyed');
    expect(described.stdout).toMatch(/^Signing: +Secret signing, key hmac$/m);
  });

  it('needs no spec.signing on a Velero location, marked (spec.velero) or found in the bucket', { timeout: 120_000 }, async () => {
    const marked = await validated('velero-marked', 'Available');
    expect(marked.status).toMatchObject({ layout: 'Velero', layoutReason: 'spec.velero is true' });
    const found = await validated('velero-found', 'Available');
    expect(found.status).toMatchObject({ layout: 'Velero', layoutReason: 'detected: backups/nightly/velero-backup.json is Velero\'s, and no backup here is Stowage\'s' });
    const described = await cli('backup-location', 'describe', 'velero-found');
    expect(described.stdout).toMatch(/^Signing: +off \(Velero's layout: Velero signs nothing\)$/m);
  });

  it('turns a location made before signing was the default Unavailable without losing its Backups; disabled: true brings both back', { timeout: 180_000 }, async () => {
    await validated('legacy', 'Available');
    const old = await backup('old', 'legacy');
    expect(old.status?.phase, JSON.stringify(old.status)).toBe('Completed');
    // What an upgrade finds: a location that says nothing about signing.
    await client.patch(BSLS, ns, 'legacy', { spec: { signing: null } }, 'merge');
    const down = await validated('legacy', 'Unavailable');
    expect(down.status?.message).toBe(missingSigning(ns, 'legacy'));
    await client.create(RESOURCES.Restore, ns, newRestore('old-refused', ns, { backupName: 'old', namespaceMapping: { [source]: `${source}-refused` } }));
    const refused = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'old-refused', 90_000);
    expect(refused.status?.phase).toBe('FailedValidation');
    expect(refused.status?.validationErrors).toContain(`backup storage location "legacy" is Unavailable: ${missingSigning(ns, 'legacy')}`);
    // Validated (every 1s) twice more while Unavailable: sync (every 1s) had its turns, and the Backup stays.
    const since = Date.parse(down.status?.lastValidationTime ?? '');
    await waitUntil('two more validations', async () => {
      const l = await client.get<BackupStorageLocation>(BSLS, ns, 'legacy');
      return Date.parse(l.status?.lastValidationTime ?? '') >= since + 2000 ? l : undefined;
    }, 30_000);
    expect((await client.get<Backup>(RESOURCES.Backup, ns, 'old')).status?.phase).toBe('Completed');
    expect(server.output()).not.toMatch(/removed Backup old/);

    await client.patch(BSLS, ns, 'legacy', { spec: { signing: { disabled: true } } }, 'merge');
    await validated('legacy', 'Available');
    await client.create(CORE.namespaces, undefined, { metadata: { name: `${source}-back` } });
    await client.create(RESOURCES.Restore, ns, newRestore('old-back', ns, { backupName: 'old', namespaceMapping: { [source]: `${source}-back` } }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'old-back', 90_000);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    const cm = await client.get<{ data?: Record<string, string> }>(CORE.configMaps, `${source}-back`, 'settings');
    expect(cm.data).toEqual({ color: 'blue' });
    await client.delete(CORE.namespaces, undefined, `${source}-back`).catch(() => undefined);
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
