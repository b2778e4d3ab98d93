// VolumeSnapshotLocations are refused with the reason (Stowage snapshots volumes through CSI only): the
// real server marks each one Unavailable in its status, with a Warning event and a log line, and
// never leaves one looking accepted.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, type VolumeSnapshotLocation } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { VSL_REFUSED } from '../../src/controller/volumeSnapshotLocation.js';
import { ensureBuilt } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startServer, testClient, type RunningServer } from '../support/server.js';

const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true } as const;

let admin: DynamicClient;
let ns: string;
let server: RunningServer;

beforeAll(async () => {
  await ensureBuilt();
  const cluster = inject('cluster');
  admin = testClient(cluster.kubeconfigPath);
  ns = uniqueName('vsl');
  server = await startServer({ kubeconfigPath: cluster.kubeconfigPath, namespace: ns });
});

afterAll(async () => {
  await server?.stop();
});

describe('VolumeSnapshotLocation', () => {
  it('is marked Unavailable with the reason, a Warning event and a log line', async () => {
    await admin.create(RESOURCES.VolumeSnapshotLocation, ns, {
      apiVersion: 'stowage.dev/v1', kind: 'VolumeSnapshotLocation', metadata: { name: 'aws-default' }, spec: { provider: 'velero.io/aws', config: { region: 'eu-west-1' } },
    });
    const vsl = await waitUntil('the VolumeSnapshotLocation to be refused', async () => {
      const v = await admin.get<VolumeSnapshotLocation>(RESOURCES.VolumeSnapshotLocation, ns, 'aws-default');
      return v.status?.phase !== undefined ? v : undefined;
    }, 30_000);
    expect(vsl.status).toEqual({ phase: 'Unavailable', message: VSL_REFUSED });
    expect(VSL_REFUSED).toBe('VolumeSnapshotLocations are not supported: Stowage takes volume snapshots through CSI only (snapshotVolumes, with a VolumeSnapshotClass), never through a VolumeSnapshotter plugin, so no backup uses this location (a Backup that sets volumeSnapshotLocations fails validation)');
    const event = await waitUntil('the Unsupported event', async () => {
      const events = await admin.list<{ involvedObject: { name?: string; kind?: string }; reason?: string; type?: string; message?: string }>(EVENTS, { namespace: ns });
      return events.items.find((e) => e.involvedObject.kind === 'VolumeSnapshotLocation' && e.involvedObject.name === 'aws-default');
    }, 30_000);
    expect(event).toMatchObject({ type: 'Warning', reason: 'Unsupported', message: VSL_REFUSED });
    await server.waitForOutput(/VolumeSnapshotLocation \S+\/aws-default is Unavailable: VolumeSnapshotLocations are not supported/);

    // Someone marking it Available by hand is put right.
    await admin.patchStatus(RESOURCES.VolumeSnapshotLocation, ns, 'aws-default', { status: { phase: 'Available', message: 'marked by hand' } });
    await waitUntil('the VolumeSnapshotLocation to be refused again', async () => {
      const v = await admin.get<VolumeSnapshotLocation>(RESOURCES.VolumeSnapshotLocation, ns, 'aws-default');
      return v.status?.phase === 'Unavailable' && v.status.message === VSL_REFUSED ? true : undefined;
    }, 30_000);
  });
});
