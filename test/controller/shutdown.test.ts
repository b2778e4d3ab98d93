// SIGTERM: the server stops taking work, lets running backups finish within the grace period,
// marks what it cannot finish Failed with a reason, stops its plugin processes and exits 0. A plugin
// action (fixtures/plugins/gate-plugin.mjs) holds each backup at its namespace's "gate" ConfigMap
// until the test opens the gate, so a backup is surely running when the signal comes.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { pluginDir, removeTempDirs, tempDir } from '../plugin/support.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';

afterAll(() => removeTempDirs());

/** A server of a new namespace that holds a "gate" ConfigMap, with the gate plugin; `open` lets one backup of it through. */
async function gatedServer(c: DynamicClient, grace: string): Promise<{ ns: string; server: RunningServer; open(): void }> {
  const ns = uniqueName('sigterm');
  const gates = tempDir('gates');
  const plugins = pluginDir({ gate: 'gate-plugin.mjs' }, { GATE_DIR: gates });
  const server = await startServer({
    kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, location: filesystemLocation(),
    args: ['--plugin-dir', plugins.dir, '--termination-grace-period', grace],
  });
  await c.create(CORE.configMaps, ns, { metadata: { name: 'gate' }, data: { k: 'gate' } });
  return { ns, server, open: () => fs.writeFileSync(path.join(gates, `backup-${ns}`), '') };
}

function children(pid: number): number[] {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((c) => {
    try {
      const stat = fs.readFileSync(`/proc/${c}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid && !/^\d+ \(.*\) Z/.test(stat);
    } catch {
      return false;
    }
  });
}

async function inProgress(c: DynamicClient, ns: string, name: string): Promise<void> {
  await waitUntil(`${name} InProgress`, async () => ((await c.get<Backup>(RESOURCES.Backup, ns, name)).status?.phase === 'InProgress' ? true : undefined), 60_000, 100);
}

describe('server shutdown', () => {
  it('marks a backup it cannot finish within the grace period Failed, stops plugins and exits 0', async () => {
    const c = testClient(inject('cluster').kubeconfigPath);
    const { ns, server } = await gatedServer(c, '1s');
    // Held at its gate, which never opens: it cannot finish within the grace period.
    await c.create(RESOURCES.Backup, ns, newBackup('cut-short', ns, { includedNamespaces: [ns] }));
    await inProgress(c, ns, 'cut-short');
    const pluginPids = children(server.proc.pid ?? -1);
    expect(pluginPids.length).toBeGreaterThan(0);
    const code = await server.stop('SIGTERM', 30_000);
    expect(code).toBe(0);
    const b = await c.get<Backup>(RESOURCES.Backup, ns, 'cut-short');
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toContain('shut down before the backup finished');
    expect(pluginPids.filter((p) => fs.existsSync(`/proc/${p}`) && !/\) Z/.test(fs.readFileSync(`/proc/${p}/stat`, 'utf8')))).toEqual([]);
    expect(server.output()).toContain('stowage server stopped');
  });

  it('lets a running backup finish when the grace period allows it', async () => {
    const c = testClient(inject('cluster').kubeconfigPath);
    const { ns, server, open } = await gatedServer(c, '120s');
    await c.create(RESOURCES.Backup, ns, newBackup('finishes', ns, { includedNamespaces: [ns] }));
    await inProgress(c, ns, 'finishes');
    // Held at its gate when SIGTERM comes: the server waits for it.
    const stopped = server.stop('SIGTERM', 150_000);
    await server.waitForOutput(/shutting down: waiting up to 120s for 1 running backup\(s\)\/restore\(s\)/, 60_000);
    // A backup created after SIGTERM is not started by this server.
    await c.create(RESOURCES.Backup, ns, newBackup('too-late', ns, {}));
    open();
    expect(await stopped).toBe(0);
    expect((await c.get<Backup>(RESOURCES.Backup, ns, 'finishes')).status?.phase).toBe('Completed');
    expect((await c.get<Backup>(RESOURCES.Backup, ns, 'too-late')).status?.phase ?? 'New').toBe('New');
  });
});
