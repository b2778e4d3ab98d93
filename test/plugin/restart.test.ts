// SIGKILL the plugin process again and again while calls are in flight: every call still ends
// correctly (retried on the new process), Init is replayed, and the process table never shows two
// live processes for one executable.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { replayableBody, type ObjectStore } from '../../src/plugin/api/index.js';
import { BUILTIN_EXECUTABLE, createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import {
  configMap,
  memoryLogger,
  pluginDir,
  removeTempDirs,
  requireBuilt,
  RUN,
  sampleProcesses,
  selfCommand,
  tempDir,
  type LogEntry,
} from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

const MiB = 1024 * 1024;
const PIECE = 256 * 1024;
const BASE = crypto.randomBytes(PIECE);

/** Piece i of a test object: random bytes stamped with i, so reordering or loss changes the hash. */
function piece(i: number): Buffer {
  const b = Buffer.from(BASE);
  b.writeUInt32BE(i, 0);
  return b;
}

function expectedSha(total: number): string {
  const h = crypto.createHash('sha256');
  for (let i = 0; i < total / PIECE; i++) h.update(piece(i));
  return h.digest('hex');
}

/** Yields `total` bytes; `onPiece(bytesSoFar, pass)` runs before each piece (pass counts from 1). */
function* pieces(total: number, pass: number, onPiece: (sent: number, pass: number) => void): Generator<Buffer> {
  for (let i = 0; i < total / PIECE; i++) {
    onPiece(i * PIECE, pass);
    yield piece(i);
  }
}

async function sha(body: AsyncIterable<Uint8Array>, onBytes?: (n: number) => void): Promise<string> {
  const h = crypto.createHash('sha256');
  let n = 0;
  for await (const c of body) {
    h.update(c);
    n += c.length;
    onBytes?.(n);
  }
  return h.digest('hex');
}

function pidOf(pool: PluginPool, executable: string): number {
  const pid = pool.status().find((s) => s.executable === executable)?.pid;
  if (pid === undefined) throw new Error(`no live process for ${executable}`);
  return pid;
}

function statusOf(pool: PluginPool, executable: string) {
  const s = pool.status().find((x) => x.executable === executable);
  if (s === undefined) throw new Error(`no status for ${executable}`);
  return s;
}

/** Pids that logged `message` (Init lines of a store), across loggers. */
function pidsLogging(message: string, ...logs: LogEntry[][]): Set<number> {
  return new Set(logs.flat().filter((e) => e.message === message).map((e) => e.pluginPid as number));
}

describe('SIGKILL during a 50 MiB PutObject (filesystem store)', () => {
  const SIZE = 50 * MiB;
  const want = expectedSha(SIZE);
  let pool: PluginPool;
  let link: string;
  let server: ReturnType<typeof memoryLogger>;
  let run: ReturnType<typeof memoryLogger>;
  let root: string;

  beforeAll(async () => {
    const self = selfCommand();
    link = self.link;
    server = memoryLogger();
    run = memoryLogger();
    root = tempDir('fs-store');
    pool = await createPluginPool({ selfCommand: self.command, logger: server.logger, maxCallRetries: 3 });
  });
  afterAll(async () => {
    await pool.shutdown();
  });

  it('survives a kill in each of three attempts of one upload, replays Init each time, never two processes', async () => {
    const handle = pool.handle(RUN, run.logger);
    const sampler = sampleProcesses(link);
    try {
      const store = await handle.objectStore('stowage.dev/filesystem', { root });
      const killAt = [0.2, 0.5, 0.8].map((f) => Math.floor((f * SIZE) / PIECE) * PIECE);
      const killed: number[] = [];
      let passes = 0;
      const body = replayableBody(() =>
        pieces(SIZE, ++passes, (sent, pass) => {
          if (pass <= killAt.length && sent === killAt[pass - 1]) {
            const pid = pidOf(pool, BUILTIN_EXECUTABLE);
            process.kill(pid, 'SIGKILL');
            killed.push(pid);
          }
        }),
      );
      const before = statusOf(pool, BUILTIN_EXECUTABLE);
      await store.putObject('bucket-a', 'backups/b1/b1.tar.gz', body);
      expect(passes).toBe(4);
      expect(new Set(killed).size).toBe(3);
      const file = path.join(fs.realpathSync(root), 'bucket-a/backups/b1/b1.tar.gz');
      expect(fs.statSync(file).size).toBe(SIZE);
      expect(await sha(fs.createReadStream(file))).toBe(want);

      const after = statusOf(pool, BUILTIN_EXECUTABLE);
      expect(after.crashes - before.crashes).toBe(3);
      expect(after.retries - before.retries).toBe(3);
      expect(after.inits - before.inits).toBe(3); // Init replayed on each new process
      // Each process that served the store logged its Init: the original and three replacements.
      const initPids = pidsLogging('filesystem object store ready', server.entries, run.entries);
      for (const pid of killed) expect(initPids.has(pid)).toBe(true);
      expect(initPids.has(after.pid as number)).toBe(true);
      expect(sampler.samples()).toBeGreaterThan(20);
      expect(sampler.max()).toBe(1);
    } finally {
      sampler.stop();
      handle.release();
    }
  });

  it('resumes a GetObject at its offset when the process is killed mid-download', async () => {
    const handle = pool.handle(RUN, run.logger);
    const sampler = sampleProcesses(link);
    try {
      const store = await handle.objectStore('stowage.dev/filesystem', { root });
      const before = statusOf(pool, BUILTIN_EXECUTABLE);
      let killed = false;
      const got = await sha(await store.getObject('bucket-a', 'backups/b1/b1.tar.gz'), (n) => {
        if (!killed && n >= 20 * MiB) {
          killed = true;
          process.kill(pidOf(pool, BUILTIN_EXECUTABLE), 'SIGKILL');
        }
      });
      expect(killed).toBe(true);
      expect(got).toBe(want);
      const after = statusOf(pool, BUILTIN_EXECUTABLE);
      expect(after.retries - before.retries).toBe(1);
      expect(after.inits - before.inits).toBe(1);
      expect(sampler.max()).toBe(1);
    } finally {
      sampler.stop();
      handle.release();
    }
  });
});

describe('PutObject retry limits (default policy: one retry)', () => {
  let pool: PluginPool;
  let root: string;
  let store: ObjectStore;
  let release: () => void;

  beforeAll(async () => {
    const self = selfCommand();
    root = tempDir('fs-store');
    pool = await createPluginPool({ selfCommand: self.command, logger: memoryLogger().logger });
    const handle = pool.handle(RUN);
    release = () => handle.release();
    store = await handle.objectStore('stowage.dev/filesystem', { root });
  });
  afterAll(async () => {
    release();
    await pool.shutdown();
  });

  const killOnce = (at: number) => {
    let done = false;
    return (sent: number): void => {
      if (!done && sent >= at) {
        done = true;
        process.kill(pidOf(pool, BUILTIN_EXECUTABLE), 'SIGKILL');
      }
    };
  };

  it('a replayable body killed once is retried and stored whole', async () => {
    const kill = killOnce(10 * MiB);
    await store.putObject('b', 'once', replayableBody(() => pieces(20 * MiB, 0, kill)));
    expect(await sha(await store.getObject('b', 'once'))).toBe(expectedSha(20 * MiB));
  });

  it('a call whose retry dies too fails with a clear error, and the old object stays intact', async () => {
    let passes = 0;
    const body = replayableBody(() => {
      const pass = ++passes;
      return pieces(20 * MiB, pass, (sent) => {
        if (sent === 5 * MiB) process.kill(pidOf(pool, BUILTIN_EXECUTABLE), 'SIGKILL');
      });
    });
    await expect(store.putObject('b', 'once', body)).rejects.toThrow(
      /^ObjectStore stowage\.dev\/filesystem \(executable stowage run-plugins\): PutObject failed: the plugin process \(pid \d+\) died during the call, and again during the retry/,
    );
    expect(passes).toBe(2);
    // Writes are atomic: the earlier version is still there, whole.
    expect(await sha(await store.getObject('b', 'once'))).toBe(expectedSha(20 * MiB));
    expect(await store.listObjects('b', '')).toEqual(['once']);
  });

  it('a one-shot body that fits the replay buffer is replayed from memory', async () => {
    const kill = killOnce(MiB);
    async function* oneShot(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 8; i++) {
        kill(i * PIECE);
        yield piece(i);
      }
    }
    await store.putObject('b', 'small', oneShot());
    expect(await sha(await store.getObject('b', 'small'))).toBe(expectedSha(2 * MiB));
  });

  it('a one-shot 50 MiB body killed past the replay buffer fails with a reason, not a hang', async () => {
    const kill = killOnce(20 * MiB);
    async function* oneShot(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < (50 * MiB) / PIECE; i++) {
        kill(i * PIECE);
        yield piece(i);
      }
    }
    const err = await store.putObject('b', 'big', oneShot()).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/PutObject failed: the plugin process \(pid \d+\) died during the call, and the body cannot be replayed/);
    expect((err as Error).message).toContain('more than the 8388608-byte replay buffer');
    expect(await store.objectExists('b', 'big')).toBe(false);
  });
});

describe('SIGKILL during 1,000 Execute calls', () => {
  it('every call returns the right result, Init of a held store is replayed, one process at a time', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const launcher = p.path('tester');
    const server = memoryLogger();
    const pool = await createPluginPool({ pluginDirs: [p.dir], logger: server.logger });
    const handle = pool.handle(RUN);
    const sampler = sampleProcesses(launcher);
    try {
      const store = await handle.objectStore('test.stowage.dev/memory', { name: 'held' });
      const action = handle.backupItemAction('test.stowage.dev/echo');
      const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b', namespace: 'stowage' } };
      const TOTAL = 1000;
      const CONCURRENCY = 8;
      let next = 0;
      let completed = 0;
      const killed: number[] = [];
      const pidsSeen = new Set<string>();
      const worker = async (): Promise<void> => {
        while (next < TOTAL) {
          const i = next++;
          const out = await action.execute({ item: configMap(`cm-${i}`, 'ns'), backup });
          expect(out.item.metadata.name).toBe(`cm-${i}`);
          expect(out.item.metadata.annotations?.['test.stowage.dev/seen']).toBe(`cm-${i}`);
          expect(out.additionalItems).toEqual([{ groupResource: 'secrets', namespace: 'ns', name: `cm-${i}-secret` }]);
          pidsSeen.add(out.item.metadata.annotations?.['test.stowage.dev/pid'] ?? '');
          completed++;
          // Kill the live process every 100 completed calls, while the other workers' calls are in flight.
          if (completed % 100 === 0 && completed < TOTAL) {
            const pid = pidOf(pool, launcher);
            process.kill(pid, 'SIGKILL');
            killed.push(pid);
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      expect(completed).toBe(TOTAL);
      expect(killed.length).toBe(9);
      expect(pidsSeen.size).toBe(10);
      const s = statusOf(pool, launcher);
      expect(s.crashes).toBe(9);
      expect(s.restarts).toBe(9);
      expect(s.retries).toBeGreaterThan(0);
      expect(s.inits).toBe(10); // the held store: first Init plus a replay on each of 9 new processes
      expect(pidsLogging('memory store ready', server.entries).size).toBe(10);
      // The replayed instance works on the current process.
      expect(await store.createSignedURL('b', 'k', 60)).toBe(`memory://held/b/k?pid=${pidOf(pool, launcher)}`);
      expect(sampler.samples()).toBeGreaterThan(20);
      expect(sampler.max()).toBe(1);
    } finally {
      sampler.stop();
      handle.release();
      await pool.shutdown();
    }
  });
});

describe('SIGKILL during a 50 MiB PutObject to S3 (stowage.dev/aws)', () => {
  it('the upload is retried on the new process and the object is whole', async () => {
    const s3 = inject('s3');
    const bucket = `plugin-kill-${crypto.randomBytes(3).toString('hex')}`;
    const direct = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await direct.send(new CreateBucketCommand({ Bucket: bucket }));
    const credentialsFile = path.join(tempDir('creds'), 'credentials');
    fs.writeFileSync(credentialsFile, `[default]\naws_access_key_id = ${s3.accessKeyId}\naws_secret_access_key = ${s3.secretAccessKey}\n`, { mode: 0o600 });
    const self = selfCommand();
    const pool = await createPluginPool({ selfCommand: self.command, logger: memoryLogger().logger });
    const handle = pool.handle(RUN);
    const sampler = sampleProcesses(self.link);
    try {
      const store = await handle.objectStore('stowage.dev/aws', {
        bucket,
        region: s3.region,
        s3Url: s3.endpoint,
        s3ForcePathStyle: 'true',
        credentialsFile,
      });
      const SIZE = 50 * MiB;
      let passes = 0;
      await store.putObject(
        bucket,
        'backups/b1/b1.tar.gz',
        replayableBody(() =>
          pieces(SIZE, ++passes, (sent, pass) => {
            if (pass === 1 && sent === 25 * MiB) process.kill(pidOf(pool, BUILTIN_EXECUTABLE), 'SIGKILL');
          }),
        ),
      );
      expect(passes).toBe(2);
      const res = await direct.send(new GetObjectCommand({ Bucket: bucket, Key: 'backups/b1/b1.tar.gz' }));
      expect(await sha(res.Body as AsyncIterable<Uint8Array>)).toBe(expectedSha(SIZE));
      expect(statusOf(pool, BUILTIN_EXECUTABLE).inits).toBe(2);
      expect(sampler.max()).toBe(1);
    } finally {
      sampler.stop();
      handle.release();
      await pool.shutdown();
      direct.destroy();
    }
  });
});
