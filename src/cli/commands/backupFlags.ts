// The flags that describe a backup's spec, defined once for `backup create` and `schedule create`
// (a schedule's template is a backup spec): the filters, --ttl, --storage-location,
// --snapshot-volumes, --csi-snapshot-timeout, and --labels (on the backup, or on the schedule, whose backups copy them).
import { Option, type Command } from 'commander';
import type { BackupSpec } from '../../apis/v1/index.js';
import { formatDuration, parseDuration } from '../../util/duration.js';
import { errorMessage } from '../../util/errors.js';
import { labelKeyProblem, labelValueProblem } from '../../selection/labels.js';
import { UsageError } from './errors.js';
import { addFilterFlags, filterSpec, hasFilterFlags, keyValueList, parseBool, type FilterFlags } from './flags.js';

export interface BackupSpecFlags extends FilterFlags {
  ttl?: string;
  storageLocation?: string;
  labels?: Record<string, string>;
  snapshotVolumes?: string | boolean;
  csiSnapshotTimeout?: string;
}

/** Adds the backup-spec flags; `labelsOf` says whose labels --labels sets. */
export function addBackupSpecFlags(cmd: Command, labelsOf: string): Command {
  return addFilterFlags(cmd, 'backup')
    .option('--ttl <duration>', 'how long to keep the backup, e.g. 72h or 720h0m0s (default: the server\'s, 720h)')
    .option('--storage-location <name>', 'backup storage location to write to (default: the default location)')
    .addOption(new Option('--snapshot-volumes [bool]', 'take a CSI snapshot of each bound volume in scope whose driver has a VolumeSnapshotClass (default true; false takes none)'))
    .option('--csi-snapshot-timeout <duration>', 'how long to wait for each CSI snapshot to become ready (default 10m)')
    .option('--labels <labels>', `labels for ${labelsOf}, e.g. team=a,env=prod`, keyValueList('labels', '='));
}

/** True when any flag that shapes the spec was given (--from-schedule takes none). */
export function hasBackupSpecFlags(f: BackupSpecFlags): boolean {
  return hasFilterFlags(f) || f.ttl !== undefined || f.storageLocation !== undefined || f.snapshotVolumes !== undefined || f.csiSnapshotTimeout !== undefined;
}

export function checkLabels(labels: Record<string, string> | undefined): Record<string, string> | undefined {
  for (const [k, v] of Object.entries(labels ?? {})) {
    const p = labelKeyProblem(k) ?? labelValueProblem(v);
    if (p !== undefined) throw new UsageError(`--labels: ${p}`);
  }
  return labels;
}

/** The backup spec the flags describe. */
export function backupSpecFromFlags(f: BackupSpecFlags): BackupSpec {
  const spec: BackupSpec = filterSpec(f);
  if (f.ttl !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(f.ttl, '--ttl');
    } catch (err) {
      throw new UsageError(errorMessage(err));
    }
    if (ms < 0) throw new UsageError('--ttl must not be negative');
    spec.ttl = formatDuration(ms);
  }
  if (f.storageLocation !== undefined) spec.storageLocation = f.storageLocation;
  const snap = parseBool('snapshot-volumes', f.snapshotVolumes);
  if (snap !== undefined) spec.snapshotVolumes = snap;
  if (f.csiSnapshotTimeout !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(f.csiSnapshotTimeout, '--csi-snapshot-timeout');
    } catch (err) {
      throw new UsageError(errorMessage(err));
    }
    if (ms <= 0) throw new UsageError('--csi-snapshot-timeout must be above zero');
    spec.csiSnapshotTimeout = formatDuration(ms);
  }
  return spec;
}
