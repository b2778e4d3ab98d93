// VolumeSnapshotter through the host: every method round-trips, and after a process death the
// idempotent calls are retried while creating a snapshot is not (it could create two).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VolumeSnapshotter } from '../../src/plugin/api/index.js';
import { createPluginPool, type PluginHandle, type PluginPool } from '../../src/plugin/host/index.js';
import { livePids, memoryLogger, pluginDir, removeTempDirs, requireBuilt, RUN, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

describe('VolumeSnapshotter through the plugin host', () => {
  let pool: PluginPool;
  let handle: PluginHandle;
  let snap: VolumeSnapshotter;
  let launcher: string;
  const logs = memoryLogger();

  beforeAll(async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    launcher = p.path('tester');
    pool = await createPluginPool({ pluginDirs: [p.dir], logger: logs.logger });
    handle = pool.handle(RUN);
    snap = await handle.volumeSnapshotter('test.stowage.dev/snapshots', { zone: 'eu-1' });
  });
  afterAll(async () => {
    handle.release();
    await pool.shutdown();
  });

  it('round-trips every method', async () => {
    const id = await snap.createSnapshot('vol-1', 'az-a', { backup: 'b1' });
    expect(id).toBe('snap-vol-1-1');
    expect(await snap.createVolumeFromSnapshot(id, 'gp3', 'az-b', undefined)).toBe('vol-from-snap-vol-1-1-gp3-az-b-none');
    expect(await snap.createVolumeFromSnapshot(id, 'io2', 'az-b', 4000)).toBe('vol-from-snap-vol-1-1-io2-az-b-4000');
    const pv = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-1' }, spec: { csi: { driver: 'x', volumeHandle: 'vol-1' } } };
    expect(await snap.getVolumeID(pv)).toBe('vol-1');
    expect(await snap.setVolumeID(pv, 'vol-2')).toEqual({ ...pv, spec: { csi: { driver: 'x', volumeHandle: 'vol-2' } } });
    expect(await snap.getVolumeInfo('vol-1', 'az-a')).toEqual({ volumeType: 'gp3-az-a-eu-1', iops: undefined });
    expect(await snap.getVolumeInfo('io-vol', 'az-a')).toEqual({ volumeType: 'io2', iops: 3000 });
    await snap.deleteSnapshot(id);
    await expect(snap.deleteSnapshot(id)).rejects.toThrow('DeleteSnapshot failed: no snapshot snap-vol-1-1');
  });

  const killWhileInFlight = async <T>(call: () => Promise<T>): Promise<{ result?: T; error?: Error }> => {
    const [pid] = livePids(launcher);
    const pending = call().then(
      (result) => ({ result }),
      (error: unknown) => ({ error: error as Error }),
    );
    // Killed once the call is running in the plugin (it says so, then takes 2 s), not before it arrives.
    await waitFor('the slow call to reach the plugin', () => (logs.entries.some((e) => e.message === 'slow call started' && e.pluginPid === pid) ? true : undefined));
    process.kill(pid as number, 'SIGKILL');
    return pending;
  };

  it('retries an idempotent call whose process died, on the new process with Init replayed', async () => {
    await snap.getVolumeInfo('warm', 'az');
    const before = pool.status()[0];
    const out = await killWhileInFlight(() => snap.getVolumeInfo('slow', 'az-a'));
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual({ volumeType: 'gp3-az-a-eu-1', iops: undefined }); // zone came from the replayed Init
    const after = pool.status()[0];
    expect((after?.retries ?? 0) - (before?.retries ?? 0)).toBe(1);
    expect((after?.inits ?? 0) - (before?.inits ?? 0)).toBe(1);
  });

  it('does not retry CreateSnapshot after a process death, and says why', async () => {
    await snap.getVolumeInfo('warm', 'az');
    const out = await killWhileInFlight(() => snap.createSnapshot('slow', 'az-a', {}));
    expect(out.error?.message).toMatch(
      /^VolumeSnapshotter test\.stowage\.dev\/snapshots \(executable .+\): CreateSnapshot failed: the plugin process \(pid \d+\) died during the call, and the call is not idempotent, so it is not retried$/,
    );
    // The next call works on a new process.
    await waitFor('restart', async () => ((await snap.getVolumeInfo('x', 'az')).volumeType !== '' ? true : undefined));
    expect(livePids(launcher)).toHaveLength(1);
  });
});
