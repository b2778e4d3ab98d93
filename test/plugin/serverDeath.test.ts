// However the server process ends (SIGKILL, SIGTERM, a crash), no plugin process survives it.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, pidAlive, pluginDir, removeTempDirs, requireBuilt, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

async function startServer(mode: 'wait' | 'crash'): Promise<{ pids: number[]; server: ReturnType<typeof spawn>; exited: Promise<void> }> {
  const p = pluginDir({ tester: 'test-plugin.mjs' });
  const server = spawn(process.execPath, [path.join(FIXTURES, 'host-server.mjs'), p.dir, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => server.once('exit', () => r()));
  let stderr = '';
  server.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: server.stdout as NodeJS.ReadableStream }).once('line', resolve);
    server.once('exit', () => reject(new Error(`host-server exited early: ${stderr}`)));
  });
  const pids = (JSON.parse(line) as { pids: number[] }).pids;
  expect(pids).toHaveLength(2); // the built-ins and the test plugin
  for (const pid of pids) expect(pidAlive(pid)).toBe(true);
  return { pids, server, exited };
}

async function expectAllGone(pids: number[]): Promise<void> {
  await waitFor('plugin processes to exit', () => (pids.every((p) => !pidAlive(p)) ? true : undefined), 5000);
}

describe('no plugin process outlives the server', () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`when the server gets ${signal}`, async () => {
      const { pids, server, exited } = await startServer('wait');
      server.kill(signal);
      await exited;
      await expectAllGone(pids);
    });
  }

  it('when the server crashes with an uncaught exception', async () => {
    const { pids, exited } = await startServer('crash');
    await exited;
    await expectAllGone(pids);
  });
});
