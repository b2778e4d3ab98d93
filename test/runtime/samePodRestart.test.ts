// A single replica SIGKILLed mid-backup and started again as the same pod (POD_NAME): the new
// process finds the lease held by its own pod's earlier process, takes it at once instead of
// waiting the lease out, and the start-up sweep fails the stale backup before that lease would
// have expired. (How fast, in ms, is printed; a wall-clock bound would only measure the machine's load.)
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup } from '../../src/apis/v1/index.js';
import { LEASES, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';

// Slow enough that the backup is still running when it is killed.
const SLOW = ['--client-qps', '4', '--client-burst', '1'];
const servers: RunningServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
});

async function phase(c: DynamicClient, ns: string, name: string, phases: string[], timeoutMs: number): Promise<Backup> {
  return waitUntil(`backup ${name} in ${phases.join('|')}`, async () => {
    const b = await c.get<Backup>(RESOURCES.Backup, ns, name);
    return phases.includes(b.status?.phase ?? 'New') ? b : undefined;
  }, timeoutMs, 50);
}

describe('a restarted single replica', () => {
  it('takes the lease its own pod held at once and fails the stale backup before the old lease would have expired', async () => {
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const c = testClient(kubeconfigPath);
    const ns = uniqueName('samepod');
    const loc = filesystemLocation();
    const env = { POD_NAME: 'stowage-7d9f-abcde' };
    const first = await startServer({ kubeconfigPath, namespace: ns, args: SLOW, location: loc, env });
    servers.push(first);
    await c.create(RESOURCES.Backup, ns, newBackup('stale', ns, {}));
    await phase(c, ns, 'stale', ['InProgress'], 60_000);
    await first.stop('SIGKILL');
    const held = await c.get<{ spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number } }>(LEASES, ns, 'stowage-server');
    expect(held.spec.holderIdentity).toMatch(/^stowage-7d9f-abcde_/);

    const restart = Date.now();
    const second = await startServer({ kubeconfigPath, namespace: ns, env });
    servers.push(second);
    const b = await phase(c, ns, 'stale', ['Failed', 'Completed', 'PartiallyFailed'], 30_000);
    const failedAt = Date.now();
    const failedMs = failedAt - restart;
    process.stderr.write(`[same pod] the stale backup was Failed ${failedMs} ms after the restart\n`);
    expect(b.status?.phase).toBe('Failed');
    expect(b.status?.failureReason).toContain('stopped before it finished');
    // Waiting the lease out could not have failed it before the dead holder's lease ran out.
    const expiresAt = Date.parse(held.spec.renewTime ?? '') + (held.spec.leaseDurationSeconds ?? 0) * 1000;
    expect(Number.isFinite(expiresAt)).toBe(true);
    expect(failedAt).toBeLessThan(expiresAt);
    expect(second.output()).toMatch(/taking over from stowage-7d9f-abcde_\S+, an earlier process of this pod/);
    const lease = await c.get<{ spec: { holderIdentity?: string } }>(LEASES, ns, 'stowage-server');
    expect(lease.spec.holderIdentity).not.toBe(held.spec.holderIdentity);
    expect(lease.spec.holderIdentity).toMatch(/^stowage-7d9f-abcde_/);
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'stale', 'stowage-backup.json'))).toBe(false);
  }, 120_000);
});
