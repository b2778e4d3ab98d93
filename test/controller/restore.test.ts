// The Restore controller end to end through `stowage server`: back up, delete the namespace,
// restore, and a dry run that predicts without creating. The location signs with the test key (the
// default for locations), so every restore here verifies the backup's signature first.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { SIGNED, ensureNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';

const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const SECRET = { group: '', version: 'v1', resource: 'secrets', namespaced: true };
const DEPLOY = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
const NS = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };

describe('restore controller', () => {
  const ns = uniqueName('stowage');
  const app = uniqueName('shop');
  const loc = filesystemLocation('default', SIGNED);
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    await ensureNamespace(client, app);
    await client.create(CM, app, { metadata: { name: 'settings', labels: { app: 'shop' } }, data: { color: 'blue' } });
    await client.create(SECRET, app, { metadata: { name: 'token' }, stringData: { token: 's3cr3t-value' } });
    await client.create(DEPLOY, app, {
      metadata: { name: 'web' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1' }] } } },
    });
    server = await startServer({ kubeconfigPath: kc, namespace: ns, location: loc });
    await client.create(RESOURCES.Backup, ns, newBackup('shop', ns, { includedNamespaces: [app] }));
    const b = await waitUntil('backup done', async () => {
      const x = await client.get<Backup>(RESOURCES.Backup, ns, 'shop');
      return ['Completed', 'PartiallyFailed', 'Failed'].includes(x.status?.phase ?? '') ? x : undefined;
    }, 90_000, 250);
    expect(b.status?.phase).toBe('Completed');
  });

  afterAll(async () => {
    await server?.stop();
  });

  async function restoreAndWait(name: string, spec: RestoreSpec): Promise<Restore> {
    await client.create(RESOURCES.Restore, ns, newRestore(name, ns, spec));
    return waitUntil(`restore ${name}`, async () => {
      const r = await client.get<Restore>(RESOURCES.Restore, ns, name);
      return ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation'].includes(r.status?.phase ?? '') ? r : undefined;
    }, 120_000, 250);
  }

  it('predicts with a dry run and creates nothing', async () => {
    const r = await restoreAndWait('preview', { backupName: 'shop', namespaceMapping: { [app]: `${app}-copy` }, dryRun: true });
    expect(r.status?.phase, r.status?.failureReason).toBe('Completed');
    expect(r.status?.summary?.created).toBeGreaterThanOrEqual(4); // namespace, configmap, secret, deployment
    await expect(client.get(NS, undefined, `${app}-copy`)).rejects.toSatisfy(isNotFound);
  });

  it('brings a deleted namespace back, and uploads the restore log', async () => {
    await client.delete(NS, undefined, app);
    await waitUntil('namespace gone', async () => client.get(NS, undefined, app).then(() => undefined, (e: unknown) => (isNotFound(e) ? true : undefined)), 120_000, 500);
    const r = await restoreAndWait('back', { backupName: 'shop' });
    expect(r.status?.phase, r.status?.failureReason).toBe('Completed');
    const cm = await client.get<{ data?: Record<string, string>; metadata: { labels?: Record<string, string> } }>(CM, app, 'settings');
    expect(cm.data).toEqual({ color: 'blue' });
    expect(cm.metadata.labels?.['stowage.dev/restore-name']).toBe('back');
    const secret = await client.get<{ data?: Record<string, string> }>(SECRET, app, 'token');
    expect(Buffer.from(secret.data?.token ?? '', 'base64').toString()).toBe('s3cr3t-value');
    await client.get(DEPLOY, app, 'web');
    const dir = path.join(loc.root, 'backups', 'restores', 'back');
    expect(fs.readdirSync(dir).sort()).toEqual(['restore-back-logs.gz', 'restore-back-resource-list.json.gz', 'restore-back-results.gz']);
    const log = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'restore-back-logs.gz'))).toString();
    expect(log).toContain('restore completed');
    expect(log).not.toContain('s3cr3t-value');
    expect(server.output()).toContain(`restore=${ns}/back`);
  });

  it('refuses a restore of a backup that does not exist', async () => {
    const r = await restoreAndWait('ghost', { backupName: 'nope', includedNamespaces: ['a'], excludedNamespaces: ['a'] });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors?.join('\n')).toContain('backup "nope" does not exist');
    expect(r.status?.validationErrors?.length).toBeGreaterThanOrEqual(2);
  });
});
