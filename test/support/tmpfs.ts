// A tiny tmpfs for disk-full tests: mount/umount need root (or passwordless sudo), which the test
// machines give; elsewhere the command fails and says why.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

function asRoot(cmd: string, args: string[]): void {
  if (process.getuid?.() === 0) execFileSync(cmd, args);
  else execFileSync('sudo', ['-n', cmd, ...args]);
}

export function mountTmpfs(dir: string, size: string): void {
  asRoot('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
}

export function unmount(dir: string): void {
  asRoot('umount', ['-l', dir]);
}

/** Writes `file` until the file system is full. */
export function fillUp(file: string): void {
  const fd = fs.openSync(file, 'w');
  try {
    const chunk = Buffer.alloc(4096, 1);
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
}
