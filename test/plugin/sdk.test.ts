// The SDK's process contract, checked on a real plugin process: refuses to run by hand, serves on a
// socket in a private 0700 directory, prints the go-plugin handshake, exits when its host goes away.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHealth, connectPlugin, listPlugins, runMetadata } from '../../src/plugin/grpc/index.js';
import { pluginEnv } from '../../src/plugin/host/index.js';
import { pidAlive, pluginDir, removeTempDirs, requireBuilt, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

describe('a plugin built on the SDK', () => {
  it('run by hand, says it is a Stowage plugin and exits non-zero', () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const r = spawnSync(p.path('tester'), [], { encoding: 'utf8', env: { PATH: process.env.PATH }, timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('This binary is a Stowage plugin. It is started by the Stowage server, not by hand.');
    expect(r.stdout).toBe('');
  });

  it('refuses a host that speaks no protocol version it knows', () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const env = { ...pluginEnv({ logLevel: 'info', parent: process.env }), PLUGIN_PROTOCOL_VERSIONS: '2,3' };
    const r = spawnSync(p.path('tester'), [], { encoding: 'utf8', env, timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('incompatible plugin protocol: the server accepts versions 2,3, this plugin speaks 1');
  });

  it('serves in a private 0700 directory, prints the handshake, and exits when its stdin closes', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const child = spawn(p.path('tester'), [], { env: pluginEnv({ logLevel: 'info', parent: process.env }), stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', () => reject(new Error('plugin exited before its handshake')));
      });
      const m = /^1\|1\|unix\|(\/.+\/plugin\.sock)\|grpc$/.exec(line);
      expect(m, line).not.toBeNull();
      const socket = m?.[1] as string;
      const dir = path.dirname(socket);
      expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
      expect(fs.statSync(socket).isSocket()).toBe(true);
      // It answers the standard gRPC health check, and lists its plugins.
      const conn = connectPlugin(`unix:${socket}`);
      const ctx = () => ({ metadata: runMetadata(undefined), deadline: new Date(Date.now() + 10_000) });
      expect(await checkHealth(conn, ctx())).toBe(true);
      expect(await checkHealth(conn, ctx(), 'stowage.plugin.v1.ObjectStore')).toBe(true);
      expect(await checkHealth(conn, ctx(), 'no.such.Service')).toBe(false);
      expect((await listPlugins(conn, ctx())).map((p) => p.name)).toContain('test.stowage.dev/echo');
      conn.close();
      const t0 = Date.now();
      child.stdin.end();
      expect(await exited).toBe(0);
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(fs.existsSync(dir)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('exits when its parent process is gone even if stdin stays open', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    // A shell parent starts the plugin on the shell's stdin, a pipe this test keeps open; then the
    // shell is killed. Only the change of parent pid tells the plugin its server is gone.
    const env = pluginEnv({ logLevel: 'info', parent: process.env });
    const parent = spawn('sh', ['-c', 'exec 3<&0; "$0" <&3 3<&- & echo $!; wait', p.path('tester')], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    const lines = readline.createInterface({ input: parent.stdout });
    const next = (): Promise<string> => new Promise((r) => lines.once('line', r));
    try {
      const pid = Number(await next());
      expect(await next()).toMatch(/\|grpc$/); // the plugin's handshake, on the inherited stdout
      expect(pidAlive(pid)).toBe(true);
      expect(fs.readlinkSync(`/proc/${pid}/fd/0`)).toMatch(/^(pipe|socket):/); // not /dev/null: stdin stays open
      parent.kill('SIGKILL');
      await waitFor('plugin exit', () => (pidAlive(pid) ? undefined : true), 5000);
    } finally {
      parent.kill('SIGKILL');
      parent.stdin.end();
    }
  });
});

