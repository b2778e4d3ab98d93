// The Backup controller end to end: `stowage server` as a child process, a real apiserver, the
// built-in filesystem object store behind the restartable plugin host; the location signs, as
// locations do by default, with the test key.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup, type BackupSpec } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { SIGNED, ensureNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';

const SECRET_VALUE = 'hunter2-do-not-log-me-9f8e7d';

describe('backup controller', () => {
  const ns = uniqueName('stowage');
  const app = uniqueName('app');
  const loc = filesystemLocation('default', SIGNED);
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    await ensureNamespace(client, app);
    const cms = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
    for (let i = 0; i < 20; i++) await client.create(cms, app, { metadata: { name: `cm-${i}`, labels: { tier: i % 2 === 0 ? 'even' : 'odd' } }, data: { i: String(i) } });
    await client.create({ group: '', version: 'v1', resource: 'secrets', namespaced: true }, app, {
      metadata: { name: 'creds' }, stringData: { password: SECRET_VALUE },
    });
    server = await startServer({ kubeconfigPath: kc, namespace: ns, location: loc });
  });

  afterAll(async () => {
    await server?.stop();
  });

  async function backupAndWait(name: string, spec: BackupSpec): Promise<Backup> {
    await client.create(RESOURCES.Backup, ns, newBackup(name, ns, spec));
    return waitUntil(`backup ${name} to finish`, async () => {
      const b = await client.get<Backup>(RESOURCES.Backup, ns, name);
      const p = b.status?.phase;
      return p !== undefined && !['New', 'InProgress'].includes(p) ? b : undefined;
    }, 90_000, 250);
  }

  it('backs up a namespace into the location, with its log, and mirrors the log to the server output', async () => {
    const b = await backupAndWait('full', { includedNamespaces: [app] });
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    // No location named: the default one is recorded, so the backup stays findable if the default changes.
    expect(b.spec.storageLocation).toBe(loc.name);
    expect(b.status?.progress?.itemsBackedUp).toBeGreaterThanOrEqual(22);
    expect(b.status?.startTimestamp).toBeDefined();
    expect(b.status?.completionTimestamp).toBeDefined();
    expect(Date.parse(b.status?.expiration ?? '') - Date.parse(b.status?.startTimestamp ?? '')).toBe(720 * 3600 * 1000);
    const dir = path.join(loc.root, 'backups', 'backups', 'full');
    expect(fs.readdirSync(dir).sort()).toEqual([
      'full-logs.gz', 'full-manifest.json.gz', 'full-resource-list.json.gz', 'full-results.gz', 'full-signature.json', 'full.tar.gz', 'stowage-backup.json',
    ]);
    expect(b.status?.signature).toEqual({ algorithm: 'HMAC-SHA256', keyId: 'hmac' });
    const log = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'full-logs.gz'))).toString();
    expect(log).toContain('backup completed');
    expect(server.output()).toContain(`backup=${ns}/full`);
    expect(log).not.toContain(SECRET_VALUE);
    expect(server.output()).not.toContain(SECRET_VALUE);
    const stored = JSON.parse(fs.readFileSync(path.join(dir, 'stowage-backup.json'), 'utf8')) as Backup;
    expect(stored.status?.phase).toBe('Completed');
  });

  it('lists every validation failure at once', async () => {
    const b = await backupAndWait('invalid', {
      storageLocation: 'nowhere', ttl: 'soon', includedNamespaces: [app], excludedNamespaces: [app],
      labelSelector: { matchLabels: { a: 'b' } }, orLabelSelectors: [{ matchLabels: { c: 'd' } }],
    });
    expect(b.status?.phase).toBe('FailedValidation');
    const errors = (b.status?.validationErrors ?? []).join('\n');
    expect(errors).toContain('backup storage location "nowhere" does not exist');
    expect(errors).toMatch(/ttl "soon" is not a duration/);
    expect(errors).toMatch(/labelSelector.*orLabelSelectors|orLabelSelectors.*labelSelector/);
    expect(errors).toContain(app);
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'invalid'))).toBe(false);
  });

  it('honours a label selector', async () => {
    const b = await backupAndWait('even', { includedNamespaces: [app], labelSelector: { matchLabels: { tier: 'even' } } });
    expect(b.status?.phase).toBe('Completed');
    const list = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(loc.root, 'backups', 'backups', 'even', 'even-resource-list.json.gz'))).toString()) as Record<string, string[]>;
    // The selected ConfigMaps, plus the Namespace object that holds them (needed to restore them).
    expect(list.configmaps?.sort()).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18].map((i) => `${app}/cm-${i}`).sort());
    expect(list.namespaces).toEqual([app]);
    expect(b.status?.progress?.itemsBackedUp).toBe(11);
  });
});
