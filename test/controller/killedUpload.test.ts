// A server SIGKILLed in the middle of an upload leaves the filesystem store's temp file in the
// bucket; the next server sweeps it when it opens the location. The first server is a process
// (the test SIGKILLs it); the next runs in process and moves its clock past the dead leader's lease.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup, type BackupStorageLocation } from '../../src/apis/v1/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startSuccessor } from '../support/inProcessServer.js';
import { filesystemLocation, startServer, testClient } from '../support/server.js';
import { childPids, pidAlive } from '../plugin/support.js';

const TEMP_PREFIX = '.stowage-tmp-';
const SLOW = ['--client-qps', '4', '--client-burst', '1'];

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function tempFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.startsWith(TEMP_PREFIX))
    .map((e) => path.join(e.parentPath, e.name));
}

describe('temp objects of killed uploads', () => {
  it('are swept from a filesystem location when the next server opens it', async () => {
    const c = testClient(inject('cluster').kubeconfigPath);
    cleanups.push(async () => c.close());
    const ns = uniqueName('tmpsweep');
    const loc = filesystemLocation();
    cleanups.push(async () => fs.rmSync(loc.root, { recursive: true, force: true }));
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const first = await startServer({ kubeconfigPath, namespace: ns, args: SLOW, location: loc });
    cleanups.push(() => first.stop());
    await c.create(RESOURCES.Backup, ns, newBackup('cut-off', ns, {}));
    const bucketDir = path.join(loc.root, 'backups');
    // The tarball streams into its temp file from the start of the backup.
    const left = await waitUntil('the tarball upload to start', async () => {
      const b = await c.get<Backup>(RESOURCES.Backup, ns, 'cut-off');
      const files = tempFiles(bucketDir);
      return b.status?.phase === 'InProgress' && files.length > 0 ? files : undefined;
    }, 60_000, 50);
    // The node dies: server and plugin processes at once, so no writer lives to remove its file
    // (a plugin that outlived its server by a moment would clean up its own failed upload).
    const plugins = childPids(first.proc.pid as number);
    expect(plugins.length, 'the server runs its plugin process').toBeGreaterThan(0);
    for (const pid of plugins) process.kill(pid, 'SIGKILL');
    await first.stop('SIGKILL');
    await waitUntil('the plugin processes to exit', async () => (plugins.some(pidAlive) ? undefined : true), 10_000, 50);
    expect(left.filter((f) => !fs.existsSync(f)), 'temp files gone after the SIGKILL').toEqual([]);

    // It leads once the dead leader's lease (15 s unrenewed) is past: startSuccessor moves its clock there.
    const second = await startSuccessor({ kubeconfigPath, namespace: ns });
    cleanups.push(() => second.stop());
    // Opening the location (its validation, once this server leads) sweeps the file.
    await waitUntil('the location validated by the new server', async () => {
      const l = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, ns, 'default');
      return l.status?.phase === 'Available' && tempFiles(bucketDir).length === 0 ? l : undefined;
    }, 60_000, 200);
    expect(left.every((f) => !fs.existsSync(f))).toBe(true);
    await second.waitForOutput(/removed temp files left by killed uploads/);
  }, 180_000);
});
