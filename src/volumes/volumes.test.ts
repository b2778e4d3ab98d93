// The pure parts of CSI snapshots: which class (Velero's rules, snapshotVolumes' choice per claim),
// the names, the record on the backed-up claim and the claim a restore writes.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/index.js';
import { ANNOTATION_VOLUME_SNAPSHOT, snapshotOfClaim, creationTimeText, statusError } from './api.js';
import { chooseSnapshotClass } from './classes.js';
import { claimFromSnapshot, emptyClaim, restoredSnapshotNames } from './restore.js';
import { snapshotName } from './take.js';

const cls = (name: string, driver: string, labelled = false): KubeObject => ({
  apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotClass', driver,
  metadata: { name, ...(labelled ? { labels: { 'velero.io/csi-volumesnapshot-class': 'true' } } : {}) },
});

describe('the VolumeSnapshotClass a claim is snapshotted with (snapshotVolumes), as Velero 1.14+ picks it', () => {
  const classes = [cls('fast', 'csi.a', true), cls('slow', 'csi.a'), cls('other', 'csi.b', true), cls('b2', 'csi.b')];

  it('takes the one class of the driver labelled velero.io/csi-volumesnapshot-class=true', () => {
    expect(chooseSnapshotClass('csi.a', undefined, undefined, classes)).toEqual({ name: 'fast', by: 'the label velero.io/csi-volumesnapshot-class=true' });
    expect(chooseSnapshotClass('csi.b', {}, {}, classes)).toMatchObject({ name: 'other' });
  });

  it('prefers the claim\'s annotation, then the Backup\'s per-driver annotation, to the label', () => {
    const backup = { 'velero.io/csi-volumesnapshot-class_csi.a': 'slow', 'velero.io/csi-volumesnapshot-class_csi.b': 'b2' };
    expect(chooseSnapshotClass('csi.a', undefined, backup, classes)).toEqual({ name: 'slow', by: 'the Backup\'s annotation velero.io/csi-volumesnapshot-class_csi.a' });
    // The annotation of another driver does not apply.
    expect(chooseSnapshotClass('csi.a', undefined, { 'velero.io/csi-volumesnapshot-class_csi.b': 'b2' }, classes)).toMatchObject({ name: 'fast' });
    expect(chooseSnapshotClass('csi.a', { 'velero.io/csi-volumesnapshot-class': 'fast' }, backup, classes)).toEqual({ name: 'fast', by: 'the claim\'s annotation velero.io/csi-volumesnapshot-class' });
  });

  it('refuses a named class that is missing or of another driver, and a label on two classes of one driver', () => {
    expect(chooseSnapshotClass('csi.a', { 'velero.io/csi-volumesnapshot-class': 'gone' }, undefined, classes))
      .toEqual({ error: 'the claim\'s annotation velero.io/csi-volumesnapshot-class names VolumeSnapshotClass "gone", which does not exist' });
    expect(chooseSnapshotClass('csi.a', undefined, { 'velero.io/csi-volumesnapshot-class_csi.a': 'other' }, classes))
      .toEqual({ error: 'the Backup\'s annotation velero.io/csi-volumesnapshot-class_csi.a names VolumeSnapshotClass "other", whose driver is csi.b, not the volume\'s csi.a' });
    expect(chooseSnapshotClass('csi.a', undefined, undefined, [...classes, cls('fast2', 'csi.a', true)])).toEqual({
      error: 'VolumeSnapshotClasses "fast", "fast2" of driver csi.a are all labelled velero.io/csi-volumesnapshot-class=true; label one, or name one with the Backup\'s annotation velero.io/csi-volumesnapshot-class_csi.a',
    });
  });

  it('says there is none for a driver without a labelled class (the claim is then named in a warning)', () => {
    expect(chooseSnapshotClass('csi.c', undefined, undefined, classes)).toEqual({
      none: 'no VolumeSnapshotClass of driver csi.c is labelled velero.io/csi-volumesnapshot-class=true (nor named by the claim\'s annotation velero.io/csi-volumesnapshot-class or the Backup\'s velero.io/csi-volumesnapshot-class_csi.c)',
    });
  });
});

describe('names of the snapshot objects', () => {
  it('are valid object names, stable per key, distinct per key', () => {
    const n = snapshotName('data-web-0', 'uid-1/ns/data-web-0');
    expect(n).toMatch(/^data-web-0-[0-9a-f]{10}$/);
    expect(snapshotName('data-web-0', 'uid-1/ns/data-web-0')).toBe(n);
    expect(snapshotName('data-web-0', 'uid-2/ns/data-web-0')).not.toBe(n);
    // Long names and dots: at most 51 characters, each DNS label starting and ending alphanumeric.
    const long = snapshotName(`${'a'.repeat(39)}.-b`, 'k');
    expect(long.length).toBeLessThanOrEqual(51);
    expect(long).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    const r = restoredSnapshotNames('ruid', 'ns', 'data-web-0');
    expect(r.content).toMatch(/^stowage-[0-9a-f]{24}$/);
    expect(restoredSnapshotNames('ruid', 'other', 'data-web-0').content).not.toBe(r.content);
  });
});

const snap = { volumeSnapshot: 'vs', volumeSnapshotContent: 'snapcontent-1', snapshotHandle: 'h-1', driver: 'csi.a', volumeSnapshotClass: 'fast', restoreSize: '1073741824' };

describe('the snapshot record on a backed-up claim', () => {
  it('reads back what the backup wrote, and names what is missing or malformed', () => {
    const pvc: KubeObject = { metadata: { name: 'c', annotations: { [ANNOTATION_VOLUME_SNAPSHOT]: JSON.stringify(snap) } } };
    expect(snapshotOfClaim(pvc)).toEqual(snap);
    expect(snapshotOfClaim({ metadata: { name: 'c' } })).toBeUndefined();
    expect(() => snapshotOfClaim({ metadata: { name: 'c', annotations: { [ANNOTATION_VOLUME_SNAPSHOT]: '{' } } })).toThrow('its annotation stowage.dev/volume-snapshot is not JSON');
    expect(() => snapshotOfClaim({ metadata: { name: 'c', annotations: { [ANNOTATION_VOLUME_SNAPSHOT]: '{"driver":"d"}' } } }))
      .toThrow('its annotation stowage.dev/volume-snapshot lacks volumeSnapshot, volumeSnapshotContent, snapshotHandle, volumeSnapshotClass');
  });

  it('reads the controller\'s error and the content\'s creation time (nanoseconds)', () => {
    expect(statusError({ status: { error: { message: 'driver says no', time: 'x' } } })).toBe('driver says no');
    expect(statusError({ status: { readyToUse: false } })).toBeUndefined();
    expect(creationTimeText(1_767_225_600_000_000_000)).toBe('2026-01-01T00:00:00.000Z');
    expect(creationTimeText(undefined)).toBeUndefined();
  });
});

describe('the claim a restore writes (restorePVs)', () => {
  const stored: KubeObject = {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim',
    metadata: { name: 'data-web-0', namespace: 'shop', annotations: { [ANNOTATION_VOLUME_SNAPSHOT]: JSON.stringify(snap), keep: 'me' } },
    spec: { storageClassName: 'stowage-csi', volumeName: 'pvc-123', resources: { requests: { storage: '1Gi' } }, dataSourceRef: { kind: 'Old', name: 'x' } },
  };

  it('from the snapshot: no volumeName, the VolumeSnapshot as dataSource, the record gone', () => {
    expect(claimFromSnapshot(stored, 'data-web-0-abc')).toEqual({
      apiVersion: 'v1', kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-web-0', namespace: 'shop', annotations: { keep: 'me' } },
      spec: { storageClassName: 'stowage-csi', resources: { requests: { storage: '1Gi' } }, dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'data-web-0-abc' } },
    });
    // The stored object is not changed.
    expect((stored.spec as Record<string, unknown>).volumeName).toBe('pvc-123');
  });

  it('restorePVs false: a new, empty claim (no volumeName, no data source)', () => {
    const c: KubeObject = emptyClaim({ ...stored, metadata: { ...stored.metadata, annotations: { [ANNOTATION_VOLUME_SNAPSHOT]: JSON.stringify(snap) } } });
    expect(c.metadata?.annotations).toBeUndefined();
    expect(c.spec).toEqual({ storageClassName: 'stowage-csi', resources: { requests: { storage: '1Gi' } } });
  });
});
