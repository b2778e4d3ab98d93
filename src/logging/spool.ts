// The log spool: run logs whose upload failed wait here, on disk, until storage is back.
// Each spooled log is a data file plus a JSON sidecar naming where it must go, so a restarted
// server picks up where the old one stopped. A canceled run's clean-up that could not reach the
// store waits here too: a sidecar whose target says `delete` (its data file is empty).

import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, readdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type winston from 'winston';
import { errorMessage, sanitizeMessage } from '../util/errors.js';

/** Where a spooled log must be uploaded: a BackupStorageLocation name and an object key. */
export interface SpoolTarget {
  location: string;
  key: string;
  /** 'delete': the key is deleted rather than written (a canceled backup's partial tarball). */
  action?: 'delete';
  /** With 'delete': left alone when this key exists (a later backup of the same name completed there). */
  unlessKey?: string;
}

export interface SpooledLog {
  id: string;
  /** The data file inside the spool directory. */
  file: string;
  target: SpoolTarget;
  keptAt: string;
  attempts: number;
  lastError?: string;
}

export interface SpoolFlushResult {
  uploaded: SpooledLog[];
  failed: SpooledLog[];
  /** Entries the store refused for good (an error whose `code` is 'Refused'): removed, never retried. */
  dropped: SpooledLog[];
}

/** Whether the store refused the request for good (plugin/api: an error whose `code` is 'Refused'). */
export function isRefused(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === 'Refused') return true;
  }
  return false;
}

/** The run a key belongs to (`backup <b>`, `restore <r>`), from the layout's `backups/<b>/`, `restores/<r>/`. */
export function runOfKey(key: string): string {
  const m = /(?:^|\/)(backups|restores)\/([^/]+)\//.exec(key);
  return m === null ? `the run of key ${key}` : `${m[1] === 'backups' ? 'backup' : 'restore'} ${m[2]}`;
}

export type SpoolUpload = (file: string, target: SpoolTarget) => Promise<void>;

const SIDECAR = '.spool.json';

interface Sidecar {
  version: 1;
  id: string;
  dataFile: string;
  target: SpoolTarget;
  keptAt: string;
  attempts: number;
  lastError?: string;
}

function isSidecar(v: unknown): v is Sidecar {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  const t = r.target as Record<string, unknown> | undefined;
  return (
    r.version === 1 &&
    typeof r.id === 'string' &&
    typeof r.dataFile === 'string' &&
    typeof r.keptAt === 'string' &&
    typeof r.attempts === 'number' &&
    typeof t === 'object' &&
    t !== null &&
    typeof t.location === 'string' &&
    typeof t.key === 'string'
  );
}

let spoolSequence = 0;

async function writeFileAtomic(file: string, data: string): Promise<void> {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    // Different filesystem (e.g. scratch dir vs. spool volume): copy, then remove the original. A
    // copy cut short (a full spool disk) is removed: the original is still whole.
    try {
      await copyFile(from, to);
    } catch (copyErr) {
      await rm(to, { force: true });
      throw copyErr;
    }
    await unlink(from);
  }
}

export class LogSpool {
  private flushing: Promise<SpoolFlushResult> | undefined;

  constructor(
    readonly dir: string,
    private readonly logger: winston.Logger,
  ) {}

  /**
   * Moves `file` into the spool with a sidecar naming its target, and says so in the server log.
   * The original path no longer exists afterwards.
   */
  async keep(file: string, target: SpoolTarget): Promise<SpooledLog> {
    await mkdir(this.dir, { recursive: true });
    // Sorted by name, entries flush in the order kept: the sequence orders two kept in the same millisecond.
    const id = `${Date.now().toString().padStart(15, '0')}-${(spoolSequence++).toString().padStart(6, '0')}-${randomBytes(4).toString('hex')}`;
    const dataFile = `${id}-${path.basename(file)}`;
    const dest = path.join(this.dir, dataFile);
    await moveFile(file, dest);
    const sidecar: Sidecar = { version: 1, id, dataFile, target, keptAt: new Date().toISOString(), attempts: 0 };
    try {
      // Written after the data so that a sidecar always has its data file.
      await writeFileAtomic(path.join(this.dir, `${dataFile}${SIDECAR}`), JSON.stringify(sidecar, null, 2));
    } catch (err) {
      // A data file without its sidecar would never be uploaded: put the log back where it was, so
      // the caller can say where it is (a full spool disk must not lose it).
      await moveFile(dest, file).catch(() => undefined);
      throw err;
    }
    if (target.action === 'delete') {
      this.logger.warn('the object store could not be reached to delete an object; the deletion is kept in the spool and done when storage is back', {
        location: target.location,
        key: target.key,
      });
    } else {
      this.logger.warn('log upload failed; the log is kept in the spool and will be uploaded when storage is back', {
        spooledFile: dest,
        location: target.location,
        key: target.key,
      });
    }
    return { id, file: dest, target, keptAt: sidecar.keptAt, attempts: 0 };
  }

  /**
   * Spools the deletion of `target.key` (see SpoolTarget.action), done in order with the uploads
   * when the location is back.
   */
  async keepDelete(target: Omit<SpoolTarget, 'action'>): Promise<SpooledLog> {
    await mkdir(this.dir, { recursive: true });
    const empty = path.join(this.dir, `delete-${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(empty, '');
    return this.keep(empty, { ...target, action: 'delete' });
  }

  /** Spooled logs, oldest first. */
  async list(): Promise<SpooledLog[]> {
    return (await this.readSidecars()).map(({ sidecar }) => this.toSpooled(sidecar));
  }

  /**
   * Tries to upload every spooled log, oldest first; each success removes the log from the spool,
   * each failure is logged and kept for the next flush. Concurrent calls share one pass.
   */
  flush(upload: SpoolUpload): Promise<SpoolFlushResult> {
    this.flushing ??= this.flushOnce(upload).finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async flushOnce(upload: SpoolUpload): Promise<SpoolFlushResult> {
    const result: SpoolFlushResult = { uploaded: [], failed: [], dropped: [] };
    for (const { sidecar, sidecarPath } of await this.readSidecars()) {
      const spooled = this.toSpooled(sidecar);
      try {
        await upload(spooled.file, sidecar.target);
      } catch (err) {
        const reason = sanitizeMessage(errorMessage(err));
        if (isRefused(err)) {
          // Retrying cannot help: say so once, naming the run and why, and stop carrying the entry.
          await rm(spooled.file, { force: true });
          await rm(sidecarPath, { force: true });
          this.logger.warn(`the object store refuses ${sidecar.target.action === 'delete' ? 'a spooled deletion' : 'a spooled log'} of ${runOfKey(sidecar.target.key)} for good; gave it up`, {
            location: sidecar.target.location,
            key: sidecar.target.key,
            attempts: sidecar.attempts + 1,
            error: reason,
          });
          result.dropped.push(spooled);
          continue;
        }
        const updated: Sidecar = { ...sidecar, attempts: sidecar.attempts + 1, lastError: reason };
        await writeFileAtomic(sidecarPath, JSON.stringify(updated, null, 2)).catch(() => undefined);
        this.logger.warn('spooled log upload failed; will retry', {
          spooledFile: spooled.file,
          location: sidecar.target.location,
          key: sidecar.target.key,
          attempts: updated.attempts,
          error: reason,
        });
        result.failed.push(this.toSpooled(updated));
        continue;
      }
      // Sidecar last: if we die in between, the next flush uploads the same log again (harmless).
      await rm(spooled.file, { force: true });
      await rm(sidecarPath, { force: true });
      this.logger.info(sidecar.target.action === 'delete' ? 'did a spooled deletion' : 'uploaded spooled log', {
        location: sidecar.target.location,
        key: sidecar.target.key,
        attempts: sidecar.attempts + 1,
      });
      result.uploaded.push(spooled);
    }
    return result;
  }

  private toSpooled(s: Sidecar): SpooledLog {
    const out: SpooledLog = {
      id: s.id,
      file: path.join(this.dir, s.dataFile),
      target: s.target,
      keptAt: s.keptAt,
      attempts: s.attempts,
    };
    if (s.lastError !== undefined) out.lastError = s.lastError;
    return out;
  }

  private async readSidecars(): Promise<Array<{ sidecar: Sidecar; sidecarPath: string }>> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const present = new Set(names);
    const out: Array<{ sidecar: Sidecar; sidecarPath: string }> = [];
    for (const n of names.filter((x) => x.endsWith(SIDECAR)).sort()) {
      const sidecarPath = path.join(this.dir, n);
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readFile(sidecarPath, 'utf8'));
      } catch (err) {
        this.logger.warn('ignoring unreadable log spool entry', { file: sidecarPath, error: errorMessage(err) });
        continue;
      }
      // The data file must be ours: a bare name inside the spool directory.
      if (!isSidecar(parsed) || parsed.dataFile !== path.basename(parsed.dataFile) || `${parsed.dataFile}${SIDECAR}` !== n) {
        this.logger.warn('ignoring malformed log spool entry', { file: sidecarPath });
        continue;
      }
      if (!present.has(parsed.dataFile)) {
        this.logger.warn('log spool entry has lost its data file; removing the entry', {
          file: sidecarPath,
          location: parsed.target.location,
          key: parsed.target.key,
        });
        await rm(sidecarPath, { force: true });
        continue;
      }
      out.push({ sidecar: parsed, sidecarPath });
    }
    return out;
  }
}
