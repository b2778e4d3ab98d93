// The example KeyManager plugin (examples/file-kms) through the real host: discovered from a plugin
// directory, wraps and unwraps, refuses unknown and wrong keys precisely, survives SIGKILLs between
// and during calls on a restarted, re-initialised process (never two at once), and passes its own
// `npm test`.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyUnavailableError } from '../../src/plugin/api/index.js';
import { createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import { installFileKms, livePids, memoryLogger, pluginDir, removeTempDirs, requireBuilt, ROOT, RUN, sampleProcesses, selfCommand, waitFor } from './support.js';

const EXAMPLE = path.join(ROOT, 'examples/file-kms');
const LAUNCHER = 'stowage-file-kms-under-test';

async function refusal(p: Promise<unknown>): Promise<KeyUnavailableError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(KeyUnavailableError);
  return err as KeyUnavailableError;
}

let pool: PluginPool;
beforeAll(async () => {
  requireBuilt();
  const dir = pluginDir({ [LAUNCHER]: installFileKms() });
  pool = await createPluginPool({ pluginDirs: [dir.dir], selfCommand: selfCommand().command, logger: memoryLogger().logger });
});
afterAll(async () => {
  await pool.shutdown();
  removeTempDirs();
});

const k1 = crypto.randomBytes(32).toString('base64');
const k2 = crypto.randomBytes(32).toString('hex');

describe('examples/file-kms through the plugin host', () => {
  it('is listed, wraps and unwraps, rotates, and refuses unknown ids and altered or moved keys precisely', async () => {
    expect(pool.plugins.map((p) => `${p.kind} ${p.name}`)).toContain('KeyManager example.com/file-kms');
    const handle = pool.handle(RUN, memoryLogger().logger);
    try {
      const kms = await handle.keyManager('example.com/file-kms', { currentKeyId: 'k1', 'key.k1': k1 });
      const dataKey = crypto.randomBytes(32);
      const w = await kms.wrapKey(dataKey, 'backup/b1/data-key');
      expect(w.keyId).toBe('k1');
      expect(Buffer.from(w.ciphertext).includes(dataKey)).toBe(false);
      expect(Buffer.from(await kms.unwrapKey('k1', w.ciphertext, 'backup/b1/data-key')).equals(dataKey)).toBe(true);

      const rotated = await handle.keyManager('example.com/file-kms', { currentKeyId: 'k2', 'key.k1': k1, 'key.k2': k2 });
      expect(Buffer.from(await rotated.unwrapKey('k1', w.ciphertext, 'backup/b1/data-key')).equals(dataKey)).toBe(true);
      expect((await rotated.wrapKey(dataKey, 'backup/b2/data-key')).keyId).toBe('k2');

      const dropped = await handle.keyManager('example.com/file-kms', { currentKeyId: 'k2', 'key.k2': k2 });
      const unknown = await refusal(dropped.unwrapKey('k1', w.ciphertext, 'backup/b1/data-key'));
      expect(unknown.reason).toBe('unknown-key');
      expect(unknown.message).toContain('file-kms holds no key "k1" (it holds k2); list that key again to read what it wrapped');
      const moved = await refusal(kms.unwrapKey('k1', w.ciphertext, 'backup/other/data-key'));
      expect(moved.reason).toBe('wrong-key');
      expect(moved.message).toContain('does not open under key "k1"');
      expect(moved.message).not.toContain(k1);

      await expect(handle.keyManager('example.com/file-kms', { currentKeyId: 'k9', 'key.k1': k1, colour: 'blue' }))
        .rejects.toThrow(/unknown setting "colour".*currentKeyId "k9" is not among the keys \(k1\)/);
    } finally {
      handle.release();
    }
  });

  it('survives SIGKILLs between and during calls: Init replayed on the new process, never two processes at once', async () => {
    const handle = pool.handle(RUN, memoryLogger().logger);
    const seen = sampleProcesses(LAUNCHER);
    try {
      const kms = await handle.keyManager('example.com/file-kms', { currentKeyId: 'k1', 'key.k1': k1, latencyMs: '300' });
      const dataKey = crypto.randomBytes(32);
      const w = await kms.wrapKey(dataKey, 'backup/b3/data-key');
      const [first] = livePids(LAUNCHER);
      expect(first).toBeDefined();

      // Between calls: the next call starts a new process and replays this instance's Init.
      process.kill(first as number, 'SIGKILL');
      await waitFor('the killed plugin to exit', () => (livePids(LAUNCHER).includes(first as number) ? undefined : true));
      expect(Buffer.from(await kms.unwrapKey('k1', w.ciphertext, 'backup/b3/data-key')).equals(dataKey)).toBe(true);
      const [second] = livePids(LAUNCHER);
      expect(second).not.toBe(first);

      // During a call (the plugin sleeps 300 ms in it): the call is retried once on a new process.
      const inFlight = kms.unwrapKey('k1', w.ciphertext, 'backup/b3/data-key');
      await new Promise((r) => setTimeout(r, 100));
      process.kill(second as number, 'SIGKILL');
      expect(Buffer.from(await inFlight).equals(dataKey)).toBe(true);
      const wrapped = await kms.wrapKey(dataKey, 'backup/b4/data-key');
      expect(wrapped.keyId).toBe('k1');
      const [third] = livePids(LAUNCHER);
      expect([first, second]).not.toContain(third);
    } finally {
      seen.stop();
      handle.release();
    }
    expect(seen.samples()).toBeGreaterThan(10);
    expect(seen.max()).toBe(1);
  });

  it('passes its own `npm test`', () => {
    const r = spawnSync('npm', ['test'], { cwd: EXAMPLE, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^(# |ℹ )fail 0$/m);
    expect(r.stdout).toMatch(/^(# |ℹ )pass [1-9]/m);
  });
});
