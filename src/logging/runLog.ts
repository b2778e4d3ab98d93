// The per-run log of a backup or restore: every line goes, as JSON, into a gzip file that is
// uploaded next to the backup, and is mirrored to the server log tagged with the run.
// While the run goes, each batch of lines is also appended, uncompressed and synchronously, to a
// journal beside the gzip file (runLogJournal): zlib holds lines until a flush, and a server
// killed meanwhile would lose them, but the journal has every line as soon as its batch is written
// (the next turn of the event loop). Salvage reads the journal; close() removes it.

import { createHash } from 'node:crypto';
import { closeSync, createWriteStream, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import winston from 'winston';
import TransportStream from 'winston-transport';
import { errorMessage } from '../util/errors.js';
import {
  createSecretSet,
  infoFields,
  normalizeLevel,
  redactFormat,
  renderJson,
  type LogLevel,
  type SecretSet,
} from './format.js';

export type RunKind = 'backup' | 'restore';

export interface RunLogOptions {
  /** The server logger every line is mirrored to. */
  server: winston.Logger;
  kind: RunKind;
  namespace: string;
  name: string;
  /** Directory for the gzip file (created when missing). */
  dir: string;
  /** Lowest level written; default the server logger's level. Warnings and errors are always kept. */
  level?: string;
  /** Server-wide secrets to scrub besides those added with addSecret. */
  secrets?: SecretSet;
}

export interface FollowOptions {
  /** Deliver the lines logged so far first, then live lines, with no gap and no duplicate. */
  fromStart?: boolean;
  /** Called once when the log is closed (no more lines will come). */
  onEnd?: () => void;
}

export interface RunLog {
  /** Log through this; a `plugin` field marks re-logged plugin lines, `logSource` names the emitter. */
  readonly logger: winston.Logger;
  /** `<dir>/<kind>-<namespace>-<name>.log.gz`; a complete gzip file once close() resolves. */
  readonly path: string;
  /** Live JSON lines; returns an unsubscribe function. */
  follow(cb: (line: string) => void, opts?: FollowOptions): () => void;
  /**
   * Every JSON line logged so far, read back from the gzip file: works while the run is going, and
   * after close() for as long as the file stays at `path`.
   */
  linesSoFar(): Promise<string[]>;
  /** Scrubs this value (and its base64 / escaped forms) from every later line. */
  addSecret(value: string): void;
  /** Ends the gzip file. Rejects when the file could not be written completely. Idempotent. */
  close(): Promise<void>;
  readonly closed: boolean;
}

/** npm levels plus the names plugins from other ecosystems use, so none of their lines is dropped. */
const RUN_LEVELS: Record<string, number> = {
  fatal: 0,
  panic: 0,
  critical: 0,
  error: 0,
  warning: 1,
  warn: 1,
  info: 2,
  http: 3,
  verbose: 4,
  debug: 5,
  trace: 6,
  silly: 6,
};

/** How long a written line may wait in zlib before it is flushed to the file. */
const SYNC_FLUSH_MS = 1000;

const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The uncompressed journal kept beside a run's gzip log while the run goes (see the module comment). */
export function runLogJournal(gzipPath: string): string {
  return `${gzipPath}.journal`;
}

/**
 * The local file of a run's log. A hash, not the name: a valid 253-character name plus its namespace
 * would pass the file system's 255-byte limit. The same run always maps to the same file, so a
 * restarted server finds a dead run's partial log.
 */
export function runLogFileName(kind: RunKind, namespace: string, name: string): string {
  return `${kind}-${createHash('sha256').update(`${namespace}/${name}`).digest('hex').slice(0, 32)}.log.gz`;
}

class SinkTransport extends TransportStream {
  constructor(private readonly sink: (info: Record<string, unknown>) => void) {
    super({});
  }
  override log(info: Record<string, unknown>, next: () => void): void {
    this.sink(info);
    next();
  }
}

type Listener = (line: string, seq: number) => void;

const gunzip = promisify(zlib.gunzip);

export function createRunLogger(opts: RunLogOptions): RunLog {
  const { server, kind, namespace, name, dir } = opts;
  for (const [what, v] of [['namespace', namespace], ['name', name]] as const) {
    if (!NAME_RE.test(v)) throw new Error(`run log ${what} "${v}" is not a valid Kubernetes name`);
  }
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, runLogFileName(kind, namespace, name));
  const runRef = `${namespace}/${name}`;
  const secrets = createSecretSet(opts.secrets);

  const gzip = zlib.createGzip();
  const out = createWriteStream(file);
  // Opened before the gzip file has any byte: a run that has a log file has its journal too.
  const journalPath = runLogJournal(file);
  let journal: number | undefined = openSync(journalPath, 'w', 0o600);
  const dropJournal = (): void => {
    if (journal === undefined) return;
    try {
      closeSync(journal);
    } catch {
      // closing is best effort: the file is removed next
    }
    journal = undefined;
    rmSync(journalPath, { force: true });
  };
  let writeError: unknown;
  gzip.on('error', (err) => (writeError ??= err));
  out.on('error', (err) => (writeError ??= err));
  gzip.pipe(out);
  const outClosed = new Promise<void>((resolve) => out.once('close', resolve));

  let seq = 0;
  let closing = false;
  let done = false;
  let closePromise: Promise<void> | undefined;
  // Lines go to gzip in batches: one zlib write per line costs a thread-pool job each, which a
  // restore logging thousands of items a second notices.
  let pending: string[] = [];
  let pendingBytes = 0;
  let flushQueued = false;
  // Lines written are sync-flushed to the file within SYNC_FLUSH_MS, so the gzip file read as it
  // is (a journal that could not be written) holds all but the last second; the journal has the rest.
  let syncTimer: NodeJS.Timeout | undefined;
  const syncFlush = (): void => {
    syncTimer = undefined;
    if (!closing && writeError === undefined) gzip.flush(zlib.constants.Z_SYNC_FLUSH);
  };
  const flushPending = (): void => {
    flushQueued = false;
    if (pending.length === 0) return;
    const text = pending.join('');
    if (journal !== undefined) {
      try {
        writeSync(journal, text);
      } catch (err) {
        // A journal that cannot be written (a full disk) is dropped whole: salvage then reads the gzip file.
        server.warn('run log journal could not be written; a crash may lose the lines not yet flushed', { [kind]: runRef, error: errorMessage(err) });
        dropJournal();
      }
    }
    // Once the file has failed, buffering more output would only grow memory; close() reports it.
    if (writeError === undefined) gzip.write(text);
    pending = [];
    pendingBytes = 0;
    syncTimer ??= setTimeout(syncFlush, SYNC_FLUSH_MS).unref();
  };
  const listeners = new Set<Listener>();
  const endListeners = new Set<() => void>();

  const sink = (info: Record<string, unknown>): void => {
    const level: LogLevel = normalizeLevel(info.level);
    const message = typeof info.message === 'string' ? info.message : String(info.message ?? '');
    const logSource =
      typeof info.logSource === 'string' && info.logSource !== ''
        ? info.logSource
        : typeof info.plugin === 'string' && info.plugin !== ''
          ? `plugin/${info.plugin}`
          : kind;
    const rest = infoFields(info).filter(([k]) => k !== 'logSource' && k !== kind && k !== 'time');
    const tagged: Array<[string, unknown]> = [[kind, runRef], ['logSource', logSource], ...rest];
    server.log({ level, message, ...Object.fromEntries(tagged) });
    if (closing) return; // the file is complete; late lines (e.g. a plugin's) only reach the server log
    const line = renderJson(new Date().toISOString(), level, message, tagged);
    pending.push(`${line}\n`);
    pendingBytes += line.length + 1;
    if (pendingBytes >= 64 * 1024) flushPending();
    else if (!flushQueued) {
      flushQueued = true;
      setImmediate(flushPending);
    }
    const n = seq++;
    for (const l of listeners) {
      try {
        l(line, n);
      } catch {
        // A broken follower must not break logging.
      }
    }
  };

  const transport = new SinkTransport(sink);
  const requested = opts.level ?? server.level;
  const requestedRank = RUN_LEVELS[requested];
  // Below 'warn' would hide warnings from the file; never go there.
  const level = requestedRank === undefined ? 'info' : requestedRank < 1 ? 'warn' : requested;
  const logger = winston.createLogger({
    levels: RUN_LEVELS,
    level,
    format: redactFormat(secrets),
    transports: [transport],
    exitOnError: false,
  });
  logger.on('error', (err) => {
    server.error('run log failed', { [kind]: runRef, error: errorMessage(err) });
  });

  /** Lets lines already handed to winston reach the sink. */
  const drain = async (): Promise<void> => {
    for (let i = 0; i < 10_000; i++) {
      if (logger.writableLength === 0 && logger.readableLength === 0 && transport.writableLength === 0) return;
      await new Promise<void>((r) => setImmediate(r));
    }
  };

  const readAll = async (): Promise<string[]> => {
    const text = (await gunzip(await readFile(file))).toString('utf8');
    return text.split('\n').filter((l) => l !== '');
  };

  /** The first `count` lines, read from disk after a sync flush so the partial gzip is readable. */
  const snapshot = async (count: number): Promise<string[]> => {
    if (closing) {
      await closePromise;
      return (await readAll()).slice(0, count);
    }
    flushPending();
    await new Promise<void>((resolve) => gzip.flush(zlib.constants.Z_SYNC_FLUSH, () => resolve()));
    // The flushed bytes are in gzip's readable buffer until the pipe hands them to the file.
    for (let i = 0; gzip.readableLength > 0 && i < 10_000; i++) await new Promise<void>((r) => setImmediate(r));
    if (closing) {
      // close() began meanwhile: the complete file is the reliable source.
      await closePromise;
      return (await readAll()).slice(0, count);
    }
    await new Promise<void>((resolve, reject) => out.write(Buffer.alloc(0), (err) => (err ? reject(err) : resolve())));
    const bytes = (await readFile(file)).subarray(0, out.bytesWritten);
    const text = (await gunzip(bytes, { finishFlush: zlib.constants.Z_SYNC_FLUSH })).toString('utf8');
    return text.split('\n').slice(0, count);
  };

  const close = (): Promise<void> => {
    closePromise ??= (async () => {
      await drain();
      closing = true;
      flushPending();
      clearTimeout(syncTimer);
      gzip.end();
      await outClosed;
      dropJournal();
      done = true;
      for (const cb of endListeners) {
        try {
          cb();
        } catch {
          // ignore
        }
      }
      endListeners.clear();
      listeners.clear();
      if (writeError !== undefined) throw new Error(`run log ${file} could not be written: ${errorMessage(writeError)}`);
    })();
    return closePromise;
  };

  return {
    logger,
    path: file,
    addSecret: (value: string) => secrets.add(value),
    get closed() {
      return done;
    },
    linesSoFar: async () => {
      if (done) return readAll();
      return snapshot(seq);
    },
    follow(cb: (line: string) => void, fopts: FollowOptions = {}): () => void {
      let active = true;
      let replaying = fopts.fromStart === true;
      let endedDuringReplay = false;
      const pending: string[] = [];
      const onEnd = fopts.onEnd;
      const endListener = (): void => {
        if (!active || !onEnd) return;
        if (replaying) endedDuringReplay = true;
        else onEnd();
      };
      const l: Listener = (line) => {
        if (!active) return;
        if (replaying) pending.push(line);
        else cb(line);
      };
      const unsubscribe = (): void => {
        active = false;
        listeners.delete(l);
        endListeners.delete(endListener);
      };
      if (done) queueMicrotask(endListener);
      else {
        listeners.add(l);
        endListeners.add(endListener);
      }
      if (replaying) {
        void snapshot(seq)
          .catch((err: unknown) => {
            server.warn('could not read back the run log', { [kind]: runRef, error: errorMessage(err) });
            return [] as string[];
          })
          .then((lines) => {
            for (const line of [...lines, ...pending]) if (active) cb(line);
            pending.length = 0;
            replaying = false;
            if (endedDuringReplay && active && onEnd) onEnd();
          });
      }
      return unsubscribe;
    },
    close,
  };
}
