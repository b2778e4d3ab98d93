// Sweeping what killed uploads leave in a filesystem location: the temp files a write goes to
// before its rename (TEMP_PREFIX). A temp file is removed when no live writer can own it: this
// process does not hold it open, and it was last written before this process started (its writer
// was a previous plugin process, which is gone: the host runs one process per executable) or so
// long ago that no upload can still be writing it (a stalled upload is cancelled far sooner).
// Each location is swept when its store is initialised (a restarted plugin process replays Init)
// and then every SWEEP_INTERVAL_MS, for what other writers of a shared root leave.
import fs from 'node:fs/promises';
import path from 'node:path';
import { TEMP_PREFIX } from './keys.js';

/** Older than any live upload's temp file can be without a write. */
export const STALE_TEMP_AGE_MS = 3600_000;

/** When this process started. */
export const PROCESS_START_MS = Date.now() - Math.round(process.uptime() * 1000);

/** How often initialised locations are swept again. */
export const SWEEP_INTERVAL_MS = 600_000;

/** Temp files this process is writing now. */
export const heldTempFiles = new Set<string>();

export interface TempSweepOptions {
  processStartMs?: number;
  nowMs?: number;
  staleAgeMs?: number;
}

/** Removes stale temp files under `dir` (recursively); resolves with the paths removed. */
export async function sweepTempFiles(dir: string, o: TempSweepOptions = {}): Promise<string[]> {
  const processStart = o.processStartMs ?? PROCESS_START_MS;
  const now = o.nowMs ?? Date.now();
  const staleAge = o.staleAgeMs ?? STALE_TEMP_AGE_MS;
  const removed: string[] = [];
  const walk = async (d: string): Promise<void> => {
    let entries;
    try {
      entries = await fs.readdir(d, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw err;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        await walk(p);
        continue;
      }
      if (!e.isFile() || !e.name.startsWith(TEMP_PREFIX) || heldTempFiles.has(p)) continue;
      let mtime: number;
      try {
        mtime = (await fs.stat(p)).mtimeMs;
      } catch {
        continue; // renamed or removed by its writer meanwhile
      }
      if (mtime >= processStart && now - mtime <= staleAge) continue;
      await fs.rm(p, { force: true });
      removed.push(p);
    }
  };
  await walk(dir);
  return removed;
}

const scheduled = new Map<string, (removed: string[], err?: Error) => void>();
let timer: NodeJS.Timeout | undefined;

/**
 * Sweeps `dir` again every SWEEP_INTERVAL_MS (once per directory, however many stores use it),
 * reporting what each sweep removed or why it failed. The timer does not keep the process alive.
 */
export function scheduleSweep(dir: string, report: (removed: string[], err?: Error) => void): void {
  scheduled.set(dir, report);
  if (timer !== undefined) return;
  timer = setInterval(() => {
    for (const [d, rep] of scheduled) {
      sweepTempFiles(d).then((removed) => rep(removed), (err: unknown) => rep([], err as Error));
    }
  }, SWEEP_INTERVAL_MS);
  timer.unref();
}
