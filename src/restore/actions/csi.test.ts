// The restore's CSI actions on what needs no cluster: restorePVs false (claims come back empty and
// the results say so), a dry run (the claim as it would be written), the old volume of a
// snapshotted claim skipped, and the backup's own snapshot objects skipped. Restoring data from a
// snapshot is proved on the real node (test/incluster/volumes.suite.ts).
import { describe, expect, it } from 'vitest';
import { newRestore } from '../../apis/v1/index.js';
import type { DynamicClient } from '../../kube/index.js';
import type { KubeObject } from '../../plugin/api/index.js';
import { systemClock } from '../../util/clock.js';
import { ANNOTATION_VOLUME_SNAPSHOT, LABEL_SNAPSHOT_BACKUP_UID } from '../../volumes/index.js';
import { csiRestoreActions, CSI_CLAIM_ACTION, CSI_OBJECTS_ACTION, CSI_VOLUME_ACTION } from './csi.js';
import { takeChanges } from './mappings.js';
import { actionMatcher, resolveRestoreItemActions } from './selector.js';

const snap = { volumeSnapshot: 'vs', volumeSnapshotContent: 'snapcontent-1', snapshotHandle: 'h-1', driver: 'csi.a', volumeSnapshotClass: 'fast' };
const claim = (): KubeObject => ({
  apiVersion: 'v1', kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', namespace: 'shop', annotations: { [ANNOTATION_VOLUME_SNAPSHOT]: JSON.stringify(snap) } },
  spec: { volumeName: 'pv-1', storageClassName: 'stowage-csi' },
});
const volume: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-1' }, spec: { claimRef: { namespace: 'shop', name: 'data' }, csi: { driver: 'csi.a' } } };

// No request may reach a cluster in these cases: any call fails the test.
const noClient = new Proxy({}, { get: () => () => { throw new Error('no API call expected'); } }) as DynamicClient;

function actions(spec: { restorePVs?: boolean; dryRun?: boolean }, inPlan: KubeObject | undefined) {
  const warnings: string[] = [];
  const restore = newRestore('r', 'stowage', { backupName: 'b', ...spec });
  restore.metadata.uid = 'ruid';
  const list = csiRestoreActions({
    client: noClient, restore, dryRun: spec.dryRun === true, clock: systemClock, timeoutMs: 1000,
    claimInPlan: (ns, name) => Promise.resolve(ns === 'shop' && name === 'data' ? inPlan : undefined),
    warn: (ns, m) => warnings.push(`${ns}: ${m}`),
  });
  const by = (n: string) => list.find((a) => a.name === n)?.action;
  return { warnings, claimAction: by(CSI_CLAIM_ACTION), volumeAction: by(CSI_VOLUME_ACTION), list };
}

describe('restorePVs on a claim the backup snapshotted', () => {
  it('false: the claim comes back empty, bound to nothing, and a warning says its data is not restored', async () => {
    const { warnings, claimAction } = actions({ restorePVs: false }, claim());
    const out = await claimAction?.execute({ item: claim(), itemFromBackup: claim(), restore: {} as KubeObject });
    expect(out?.skipRestore).toBe(false);
    expect(out?.item.spec).toEqual({ storageClassName: 'stowage-csi' });
    expect(out?.item.metadata.annotations).toBeUndefined();
    expect(takeChanges(out?.item as KubeObject)).toEqual(['no data: not restored from its snapshot (restorePVs: false)']);
    expect(warnings).toEqual(['shop: persistentvolumeclaims shop/data: restored without its data (restorePVs is false): a new, empty volume is provisioned instead of one from snapshot h-1']);
  });

  it('unset, in a dry run: the claim as it would be written, from the VolumeSnapshot the restore would make, nothing created', async () => {
    const { warnings, claimAction } = actions({ dryRun: true }, claim());
    const out = await claimAction?.execute({ item: claim(), itemFromBackup: claim(), restore: {} as KubeObject });
    expect(out?.item.spec).toMatchObject({ storageClassName: 'stowage-csi', dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot' } });
    expect((out?.item.spec as Record<string, unknown>).volumeName).toBeUndefined();
    expect(takeChanges(out?.item as KubeObject)[0]).toMatch(/^data from snapshot h-1 \(would create VolumeSnapshot data-[0-9a-f]{10}\) \(CSI snapshot\)$/);
    expect(warnings).toEqual([]);
  });

  it('leaves a claim without a snapshot record as it is', async () => {
    const { claimAction } = actions({}, undefined);
    const plain: KubeObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'x', namespace: 'shop' }, spec: { volumeName: 'pv-9' } };
    const out = await claimAction?.execute({ item: plain, itemFromBackup: plain, restore: {} as KubeObject });
    expect(out?.item).toBe(plain);
  });
});

describe('what else the backup stored of a snapshot', () => {
  it('the old PersistentVolume of a snapshotted claim in the restore is skipped; others are restored', async () => {
    const { volumeAction } = actions({}, claim());
    expect((await volumeAction?.execute({ item: volume, itemFromBackup: volume, restore: {} as KubeObject }))?.skipRestore).toBe(true);
    const { volumeAction: notInPlan } = actions({}, undefined);
    expect((await notInPlan?.execute({ item: volume, itemFromBackup: volume, restore: {} as KubeObject }))?.skipRestore).toBe(false);
    const plainClaim = { ...claim(), metadata: { name: 'data', namespace: 'shop' } };
    const { volumeAction: noSnapshot } = actions({}, plainClaim);
    expect((await noSnapshot?.execute({ item: volume, itemFromBackup: volume, restore: {} as KubeObject }))?.skipRestore).toBe(false);
  });

  it('the backup\'s VolumeSnapshots and contents (labelled with its uid) are skipped; a user\'s own are not matched', async () => {
    const { list } = actions({}, undefined);
    const matchers = (await resolveRestoreItemActions(list)).map(actionMatcher);
    const objects = matchers.find((m) => m.name === CSI_OBJECTS_ACTION);
    const vs = { group: 'snapshot.storage.k8s.io', resource: 'volumesnapshots' };
    expect(objects?.applies({ resource: vs, namespace: 'shop', labels: { [LABEL_SNAPSHOT_BACKUP_UID]: 'u' } })).toBe(true);
    expect(objects?.applies({ resource: { group: 'snapshot.storage.k8s.io', resource: 'volumesnapshotcontents' }, namespace: '', labels: { [LABEL_SNAPSHOT_BACKUP_UID]: 'u' } })).toBe(true);
    expect(objects?.applies({ resource: vs, namespace: 'shop', labels: { app: 'mine' } })).toBe(false);
    const item: KubeObject = { apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshot', metadata: { name: 'v' } };
    expect((await objects?.action.execute({ item, itemFromBackup: item, restore: {} as KubeObject }))?.skipRestore).toBe(true);
  });
});
