// The server running as the deploy/ ServiceAccount, with a token from the TokenRequest API:
// backup and restore work with exactly the granted rules, and dropping one needed rule makes the
// run fail with an error that names the missing permission.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { applyObjects, deleteObjects, ensureDeployCrds, loadDeployManifests, writeServiceAccountKubeconfig } from '../deploy/manifests.js';
import { adminConfig, uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const NS = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };

let admin: DynamicClient;
const installed: KubeObject[][] = [];
const servers: RunningServer[] = [];

beforeAll(async () => {
  admin = testClient(inject('cluster').kubeconfigPath);
  await ensureDeployCrds(admin);
});

afterAll(async () => {
  for (const s of servers) await s.stop();
  for (const objs of installed) await deleteObjects(admin, objs).catch(() => undefined);
});

/** Installs deploy/ (without the Deployment: there is no kubelet) into `ns` and starts the server as its ServiceAccount. */
async function serverAs(ns: string, withoutRules: string[] = []): Promise<RunningServer> {
  const objects = loadDeployManifests({ namespace: ns, withoutRules }).map((m) => m.object).filter((o) => o.kind !== 'Deployment');
  installed.push(objects);
  await applyObjects(admin, objects);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-sa-')), 'kubeconfig');
  await writeServiceAccountKubeconfig(adminConfig(), ns, 'stowage', file);
  const server = await startServer({ kubeconfigPath: file, adminKubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, location: filesystemLocation() });
  servers.push(server);
  return server;
}

const finished = <T extends Backup | Restore>(res: typeof RESOURCES.Backup | typeof RESOURCES.Restore, ns: string, name: string): Promise<T> =>
  waitFinished<T>(admin, res, ns, name);

async function seed(): Promise<string> {
  const app = uniqueName('rbac-app');
  await ensureNamespace(admin, app);
  await admin.create(CM, app, { metadata: { name: 'settings' }, data: { k: 'v' } });
  return app;
}

describe('server with the deploy/ ServiceAccount token', () => {
  it('backs up and restores with exactly the granted permissions', async () => {
    const ns = uniqueName('stowage-sa');
    await serverAs(ns);
    const app = await seed();
    await admin.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [app] }));
    expect((await finished<Backup>(RESOURCES.Backup, ns, 'b')).status?.phase).toBe('Completed');
    await admin.delete(NS, undefined, app);
    await waitUntil('namespace gone', async () => admin.get(NS, undefined, app).then(() => undefined, (e: unknown) => (isNotFound(e) ? true : undefined)), 120_000, 500);
    await admin.create(RESOURCES.Restore, ns, newRestore('r', ns, { backupName: 'b' }));
    const r = await finished<Restore>(RESOURCES.Restore, ns, 'r');
    expect(r.status?.phase, r.status?.failureReason).toBe('Completed');
    expect((await admin.get<{ data?: Record<string, string> }>(CM, app, 'settings')).data).toEqual({ k: 'v' });
  });

  it('fails the restore, naming the missing permission, when the restore-write rule is removed', async () => {
    const ns = uniqueName('stowage-sa');
    const server = await serverAs(ns, ['restore-write']);
    const app = await seed();
    await admin.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [app] }));
    expect((await finished<Backup>(RESOURCES.Backup, ns, 'b')).status?.phase).toBe('Completed');
    await admin.create(RESOURCES.Restore, ns, newRestore('r', ns, { backupName: 'b', namespaceMapping: { [app]: `${app}-copy` } }));
    const r = await finished<Restore>(RESOURCES.Restore, ns, 'r');
    expect(['PartiallyFailed', 'Failed']).toContain(r.status?.phase);
    expect(r.status?.errors ?? 0).toBeGreaterThan(0);
    expect(server.output()).toMatch(new RegExp(`system:serviceaccount:${ns}:stowage" cannot create resource "(namespaces|configmaps)"`));
  });
});
