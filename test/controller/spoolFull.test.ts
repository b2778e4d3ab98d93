// A run whose log can be neither uploaded (the bucket is broken) nor spooled (the spool disk is
// full) still ends Failed with its own reason, the server log says where the log was left, and
// nothing stays InProgress.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureAppNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { fillUp, mountTmpfs, unmount } from '../support/tmpfs.js';


describe('a full spool disk', () => {
  const ns = uniqueName('stowage-spool');
  const app = uniqueName('spool-app');
  const loc = filesystemLocation();
  const spool = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-spool-'));
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureAppNamespace(client, app, 4);
    mountTmpfs(spool, '64k');
    fillUp(path.join(spool, 'filler'));
    // Validated once, at start: the broken bucket is found by the run itself.
    server = await startServer({
      kubeconfigPath: kubeconfig, namespace: ns, args: ['--log-spool-dir', spool],
      location: { name: loc.name, spec: { ...loc.spec, validationFrequency: '1h' } },
    });
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    unmount(spool);
    fs.rmSync(spool, { recursive: true, force: true });
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('ends the run Failed with the first reason, and the server log says the log stays in the run-log directory', async () => {
    await waitAvailable();
    // The bucket directory becomes a file: every write to the location fails.
    const bucket = path.join(loc.root, 'backups');
    fs.rmSync(bucket, { recursive: true, force: true });
    fs.writeFileSync(bucket, 'not a directory');

    await client.create(RESOURCES.Backup, ns, newBackup('unkept', ns, { includedNamespaces: [app] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'unkept', 60_000);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toMatch(/^uploading the tarball failed: /);
    const line = await server.waitForOutput(/backup \S+\/unkept: the run log could not be uploaded \(.*\) nor kept in the spool \(.*ENOSPC.*\); it stays at \S+/, 20_000);
    const kept = /it stays at (\S+)/.exec(line)?.[1] ?? '';
    expect(kept.startsWith(path.join(server.scratchDir, 'run-logs'))).toBe(true);
    expect(fs.statSync(kept).size).toBeGreaterThan(0);
    // Nothing half-copied is left in the spool.
    expect(fs.readdirSync(spool)).toEqual(['filler']);
  });

  async function waitAvailable(): Promise<void> {
    await waitUntil('the location Available', async () => {
      const bsl = await client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, loc.name);
      return bsl.status?.phase === 'Available' ? true : undefined;
    }, 30_000);
  }
});
