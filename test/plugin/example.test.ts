// The standalone example plugin (examples/plugin-example) is discovered from a plugin directory,
// started through the real host, and its actions work; its own `npm test` passes too.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPluginPool } from '../../src/plugin/host/index.js';
import { memoryLogger, removeTempDirs, requireBuilt, ROOT, selfCommand, tempDir, waitFor } from './support.js';

const EXAMPLE = path.join(ROOT, 'examples/plugin-example');

/** The example depends on this package through `file:../..`; npm links it (offline: no download). */
function installExample(): void {
  if (fs.existsSync(path.join(EXAMPLE, 'node_modules/stowage/package.json'))) return;
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--offline'], { cwd: EXAMPLE, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`npm install in ${EXAMPLE} failed: ${r.stderr}`);
}

beforeAll(() => {
  requireBuilt();
  installExample();
});
afterAll(removeTempDirs);

describe('examples/plugin-example', () => {
  it('is discovered from a plugin directory next to the built-ins and invoked through the host', async () => {
    const dir = tempDir('example-plugins');
    fs.mkdirSync(path.join(dir, 'vendor'));
    // A launcher inside the directory: discovery does not follow a symlink out of it.
    const launcher = path.join(dir, 'vendor/stowage-plugin-example');
    fs.writeFileSync(launcher, `#!${process.execPath}\nimport(${JSON.stringify(pathToFileURL(path.join(EXAMPLE, 'bin/stowage-plugin-example.js')).href)});\n`);
    fs.chmodSync(launcher, 0o755);
    const run = memoryLogger();
    const pool = await createPluginPool({ pluginDirs: [dir], selfCommand: selfCommand().command, logger: memoryLogger().logger });
    const handle = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'nightly' }, run.logger);
    try {
      expect(pool.plugins.map((p) => `${p.kind} ${p.name}`)).toEqual([
        'BackupItemAction example.com/annotate-configmaps',
        'ObjectStore stowage.dev/aws',
        'ObjectStore stowage.dev/filesystem',
        'RestoreItemAction example.com/mark-restored-configmaps',
      ]);
      const [backupAction] = handle.backupItemActions();
      expect(backupAction?.name).toBe('example.com/annotate-configmaps');
      expect((await backupAction?.appliesTo())?.includedResources).toEqual(['configmaps']);
      const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'app' }, data: { a: '1', b: '2', c: '3' } };
      const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'nightly', namespace: 'stowage' } };
      const out = await backupAction?.execute({ item: cm, backup });
      expect(out?.item.metadata.annotations).toEqual({ 'example.com/backed-up-by': 'nightly', 'example.com/data-keys': '3' });
      // The plugin's log line for this call landed in the backup's own log.
      const line = await waitFor('plugin log line', () => run.entries.find((e) => e.message === 'annotating ConfigMap'));
      expect(line).toMatchObject({ plugin: 'example.com/annotate-configmaps', namespace: 'app', name: 'settings' });

      const restore = { apiVersion: 'stowage.dev/v1', kind: 'Restore', metadata: { name: 'rollback', namespace: 'stowage' } };
      const restoreAction = handle.restoreItemAction('example.com/mark-restored-configmaps');
      const restored = await restoreAction.execute({ item: out?.item ?? cm, itemFromBackup: out?.item ?? cm, restore });
      expect(restored.skipRestore).toBe(false);
      expect(restored.item.metadata.annotations?.['example.com/restored-by']).toBe('rollback');
    } finally {
      handle.release();
      await pool.shutdown();
    }
  });

  it("passes its own `npm test`", () => {
    const r = spawnSync('npm', ['test'], { cwd: EXAMPLE, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // node --test prints TAP ("# pass 6") when not on a terminal up to Node 20, its spec reporter ("ℹ pass 6") after.
    expect(r.stdout).toMatch(/^(# |ℹ )fail 0$/m);
    expect(r.stdout).toMatch(/^(# |ℹ )pass [1-9]/m);
  });
});
