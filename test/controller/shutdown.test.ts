// SIGTERM: the server stops taking work, lets running backups finish within the grace period,
// marks what it cannot finish Failed with a reason, stops its plugin processes and exits 0.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient } from '../support/server.js';

const SLOW = ['--client-qps', '4', '--client-burst', '1'];

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
    const ns = uniqueName('sigterm');
    const server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, location: filesystemLocation(), args: [...SLOW, '--termination-grace-period', '1s'] });
    await c.create(RESOURCES.Backup, ns, newBackup('cut-short', ns, {}));
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
    const ns = uniqueName('sigterm');
    const server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, location: filesystemLocation(), args: [...SLOW, '--termination-grace-period', '120s'] });
    await c.create(RESOURCES.Backup, ns, newBackup('finishes', ns, { includedNamespaces: ['default'] }));
    await inProgress(c, ns, 'finishes');
    // A backup created after SIGTERM is not started by this server.
    const stopped = server.stop('SIGTERM', 150_000);
    await new Promise((r) => setTimeout(r, 300));
    await c.create(RESOURCES.Backup, ns, newBackup('too-late', ns, {}));
    expect(await stopped).toBe(0);
    expect((await c.get<Backup>(RESOURCES.Backup, ns, 'finishes')).status?.phase).toBe('Completed');
    expect((await c.get<Backup>(RESOURCES.Backup, ns, 'too-late')).status?.phase ?? 'New').toBe('New');
  });
});
