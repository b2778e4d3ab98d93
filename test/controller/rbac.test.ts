// The server running as the deploy/ ServiceAccount, with a token from the TokenRequest API and
// exactly the generated rules of its trust mode (installServerIdentity): in cluster-admin mode
// backup and restore work with the server's own rights, and dropping one needed rule makes the run
// fail with an error that names the missing permission; in requester mode the server runs and
// backs up with the smaller rule set (its restores run as the requester, tested with the webhook).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient } from '../../src/kube/index.js';
import type { TrustMode } from '../../src/config/index.js';
import { ensureDeployCrds, installServerIdentity, type ServerIdentity } from '../deploy/manifests.js';
import { adminConfig, uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const NS = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };

let admin: DynamicClient;
const installed: ServerIdentity[] = [];
const servers: RunningServer[] = [];

beforeAll(async () => {
  admin = testClient(inject('cluster').kubeconfigPath);
  await ensureDeployCrds(admin);
});

afterAll(async () => {
  for (const s of servers) await s.stop();
  for (const identity of installed) await identity.remove().catch(() => undefined);
});

/** Gives `ns` the deploy/ ServiceAccount with `mode`'s rules (there is no kubelet: no Deployment) and starts the server as it. */
async function serverAs(ns: string, mode: TrustMode, withoutRules: string[] = []): Promise<RunningServer> {
  const identity = await installServerIdentity(admin, adminConfig(), { namespace: ns, trustMode: mode, withoutRules });
  installed.push(identity);
  const server = await startServer({
    kubeconfigPath: identity.kubeconfigPath,
    adminKubeconfigPath: inject('cluster').kubeconfigPath,
    namespace: ns,
    location: filesystemLocation(),
    args: ['--trust-mode', mode, '--webhook-configuration-name', identity.webhookConfigurationName],
  });
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
  it('cluster-admin mode: backs up and restores with exactly the granted permissions', async () => {
    const ns = uniqueName('stowage-sa');
    await serverAs(ns, 'cluster-admin');
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

  it('cluster-admin mode: fails the restore, naming the missing permission, when the restore-write rule is removed', async () => {
    const ns = uniqueName('stowage-sa');
    const server = await serverAs(ns, 'cluster-admin', ['restore-write']);
    const app = await seed();
    await admin.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [app] }));
    expect((await finished<Backup>(RESOURCES.Backup, ns, 'b')).status?.phase).toBe('Completed');
    await admin.create(RESOURCES.Restore, ns, newRestore('r', ns, { backupName: 'b', namespaceMapping: { [app]: `${app}-copy` } }));
    const r = await finished<Restore>(RESOURCES.Restore, ns, 'r');
    expect(['PartiallyFailed', 'Failed']).toContain(r.status?.phase);
    expect(r.status?.errors ?? 0).toBeGreaterThan(0);
    expect(server.output()).toMatch(new RegExp(`system:serviceaccount:${ns}:stowage" cannot create resource "(namespaces|configmaps)"`));
  });

  it('requester mode: runs, leads and backs up with the requester rule set only', async () => {
    const ns = uniqueName('stowage-sa');
    const server = await serverAs(ns, 'requester');
    const app = await seed();
    await admin.create(RESOURCES.Backup, ns, newBackup('b', ns, { includedNamespaces: [app] }));
    const b = await finished<Backup>(RESOURCES.Backup, ns, 'b');
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
    expect(b.status?.progress?.itemsBackedUp ?? 0).toBeGreaterThan(0);
    expect(server.output()).not.toMatch(/forbidden/i);
  });
});
