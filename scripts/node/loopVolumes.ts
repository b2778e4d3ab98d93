// The CSI test driver's file-system volumes (scripts/csi/driver/filesystem.go): with the StorageClass
// parameter below, each volume is an ext4 image on a loop device, mounted on its directory under the
// driver's root, so a pod may fsfreeze it. The driver undoes one in DeleteVolume; this undoes what
// is left when the stack stops (a namespace never deleted, a test that failed half way).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The StorageClass parameter the driver reads in CreateVolume: "ext4" makes each volume its own file system. */
export const FILESYSTEM_PARAMETER = 'stowage.test/filesystem';

/** Mount points of `/proc/self/mountinfo` under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const prefix = `${dir}/`;
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\040/g, ' '))
    .filter((m) => m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/** Loop devices whose backing file is under `dir`. */
export function loopDevicesUnder(dir: string): string[] {
  const r = spawnSync('losetup', ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' });
  if (r.status !== 0) return [];
  return r.stdout.split('\n').map((l) => l.split(' ')).filter(([, file]) => file?.startsWith(`${dir}/`) === true).map(([dev]) => dev ?? '');
}

/**
 * Thaws, unmounts and detaches every file-system volume under the driver's `root`; resolves what
 * could not be undone. Thawing touches only these per-volume loop mounts: a pod's fsfreeze whose
 * post hook never ran would otherwise keep the file system, and so its loop device, busy for good.
 */
export function releaseLoopVolumes(root: string): string[] {
  const problems: string[] = [];
  const volumes = path.join(root, 'volumes');
  for (const m of mountsUnder(volumes)) {
    // "Invalid argument" when it is not frozen, the usual case.
    spawnSync('fsfreeze', ['--unfreeze', m], { encoding: 'utf8' });
    const r = spawnSync('umount', [m], { encoding: 'utf8' });
    if (r.status !== 0) problems.push(`umount ${m}: ${r.stderr.trim()}`);
  }
  for (const dev of loopDevicesUnder(volumes)) {
    const r = spawnSync('losetup', ['--detach', dev], { encoding: 'utf8' });
    if (r.status !== 0) problems.push(`losetup --detach ${dev}: ${r.stderr.trim()}`);
  }
  return problems;
}
