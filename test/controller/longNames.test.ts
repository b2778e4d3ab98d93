// A Backup and a Restore named with 253 characters, the longest name Kubernetes accepts, complete
// end to end: nothing local (run log, spool, spill, credentials), no label and no Event name may
// derive from the full name. The object store is the built-in filesystem one, whose key segments
// (`<name>-resource-list.json.gz`, `restore-<name>-logs.gz`) are longer than a file name may be.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME, RESOURCES, labelValue, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import fs from 'node:fs';
import { FilesystemObjectStore } from '../../src/plugin/builtin/filesystem.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true };

describe('runs named with 253 characters', () => {
  const ns = uniqueName('stowage-long');
  const app = uniqueName('long-app');
  const target = uniqueName('long-to');
  const backupName = `${'backup-of-'.repeat(25)}xyz`;
  const restoreName = `${'restore-r-'.repeat(25)}xyz`;
  const location = filesystemLocation();
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureNamespace(client, app);
    for (let i = 0; i < 5; i++) await client.create(CONFIGMAPS, app, { metadata: { name: `cm-${i}` }, data: { i: String(i) } });
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location });
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(location.root, { recursive: true, force: true });
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
    // The store's directory is named only where the operator configured it (its ready line), in no warning or error.
    expect(server.output().split('\n').filter((l) => l.includes(location.root) && !l.includes('filesystem object store ready'))).toEqual([]);
    // Every artifact is stored under its own key, the logs included, and listed as written.
    const store = new FilesystemObjectStore();
    await store.init({ root: location.root });
    const keys = await waitUntil('the restore log in storage', async () => {
      const all = await store.listObjects('backups', '');
      return all.includes(`restores/${restoreName}/restore-${restoreName}-logs.gz`) ? all : undefined;
    }, 20_000);
    for (const suffix of ['.tar.gz', '-logs.gz', '-resource-list.json.gz', '-results.gz', '-manifest.json.gz']) {
      expect(keys).toContain(`backups/${backupName}/${backupName}${suffix}`);
    }
    expect(keys).toContain(`backups/${backupName}/stowage-backup.json`);
  });
});
