import { describe, expect, it } from 'vitest';
import { ANNOTATION_SYNCED_FROM, LABEL_IMPORTED_FROM, LABEL_STORAGE_LOCATION } from '../apis/v1/index.js';
import { importVeleroBackup, isVeleroImport } from './veleroBackup.js';

const velero = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'velero.io/v1',
  kind: 'Backup',
  metadata: {
    name: 'nightly', namespace: 'velero', uid: 'u-1', resourceVersion: '9',
    labels: { 'velero.io/schedule-name': 'daily', 'stowage.dev/schedule-name': 'planted' },
    annotations: { 'velero.io/source-cluster-k8s-version': 'v1.29.2', 'stowage.dev/requester': 'planted' },
  },
  spec: {
    includedNamespaces: ['shop'], excludedResources: ['events'], includeClusterResources: false, ttl: '72h0m0s',
    labelSelector: { matchLabels: { app: 'shop' } }, snapshotVolumes: true, defaultVolumesToFsBackup: true, hooks: { resources: [] }, storageLocation: 'default',
  },
  status: {
    phase: 'Completed', formatVersion: '1.1.0', version: 1, startTimestamp: '2026-11-02T03:00:01Z', completionTimestamp: '2026-11-02T03:00:05Z',
    expiration: '2026-12-02T03:00:00Z', progress: { totalItems: 4, itemsBackedUp: 4 }, warnings: 1, volumeSnapshotsAttempted: 2, hookStatus: {},
  },
  ...over,
});

describe('importVeleroBackup', () => {
  it('maps the shared spec fields and the status, labels it imported, and keeps nothing in Stowage\'s domain from the file', () => {
    const got = importVeleroBackup(velero(), 'nightly', 'old-bucket', 'stowage');
    if ('refusal' in got) throw new Error(got.refusal);
    expect(got.backup.metadata).toEqual({
      name: 'nightly', namespace: 'stowage',
      labels: { 'velero.io/schedule-name': 'daily', [LABEL_STORAGE_LOCATION]: 'old-bucket', [LABEL_IMPORTED_FROM]: 'velero' },
      annotations: { 'velero.io/source-cluster-k8s-version': 'v1.29.2', [ANNOTATION_SYNCED_FROM]: 'old-bucket' },
    });
    // Snapshots, file-system backup and hooks are Velero's business: not carried into a spec Stowage would refuse.
    expect(got.backup.spec).toEqual({
      includedNamespaces: ['shop'], excludedResources: ['events'], includeClusterResources: false, ttl: '72h0m0s',
      labelSelector: { matchLabels: { app: 'shop' } }, storageLocation: 'old-bucket',
    });
    expect(got.status).toEqual({
      phase: 'Completed', formatVersion: '1.1.0', startTimestamp: '2026-11-02T03:00:01Z', completionTimestamp: '2026-11-02T03:00:05Z',
      expiration: '2026-12-02T03:00:00Z', progress: { totalItems: 4, itemsBackedUp: 4 }, warnings: 1,
    });
    expect(isVeleroImport(got.backup)).toBe(true);
  });

  it('leaves out fields of the wrong type rather than failing the import', () => {
    const got = importVeleroBackup(velero({
      spec: { includedNamespaces: 'shop', ttl: 5, labelSelector: { matchLabels: { a: 1 } } },
      status: { phase: 'PartiallyFailed', startTimestamp: 'yesterday', errors: -1, warnings: 2.5, progress: { totalItems: 'x' } },
    }), 'nightly', 'loc', 'ns');
    if ('refusal' in got) throw new Error(got.refusal);
    expect(got.backup.spec).toEqual({ storageLocation: 'loc' });
    expect(got.status).toEqual({ phase: 'PartiallyFailed' });
  });

  it.each([
    ['not an object', [], 'its velero-backup.json is not a JSON object'],
    ['another kind', velero({ kind: 'Restore' }), 'its velero-backup.json is "velero.io/v1"/"Restore", not a velero.io/v1 Backup'],
    ['another name', velero({ metadata: { name: 'other' } }), 'its velero-backup.json describes a backup named "other"'],
    ['a Failed backup', velero({ status: { phase: 'Failed' } }), 'Velero recorded it as Failed; only Completed and PartiallyFailed Velero backups are imported'],
    ['no phase', velero({ status: {} }), 'Velero recorded it as (no phase); only Completed and PartiallyFailed Velero backups are imported'],
    ['format 2', velero({ status: { phase: 'Completed', formatVersion: '2.0.0' } }), 'its tarball format "2.0.0" is not one Stowage reads (1.x)'],
  ])('refuses %s, saying why', (_what, raw, reason) => {
    expect(importVeleroBackup(raw, 'nightly', 'loc', 'ns')).toEqual({ refusal: reason });
  });

  it('tells imported Backups from others by the label alone', () => {
    expect(isVeleroImport({ metadata: { name: 'b' } })).toBe(false);
    expect(isVeleroImport({ metadata: { name: 'b', labels: { [LABEL_IMPORTED_FROM]: 'velero' } } })).toBe(true);
  });
});
