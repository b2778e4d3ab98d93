// Each way a plugin can fail to start or to answer gives its own clear error within the deadline,
// and none of them hangs or leaves a process behind.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPluginPool, PluginCallError, PluginCrashLoopError, PluginRegistryError, type PluginPool } from '../../src/plugin/host/index.js';
import { configMap, livePids, memoryLogger, pluginDir, removeTempDirs, requireBuilt, RUN, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

/** Creating a pool over `fixture` fails; returns the error and how long it took. */
async function discoveryError(fixture: string, startupTimeoutMs = 5000): Promise<{ err: PluginRegistryError; ms: number; launcher: string }> {
  const p = pluginDir({ [fixture.replace('.mjs', '')]: fixture });
  const launcher = p.path(fixture.replace('.mjs', ''));
  const t0 = Date.now();
  const err = await createPluginPool({ pluginDirs: [p.dir], startupTimeoutMs, logger: memoryLogger().logger }).then(
    () => undefined,
    (e: unknown) => e,
  );
  const ms = Date.now() - t0;
  if (!(err instanceof PluginRegistryError)) throw new Error(`expected a PluginRegistryError, got ${String(err)}`);
  // Nothing is left running.
  await waitFor('fixture processes gone', () => (livePids(launcher).length === 0 ? true : undefined), 3000);
  return { err, ms, launcher };
}

describe('plugin start failures', () => {
  it('a plugin that exits at start: names the executable, the exit code and its stderr', async () => {
    const { err, ms, launcher } = await discoveryError('exit-at-start.mjs');
    expect(err.message).toContain(`plugin ${launcher} exited with code 3 before printing its handshake line`);
    expect(err.message).toContain('cannot open /etc/stowage-test/config: permission denied');
    expect(ms).toBeLessThan(5000);
  });

  it('a plugin that never prints a handshake: fails at the startup timeout and is killed', async () => {
    const { err, ms, launcher } = await discoveryError('no-handshake.mjs', 1500);
    expect(err.message).toContain(`plugin ${launcher} did not print its handshake line within 1500 ms`);
    expect(err.message).toContain('warming up forever');
    expect(ms).toBeGreaterThanOrEqual(1500);
    expect(ms).toBeLessThan(1500 + 3000);
  });

  it('a wrong plugin protocol version: names the plugin and both versions', async () => {
    const { err, ms, launcher } = await discoveryError('wrong-version.mjs');
    expect(err.message).toContain(`plugin ${launcher} speaks plugin protocol version 99, but this server supports version(s) 1`);
    expect(ms).toBeLessThan(5000);
  });

  it('a malformed handshake: quotes the line and the expected format', async () => {
    const { err, ms, launcher } = await discoveryError('malformed-handshake.mjs');
    expect(err.message).toContain(`plugin ${launcher}: malformed handshake line "hello from a plugin that forgot the protocol"`);
    expect(err.message).toContain('expected CORE-VERSION|APP-VERSION|unix|SOCKET-PATH|grpc');
    expect(ms).toBeLessThan(5000);
  });
});

describe('plugin call failures', () => {
  let pool: PluginPool | undefined;
  afterAll(async () => {
    await pool?.shutdown();
  });

  it('a call hanging past its deadline fails with a deadline error, and the plugin keeps serving', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    pool = await createPluginPool({ pluginDirs: [p.dir], callTimeoutMs: 700, logger: memoryLogger().logger });
    const handle = pool.handle(RUN);
    try {
      const t0 = Date.now();
      const err = await handle.backupItemAction('test.stowage.dev/hang').execute({ item: configMap('a'), backup: configMap('b') }).catch((e: unknown) => e);
      const ms = Date.now() - t0;
      expect(err).toBeInstanceOf(PluginCallError);
      expect((err as Error).message).toBe(
        `BackupItemAction test.stowage.dev/hang (executable ${p.path('tester')}): Execute did not finish within 700 ms (deadline exceeded)`,
      );
      expect(ms).toBeGreaterThanOrEqual(650);
      expect(ms).toBeLessThan(700 + 2000);
      const out = await handle.backupItemAction('test.stowage.dev/echo').execute({ item: configMap('after'), backup: configMap('b') });
      expect(out.item.metadata.annotations?.['test.stowage.dev/seen']).toBe('after');
    } finally {
      handle.release();
    }
  });

  it('a PutObject or GetObject stream that stops moving fails after the idle timeout', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    // No outage window: a stall is cancelled after the bare idle timeout.
    const own = await createPluginPool({ pluginDirs: [p.dir], callTimeoutMs: 700, objectStoreOutageMs: 0, logger: memoryLogger().logger });
    const handle = own.handle(RUN);
    try {
      const store = await handle.objectStore('test.stowage.dev/memory', {});
      const chunk = Buffer.alloc(1024 * 1024);
      async function* big(): AsyncGenerator<Uint8Array> {
        for (let i = 0; i < 256; i++) yield chunk;
      }
      let t0 = Date.now();
      await expect(store.putObject('b', 'stall', big())).rejects.toThrow(
        `ObjectStore test.stowage.dev/memory (executable ${p.path('tester')}): PutObject made no progress for 700 ms (deadline exceeded)`,
      );
      expect(Date.now() - t0).toBeLessThan(15_000);
      // The plugin sends 'first' only once it has a full chunk or the end, so nothing arrives at all.
      t0 = Date.now();
      await expect(store.getObject('b', 'stall')).rejects.toThrow(
        `ObjectStore test.stowage.dev/memory (executable ${p.path('tester')}): GetObject made no progress for 700 ms (deadline exceeded)`,
      );
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      handle.release();
      await own.shutdown();
    }
  });

  it('an error thrown by the plugin reaches the caller with the plugin name', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const own = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger });
    const handle = own.handle(RUN);
    try {
      await expect(handle.backupItemAction('test.stowage.dev/fail').execute({ item: configMap('a'), backup: configMap('b') })).rejects.toThrow(
        `BackupItemAction test.stowage.dev/fail (executable ${p.path('tester')}): Execute failed: fail action: refusing on purpose`,
      );
      expect(() => handle.backupItemAction('example.com/missing')).toThrow(
        'no BackupItemAction plugin named "example.com/missing" is registered (available: test.stowage.dev/echo, test.stowage.dev/env, test.stowage.dev/fail, test.stowage.dev/hang, test.stowage.dev/log)',
      );
      await expect(handle.objectStore('test.stowage.dev/memory', { fail: 'true' })).rejects.toThrow('Init failed: memory store: config says fail');
    } finally {
      handle.release();
      await own.shutdown();
    }
  });

  it('a crash loop hits the cap of 10 restarts: the error names the plugin and quotes its stderr', async () => {
    const p = pluginDir({ crashy: 'crash-loop.mjs' });
    const launcher = p.path('crashy');
    const own = await createPluginPool({ pluginDirs: [p.dir], restartBackoffMs: { base: 10, max: 50 }, logger: memoryLogger().logger });
    const handle = own.handle(RUN);
    try {
      const action = handle.backupItemAction('test.stowage.dev/crashy');
      await action.execute({ item: configMap('a'), backup: configMap('b') });
      const [pid] = livePids(launcher);
      expect(pid).toBeDefined();
      process.kill(pid as number, 'SIGKILL');
      const t0 = Date.now();
      const err = await action.execute({ item: configMap('a'), backup: configMap('b') }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PluginCrashLoopError);
      const msg = (err as Error).message;
      expect(msg).toContain(`plugin ${launcher} (test.stowage.dev/crashy) is crash-looping: 10 consecutive restarts failed`);
      expect(msg).toContain('exited with code 2 before printing its handshake line');
      expect(msg).toContain('crash-loop fixture: state file corrupt (start 11)');
      expect(Date.now() - t0).toBeLessThan(60_000);
      expect(Number(fs.readFileSync(`${launcher}.starts`, 'utf8'))).toBe(11);
      // During the cooldown, calls fail at once with the same error instead of restarting again.
      const t1 = Date.now();
      await expect(action.execute({ item: configMap('a'), backup: configMap('b') })).rejects.toThrow('is crash-looping');
      expect(Date.now() - t1).toBeLessThan(200);
      expect(Number(fs.readFileSync(`${launcher}.starts`, 'utf8'))).toBe(11);
    } finally {
      handle.release();
      await own.shutdown();
    }
  });
});
