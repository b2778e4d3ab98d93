// A Backup and a Restore named with 253 characters, the longest name Kubernetes accepts, complete
// end to end: nothing local (run log, spool, spill, credentials), no label and no Event name may
// derive from the full name. The object store is a plugin's in-memory one (memory-store.mjs),
// since the test stores on disk cap each key segment at 255 bytes as any file system does.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME, RESOURCES, labelValue, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { pluginDir, removeTempDirs } from '../plugin/support.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true };

describe('runs named with 253 characters', () => {
  const ns = uniqueName('stowage-long');
  const app = uniqueName('long-app');
  const target = uniqueName('long-to');
  const backupName = `${'backup-of-'.repeat(25)}xyz`;
  const restoreName = `${'restore-r-'.repeat(25)}xyz`;
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureNamespace(client, app);
    for (let i = 0; i < 5; i++) await client.create(CONFIGMAPS, app, { metadata: { name: `cm-${i}` }, data: { i: String(i) } });
    const plugins = pluginDir({ 'memory-store': 'memory-store.mjs' });
    server = await startServer({
      kubeconfigPath: kubeconfig, namespace: ns, args: ['--plugin-dir', plugins.dir],
      location: { name: 'memory', spec: { provider: 'test.stowage.dev/memory', objectStorage: { bucket: 'b' }, default: true, validationFrequency: '10s' } },
    });
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    removeTempDirs();
  });

  it('backs up and restores, with labels and events that fit', async () => {
    expect(backupName).toHaveLength(253);
    expect(restoreName).toHaveLength(253);
    await client.create(RESOURCES.Backup, ns, newBackup(backupName, ns, { includedNamespaces: [app] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, backupName, 90_000);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');

    await client.create(RESOURCES.Restore, ns, newRestore(restoreName, ns, { backupName, includedNamespaces: [app], namespaceMapping: { [app]: target } }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, ns, restoreName, 90_000);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(r.status?.summary?.created).toBeGreaterThanOrEqual(5);

    const cm = await client.get<{ metadata: { labels?: Record<string, string> } }>(CONFIGMAPS, target, 'cm-3');
    expect(cm.metadata.labels?.[LABEL_BACKUP_NAME]).toBe(labelValue(backupName));
    expect(cm.metadata.labels?.[LABEL_RESTORE_NAME]).toBe(labelValue(restoreName));
    for (const name of [backupName, restoreName]) {
      await waitUntil(`the Completed event of ${name.slice(0, 20)}…`, async () => {
        const events = await client.list<{ involvedObject: { name?: string }; reason?: string }>(EVENTS, { namespace: ns });
        return events.items.find((e) => e.involvedObject.name === name && e.reason === 'Completed');
      }, 20_000);
    }
    expect(server.output()).not.toMatch(/ENAMETOOLONG|event .* failed/i);
  });
});
