// Test-only fault hook: crash points at a backup's commit points. With the environment variable
// STOWAGE_FAULT_CRASH_AT set to a point's name, the server kills itself with SIGKILL when a run
// reaches that point, so integration tests can check what a real crash there leaves behind (see
// test/controller/crashPoints.test.ts). Unset, as in every deployment, a crash point does nothing.
import fs from 'node:fs';

/** The commit points of a backup, in the order a run reaches them. */
export const CRASH_POINTS = ['before-tarball', 'after-tarball', 'after-marker', 'after-status'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export const CRASH_AT_ENV = 'STOWAGE_FAULT_CRASH_AT';

export function crashPoint(name: CrashPoint): void {
  if (process.env[CRASH_AT_ENV] !== name) return;
  // A synchronous write: the line must reach stderr before the process is gone.
  fs.writeSync(2, `stowage: fault hook ${CRASH_AT_ENV}=${name}: killing the server with SIGKILL\n`);
  process.kill(process.pid, 'SIGKILL');
}
