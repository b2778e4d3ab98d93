// Every cache a controller reads is in its `watches`, so it has synced before the workers start
// (runtime/controller.ts waits on each source). A restore reconciled at failover once found its
// Backup "missing" because only the Restore informer had synced.
import { describe, expect, it } from 'vitest';
import type { StowageKind } from '../apis/v1/index.js';
import { DEFAULT_CONFIG } from '../config/index.js';
import type { KubeObject } from '../kube/index.js';
import type { Informer, WatchSource } from '../runtime/index.js';
import { fixedClock } from '../util/clock.js';
import { backupController } from './backup.js';
import { backupStorageLocationController } from './backupStorageLocation.js';
import { backupSyncController } from './backupSync.js';
import type { ControllerContext, ControllerDefinition } from './run/context.js';
import { deleteBackupRequestController } from './deleteBackupRequest.js';
import { downloadRequestController } from './downloadRequest.js';
import { gcController } from './gc.js';
import { restoreController } from './restore.js';
import { restoreArtifactsController } from './restoreArtifacts.js';
import { scheduleController } from './schedule.js';
import { serverStatusRequestController } from './serverStatusRequest.js';
import { volumeSnapshotLocationController } from './volumeSnapshotLocation.js';

/** The kinds each controller's reconcile reads from a shared cache (its own included). */
const READS: [string, (ctx: ControllerContext) => ControllerDefinition, StowageKind[]][] = [
  ['backup', backupController, ['Backup', 'BackupStorageLocation']],
  ['restore', restoreController, ['Restore', 'Backup', 'BackupStorageLocation']],
  ['download-request', downloadRequestController, ['DownloadRequest', 'BackupStorageLocation', 'Backup']],
  ['schedule', scheduleController, ['Schedule', 'Backup']],
  ['backup-sync', backupSyncController, ['BackupStorageLocation', 'Backup']],
  ['delete-backup-request', deleteBackupRequestController, ['DeleteBackupRequest', 'BackupStorageLocation', 'Restore']],
  ['gc', gcController, ['Backup', 'BackupStorageLocation', 'Schedule', 'DeleteBackupRequest']],
  ['backup-storage-location', backupStorageLocationController, ['BackupStorageLocation']],
  ['server-status-request', serverStatusRequestController, ['ServerStatusRequest']],
  ['restore-artifacts', restoreArtifactsController, ['Restore', 'Backup', 'BackupStorageLocation']],
  ['volume-snapshot-location', volumeSnapshotLocationController, ['VolumeSnapshotLocation']],
];

function contextWithTaggedInformers(): { ctx: ControllerContext; kindOf: Map<unknown, StowageKind> } {
  const kindOf = new Map<unknown, StowageKind>();
  const byKind = new Map<StowageKind, Informer<KubeObject>>();
  const informer = (kind: StowageKind): Informer<KubeObject> => {
    let inf = byKind.get(kind);
    if (inf === undefined) {
      // Constructing a controller only takes informers; nothing here is started or read.
      inf = { list: () => [], get: () => undefined, keys: () => [] } as unknown as Informer<KubeObject>;
      byKind.set(kind, inf);
      kindOf.set(inf, kind);
    }
    return inf;
  };
  // Construction reads the namespace, config, clock and informers, nothing else of the context.
  const ctx = { namespace: 'stowage', config: { ...DEFAULT_CONFIG, namespace: 'stowage' }, clock: fixedClock(new Date(0)), informer } as unknown as ControllerContext;
  return { ctx, kindOf };
}

describe('controller watches', () => {
  it.each(READS)('%s syncs every cache it reads before it reconciles', (_name, factory, reads) => {
    const { ctx, kindOf } = contextWithTaggedInformers();
    const def = factory(ctx);
    const watched = def.watches.map((w) => kindOf.get((w as WatchSource).informer ?? w));
    expect(new Set(watched)).toEqual(new Set(reads));
  });
});
