// Temp files of uploads a killed plugin process left in a filesystem location, with the real
// plugin host and `stowage run-plugins`: the restarted process sweeps them when it initialises the
// store again, while the temp file of an upload in progress stays.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEMP_PREFIX } from '../../src/plugin/builtin/keys.js';
import { createPluginPool } from '../../src/plugin/host/index.js';
import { livePids, memoryLogger, removeTempDirs, requireBuilt, RUN, selfCommand, tempDir, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

// Over one transport chunk (1 MiB), so the first part reaches the plugin before the gate.
const FIRST = 'x'.repeat(1024 * 1024 + 1);

function gated(first: string, rest: string): { body: AsyncGenerator<Uint8Array>; release: () => void } {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  async function* body(): AsyncGenerator<Uint8Array> {
    yield Buffer.from(first);
    await gate;
    yield Buffer.from(rest);
  }
  return { body: body(), release };
}

const tempsIn = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(TEMP_PREFIX)).map((f) => path.join(dir, f)) : []);

describe('filesystem store temp-file sweep across a plugin crash', () => {
  it('the restarted plugin removes the killed upload\'s temp file; a fresh in-progress upload keeps its own', async () => {
    const self = selfCommand();
    const root = tempDir('fs-sweep');
    const pool = await createPluginPool({ selfCommand: self.command, logger: memoryLogger().logger, maxCallRetries: 0, restartBackoffMs: { base: 10, max: 50 } });
    const h = pool.handle(RUN);
    try {
      const store = await h.objectStore('stowage.dev/filesystem', { root, bucket: 'b', prefix: '' });
      const killed = gated(FIRST, 'never sent');
      const doomed = store.putObject('b', 'backups/one/one.tar.gz', killed.body);
      const oneDir = path.join(root, 'b/backups/one');
      const [orphan] = await waitFor('the upload\'s temp file', () => {
        const t = tempsIn(oneDir);
        return t.length === 1 && fs.statSync(t[0] as string).size > 0 ? t : undefined;
      });
      const [pid] = livePids(self.link);
      expect(pid).toBeDefined();
      process.kill(pid as number, 'SIGKILL');
      // The host notices the death on its next write: let the body go on.
      killed.release();
      await expect(doomed).rejects.toThrow();
      expect(fs.existsSync(orphan as string)).toBe(true);

      // The next call starts a new process, which replays Init (and so sweeps) before serving it.
      const live = gated(FIRST, 'second');
      const upload = store.putObject('b', 'backups/two/two.tar.gz', live.body);
      const twoDir = path.join(root, 'b/backups/two');
      const [inProgress] = await waitFor('the new upload\'s temp file', () => {
        const t = tempsIn(twoDir);
        return t.length === 1 ? t : undefined;
      });
      expect(livePids(self.link)).not.toContain(pid);
      expect(fs.existsSync(orphan as string)).toBe(false);

      // Another Init of the same location sweeps again while the upload is going: its file stays.
      await h.objectStore('stowage.dev/filesystem', { root, bucket: 'b', prefix: '', caCert: 'unused by this store' });
      expect(tempsIn(twoDir)).toEqual([inProgress]);

      live.release();
      await upload;
      expect(fs.readFileSync(path.join(twoDir, 'two.tar.gz'), 'utf8')).toBe(`${FIRST}second`);
      expect(tempsIn(twoDir)).toEqual([]);
      expect(fs.existsSync(path.join(oneDir, 'one.tar.gz'))).toBe(false);
    } finally {
      h.release();
      await pool.shutdown();
    }
  });
});
