// The server-wide pool: one shared process per executable, lightweight per-run handles, idle stop
// and restart, per-config instances, log routing by run, minimal environment, graceful shutdown.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import { configMap, livePids, memoryLogger, pluginDir, removeTempDirs, requireBuilt, RUN, selfCommand, tempDir, waitFor } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b', namespace: 'stowage' } };

describe('handles on a shared pool', () => {
  let pool: PluginPool;
  let launcher: string;
  const server = memoryLogger();

  beforeAll(async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    launcher = p.path('tester');
    pool = await createPluginPool({ pluginDirs: [p.dir], logger: server.logger });
  });
  afterAll(async () => {
    await pool.shutdown();
  });

  it('lists what discovery found', () => {
    expect(pool.plugins.map((p) => `${p.kind} ${p.name}`)).toEqual([
      'BackupItemAction test.stowage.dev/echo',
      'BackupItemAction test.stowage.dev/env',
      'BackupItemAction test.stowage.dev/fail',
      'BackupItemAction test.stowage.dev/hang',
      'BackupItemAction test.stowage.dev/log',
      'DeleteItemAction test.stowage.dev/echo',
      'ObjectStore test.stowage.dev/memory',
      'RestoreItemAction test.stowage.dev/echo',
      'VolumeSnapshotter test.stowage.dev/snapshots',
    ]);
    expect(new Set(pool.plugins.map((p) => p.executable))).toEqual(new Set([launcher]));
  });

  it('two runs share one process; releasing a handle never stops it; handles record what they used', async () => {
    const a = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'a' });
    const b = pool.handle({ kind: 'restore', namespace: 'stowage', name: 'b' });
    const outA = await a.backupItemAction('test.stowage.dev/echo').execute({ item: configMap('x'), backup });
    const outB = await b.restoreItemAction('test.stowage.dev/echo').execute({ item: configMap('skip-y'), itemFromBackup: configMap('orig'), restore: backup });
    expect(outB.skipRestore).toBe(true);
    expect(outB.item.metadata.annotations?.['test.stowage.dev/from-backup']).toBe('orig');
    const pid = livePids(launcher);
    expect(pid).toHaveLength(1);
    expect(outA.item.metadata.annotations?.['test.stowage.dev/pid']).toBe(String(pid[0]));
    expect(a.used()).toEqual(['BackupItemAction test.stowage.dev/echo']);
    expect(b.used()).toEqual(['RestoreItemAction test.stowage.dev/echo']);
    a.release();
    a.release(); // idempotent
    expect(() => a.backupItemAction('test.stowage.dev/echo')).toThrow('the plugin handle of backup/stowage/a was already released');
    // Objects dispensed before the release stop working too.
    const stale = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'stale' });
    const staleAction = stale.backupItemAction('test.stowage.dev/echo');
    stale.release();
    await expect(staleAction.execute({ item: configMap('x'), backup })).rejects.toThrow('the plugin handle of backup/stowage/stale was already released');
    await b.deleteItemAction('test.stowage.dev/echo').execute({ item: configMap('fine'), backup });
    await expect(b.deleteItemAction('test.stowage.dev/echo').execute({ item: configMap('bad'), backup })).rejects.toThrow('cannot clean up bad');
    expect(livePids(launcher)).toEqual(pid);
    b.release();
    expect(livePids(launcher)).toEqual(pid);
  });

  it('lists all actions of a kind with their selectors', async () => {
    const h = pool.handle(RUN);
    try {
      const actions = h.backupItemActions();
      expect(actions.map((a) => a.name)).toEqual([
        'test.stowage.dev/echo',
        'test.stowage.dev/env',
        'test.stowage.dev/fail',
        'test.stowage.dev/hang',
        'test.stowage.dev/log',
      ]);
      expect(await actions[0]?.appliesTo()).toEqual({
        includedNamespaces: [],
        excludedNamespaces: [],
        includedResources: ['configmaps'],
        excludedResources: [],
        labelSelector: '',
      });
      expect(h.restoreItemActions().map((a) => a.name)).toEqual(['test.stowage.dev/echo']);
      expect(h.deleteItemActions().map((a) => a.name)).toEqual(['test.stowage.dev/echo']);
    } finally {
      h.release();
    }
  });

  it('instantiates stateful plugins per config: two configs, two instances, one process', async () => {
    const h1 = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'c1' });
    const h2 = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'c2' });
    try {
      const s1 = await h1.objectStore('test.stowage.dev/memory', { name: 'one' });
      const s2 = await h2.objectStore('test.stowage.dev/memory', { name: 'two' });
      const s1again = await h2.objectStore('test.stowage.dev/memory', { name: 'one' });
      await s1.putObject('bkt', 'k', (async function* () { yield Buffer.from('first'); })());
      expect(await s2.objectExists('bkt', 'k')).toBe(false);
      expect(await s1again.objectExists('bkt', 'k')).toBe(true); // same config, same instance
      const pid = livePids(launcher)[0];
      expect(await s1.createSignedURL('bkt', 'k', 60)).toBe(`memory://one/bkt/k?pid=${pid}`);
      expect(await s2.createSignedURL('bkt', 'k', 60)).toBe(`memory://two/bkt/k?pid=${pid}`);
      const err = await s2.getObject('bkt', 'k').catch((e: unknown) => e as Error & { code?: string });
      expect(err).toBeInstanceOf(Error);
      expect((err as { code?: string }).code).toBe('NotFound');
      // ObjectStore.init on a dispensed store switches it to the instance for the new config.
      await s2.init({ name: 'one' });
      expect(await s2.objectExists('bkt', 'k')).toBe(true);
      const st = pool.status()[0];
      expect(st?.instances).toBe(2);
      expect(livePids(launcher)).toHaveLength(1);
    } finally {
      h1.release();
      h2.release();
    }
  });

  it('routes plugin log lines into the run that made the call, tagged with the plugin name', async () => {
    const run = memoryLogger();
    const runId = { kind: 'backup', namespace: 'stowage', name: 'logs' };
    const h = pool.handle(runId, run.logger);
    try {
      await h.backupItemAction('test.stowage.dev/log').execute({ item: configMap('logged-item'), backup });
      const line = await waitFor('routed plugin line', () => run.entries.find((e) => e.message === 'looked at item'));
      expect(line).toMatchObject({ level: 'warn', plugin: 'test.stowage.dev/log', logSource: 'plugin', item: 'logged-item' });
      expect(server.entries.find((e) => e.message === 'looked at item')).toBeUndefined();
    } finally {
      h.release();
    }
    // A run without its own logger logs to the server log; each line names the run.
    const other = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'other' });
    try {
      await other.backupItemAction('test.stowage.dev/log').execute({ item: configMap('second'), backup });
      const line = await waitFor('server line', () => server.entries.find((e) => e.message === 'looked at item'));
      expect(line).toMatchObject({ plugin: 'test.stowage.dev/log', run: 'backup/stowage/other' });
    } finally {
      other.release();
    }
    // Lines logged outside any call belong to no run: the server log has them.
    const startup = server.entries.find((e) => e.message === 'test plugin serving');
    expect(startup).toMatchObject({ level: 'info', logSource: 'plugin', plugin: launcher });
    expect(startup?.run).toBeUndefined();
  });

  it('starts plugins with a minimal environment', async () => {
    const h = pool.handle(RUN);
    try {
      process.env.STOWAGE_TEST_SECRET = 'must-not-leak';
      const out = await h.backupItemAction('test.stowage.dev/env').execute({ item: configMap('e'), backup });
      const env = JSON.parse(out.item.metadata.annotations?.env ?? '{}') as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual(['PATH', 'PLUGIN_PROTOCOL_VERSIONS', 'STOWAGE_PLUGIN', 'STOWAGE_PLUGIN_LOG_LEVEL', 'STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS']);
      expect(env.PLUGIN_PROTOCOL_VERSIONS).toBe('1');
      // The object-store outage window (--object-store-outage-timeout, default 2m) reaches every plugin.
      expect(env.STOWAGE_PLUGIN_OBJECT_STORE_OUTAGE_TIMEOUT_MS).toBe('120000');
      expect(env.STOWAGE_PLUGIN_LOG_LEVEL).toBe('debug');
    } finally {
      delete process.env.STOWAGE_TEST_SECRET;
      h.release();
    }
  });
});

describe('idle processes', () => {
  it('stop after the idle timeout and start again on the next call, replaying Init', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const launcher = p.path('tester');
    const pool = await createPluginPool({ pluginDirs: [p.dir], idleTimeoutMs: 400, logger: memoryLogger().logger });
    const h = pool.handle(RUN);
    try {
      const store = await h.objectStore('test.stowage.dev/memory', { name: 'idle' });
      const first = livePids(launcher);
      expect(first).toHaveLength(1);
      await waitFor('idle stop', () => (livePids(launcher).length === 0 ? true : undefined), 5000);
      expect(pool.status()[0]).toMatchObject({ state: 'stopped', crashes: 0 });
      // The next call starts a new process and re-creates the store instance there.
      expect(await store.createSignedURL('b', 'k', 1)).toMatch(/^memory:\/\/idle\/b\/k\?pid=\d+$/);
      const second = livePids(launcher);
      expect(second).toHaveLength(1);
      expect(second[0]).not.toBe(first[0]);
      expect(pool.status()[0]).toMatchObject({ restarts: 1, crashes: 0, inits: 2 });
    } finally {
      h.release();
      await pool.shutdown();
    }
  });
});

describe('shutdown', () => {
  it('asks plugins to shut down and they exit at once', async () => {
    const p = pluginDir({ tester: 'test-plugin.mjs' });
    const pool = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger });
    expect(livePids(p.path('tester'))).toHaveLength(1);
    const t0 = Date.now();
    await pool.shutdown();
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(livePids(p.path('tester'))).toHaveLength(0);
    expect(() => pool.handle(RUN)).toThrow('the plugin pool is shut down');
  });

  it('kills a plugin that ignores Controller.Shutdown after 2 s', async () => {
    const p = pluginDir({ stubborn: 'stubborn.mjs' });
    const pool = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger });
    expect(livePids(p.path('stubborn'))).toHaveLength(1);
    const t0 = Date.now();
    await pool.shutdown();
    const ms = Date.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(4000);
    expect(livePids(p.path('stubborn'))).toHaveLength(0);
  });
});

describe('registry', () => {
  it('scans recursively and includes the built-ins', async () => {
    const p = pluginDir({});
    fs.mkdirSync(`${p.dir}/vendor/acme`, { recursive: true });
    const nested = pluginDir({ tester: 'test-plugin.mjs' });
    fs.renameSync(nested.path('tester'), `${p.dir}/vendor/acme/tester`);
    const self = selfCommand();
    const pool = await createPluginPool({ pluginDirs: [p.dir], selfCommand: self.command, logger: memoryLogger().logger });
    try {
      const byExe = new Map(pool.plugins.map((x) => [`${x.kind} ${x.name}`, x.executable]));
      expect(byExe.get('ObjectStore stowage.dev/aws')).toBe('stowage run-plugins');
      expect(byExe.get('ObjectStore stowage.dev/filesystem')).toBe('stowage run-plugins');
      expect(byExe.get('BackupItemAction test.stowage.dev/echo')).toBe(`${fs.realpathSync(p.dir)}/vendor/acme/tester`);
    } finally {
      await pool.shutdown();
    }
  });

  it('rejects a plugin name served by two executables, naming both', async () => {
    const p = pluginDir({ one: 'test-plugin.mjs', two: 'test-plugin.mjs' });
    const err = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(`duplicate plugin: BackupItemAction test.stowage.dev/echo is served by both ${p.path('one')} and ${p.path('two')}`);
    await waitFor('no fixture left', () => (livePids(p.dir).length === 0 ? true : undefined), 3000);
  });

  it('rejects malformed plugin names', async () => {
    const p = pluginDir({ bad: 'bad-names.mjs' });
    const err = await createPluginPool({ pluginDirs: [p.dir], logger: memoryLogger().logger }).catch((e: unknown) => e as Error);
    expect((err as Error).message).toContain(
      `plugin executable ${p.path('bad')} lists BackupItemAction "Not A Valid Name", which is not a valid plugin name (expected domain/name, lowercase, e.g. example.com/my-plugin)`,
    );
    await waitFor('no fixture left', () => (livePids(p.dir).length === 0 ? true : undefined), 3000);
  });

  it('names a plugin directory that does not exist', async () => {
    const missing = `${tempDir('gone')}/nope`;
    await expect(createPluginPool({ pluginDirs: [missing], logger: memoryLogger().logger })).rejects.toThrow(`cannot scan plugin directory ${missing}`);
  });
});
