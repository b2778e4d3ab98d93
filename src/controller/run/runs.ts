// Plumbing shared by the backup and restore controllers: the run's own log, its upload (or the
// spool when storage is down), throttled progress patches and timestamps.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BackupStorageLocation } from '../../apis/v1/index.js';
import { createRunLogger, isRefused, runOfKey, type RunKind, type RunLog } from '../../logging/index.js';
import { errorMessage, safeErrorMessage } from '../../util/errors.js';
import type { ActiveRun, ControllerContext } from './context.js';
import { withBackupStore, writeRefusal } from '../../storage/open.js';

export function stamp(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

export function openRunLog(ctx: ControllerContext, kind: RunKind, namespace: string, name: string): RunLog {
  const log = createRunLogger({ server: ctx.logger, kind, namespace, name, dir: ctx.runLogDir });
  return log;
}

/** Registers a run so the server can show its live log and abort it on shutdown. */
export function registerRun(ctx: ControllerContext, kind: RunKind, namespace: string, name: string, log: RunLog, abort: AbortController): { finish(): void } {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const run: ActiveRun = {
    kind, namespace, name,
    logPath: log.path,
    linesSoFar: () => log.linesSoFar(),
    follow: (cb, opts) => log.follow(cb, opts),
    abort: (reason) => abort.abort(typeof reason === 'string' ? new Error(reason) : reason),
    done,
  };
  ctx.runs.add(run);
  return {
    finish: () => {
      ctx.runs.remove(kind, namespace, name);
      finish();
    },
  };
}

/**
 * Uploads a closed run log with `put`; when that fails the log goes to the spool, to be uploaded
 * once the location is reachable again, and the server log says where it is kept. Rejects when the
 * spool cannot take it either (a full disk): the file then stays at its run-log path.
 */
export async function uploadRunLog(
  ctx: ControllerContext, log: Pick<RunLog, 'path'>, location: string, key: string, put: (file: string) => Promise<void>,
  seal?: (body: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>,
): Promise<'uploaded' | 'spooled' | 'refused'> {
  try {
    await put(log.path);
  } catch (err) {
    const why = safeErrorMessage(err);
    if (isRefused(err)) {
      // The store will never take this key: spooling it would only retry forever. Its lines went to the server log as written.
      fs.rmSync(log.path, { force: true });
      ctx.logger.warn(`the run log of ${runOfKey(key)} is not stored: location ${location} refuses it for good (${why}); its lines are in this server log only`, { location, key });
      return 'refused';
    }
    // The spool uploads its files as they are, so an encrypted location's log is kept sealed.
    let spooled = log.path;
    if (seal !== undefined) {
      spooled = `${log.path}.sealed`;
      await pipeline(Readable.from(seal(fs.createReadStream(log.path))), fs.createWriteStream(spooled, { mode: 0o600 }));
      fs.rmSync(log.path, { force: true });
    }
    const kept = await ctx.spool.keep(spooled, { location, key }).catch((spoolErr: unknown) => {
      throw new Error(`the run log could not be uploaded (${why}) nor kept in the spool (${safeErrorMessage(spoolErr)}); it stays at ${spooled}`, { cause: spoolErr });
    });
    ctx.logger.warn(`could not upload the run log to location ${location} (${why}); kept it at ${kept.file} and will upload it when the location is available`, { location, key });
    return 'spooled';
  }
  fs.rmSync(log.path, { force: true });
  return 'uploaded';
}

/** Keeps an artifact's bytes (already sealed when the location encrypts) in the spool, uploaded to `key` when `location` is back. */
export async function spoolArtifact(ctx: ControllerContext, location: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
  const file = path.join(ctx.runLogDir, `artifact-${randomBytes(6).toString('hex')}.gz`);
  try {
    await pipeline(Readable.from(body), fs.createWriteStream(file, { mode: 0o600 }));
    await ctx.spool.keep(file, { location, key });
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** Uploads every spooled log that belongs to `bsl` (called when the location is Available). */
export async function flushSpool(ctx: ControllerContext, bsl: BackupStorageLocation): Promise<void> {
  const pending = (await ctx.spool.list()).filter((s) => s.target.location === bsl.metadata.name);
  if (pending.length === 0) return;
  const refusal = writeRefusal(bsl);
  if (refusal !== undefined) {
    // Its runs write nothing there (lifecycle.ts, staleRuns.ts): a spooled log for it is not uploaded.
    ctx.logger.warn(`${pending.length} spooled run log(s) for location ${bsl.metadata.name} are not uploaded: ${refusal}`);
    return;
  }
  try {
    await withBackupStore(ctx, bsl, { kind: 'controller', namespace: ctx.namespace, name: `log-spool/${bsl.metadata.name}` }, async ({ objectStore: store }) => {
      const bucket = bsl.spec.objectStorage.bucket;
      const result = await ctx.spool.flush(async (file, target) => {
        if (target.location !== bsl.metadata.name) throw new Error(`waiting for location ${target.location}`);
        if (target.action !== 'delete') return store.putObject(bucket, target.key, fs.createReadStream(file));
        if (target.unlessKey !== undefined && await store.objectExists(bucket, target.unlessKey)) return;
        await store.deleteObject(bucket, target.key);
      });
      const deleted = result.uploaded.filter((s) => s.target.action === 'delete').length;
      const uploaded = result.uploaded.length - deleted;
      if (uploaded > 0) ctx.logger.info(`uploaded ${uploaded} spooled run log(s) to location ${bsl.metadata.name}`);
      if (deleted > 0) ctx.logger.info(`deleted ${deleted} spooled object(s) of canceled runs from location ${bsl.metadata.name}`);
    });
  } catch (err) {
    ctx.logger.warn(`spooled run logs for location ${bsl.metadata.name} not uploaded yet: ${errorMessage(err)}`);
  }
}

/**
 * Calls `fn` at most once per `everyMs`, keeping the latest value; `flush()` waits for the last
 * call, so a final status patch never races an older progress patch.
 */
export function throttled<T>(everyMs: number, fn: (value: T) => Promise<void>): { push(value: T): void; flush(): Promise<void> } {
  let last = 0;
  let pending: T | undefined;
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<void> = Promise.resolve();
  const send = (): void => {
    timer = undefined;
    if (pending === undefined) return;
    const v = pending;
    pending = undefined;
    last = Date.now();
    chain = chain.then(() => fn(v)).catch(() => undefined);
  };
  return {
    push(value) {
      pending = value;
      if (timer !== undefined) return;
      const wait = Math.max(0, last + everyMs - Date.now());
      timer = setTimeout(send, wait);
    },
    async flush() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      pending = undefined;
      await chain;
    },
  };
}
