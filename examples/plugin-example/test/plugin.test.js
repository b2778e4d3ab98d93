// End to end: the Stowage plugin host discovers this package's executable from a plugin directory,
// starts it as a real process, and calls its actions over gRPC.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { createPluginPool } from 'stowage/plugin-host';
import { BACKED_UP_BY, RESTORED_BY, SKIP_RESTORE } from '../src/actions.js';
import { BACKUP_ACTION, RESTORE_ACTION } from '../src/plugin.js';

const bin = path.resolve(import.meta.dirname, '../bin/stowage-plugin-example.js');
const run = { kind: 'backup', namespace: 'stowage', name: 'nightly' };
const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'nightly', namespace: 'stowage' } };
const restore = { apiVersion: 'stowage.dev/v1', kind: 'Restore', metadata: { name: 'rollback', namespace: 'stowage' } };
const cm = (name, annotations) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'app', annotations }, data: { a: '1' } });

let dir;
let pool;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-example-plugins-'));
  // A launcher inside the plugin directory (discovery follows no symlink out of it), writable by its owner only.
  const launcher = path.join(dir, 'stowage-plugin-example');
  fs.writeFileSync(launcher, `#!${process.execPath}\nimport(${JSON.stringify(pathToFileURL(bin).href)});\n`);
  fs.chmodSync(launcher, 0o755);
  pool = await createPluginPool({ pluginDirs: [dir] });
});

after(async () => {
  await pool?.shutdown();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('run by hand, the executable says it belongs to the Stowage server', () => {
  const r = spawnSync(process.execPath, [bin], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /This binary is a Stowage plugin\. It is started by the Stowage server, not by hand\./);
});

test('the host discovers both actions', () => {
  const names = pool.plugins.map((p) => `${p.kind} ${p.name}`);
  assert.deepEqual(names, [`BackupItemAction ${BACKUP_ACTION}`, `RestoreItemAction ${RESTORE_ACTION}`]);
});

test('the backup action annotates ConfigMaps through the host', async () => {
  const handle = pool.handle(run);
  try {
    const action = handle.backupItemAction(BACKUP_ACTION);
    assert.deepEqual((await action.appliesTo()).includedResources, ['configmaps']);
    const out = await action.execute({ item: cm('settings'), backup });
    assert.equal(out.item.metadata.annotations[BACKED_UP_BY], 'nightly');
  } finally {
    handle.release();
  }
});

test('the restore action marks or skips ConfigMaps through the host', async () => {
  const handle = pool.handle({ kind: 'restore', namespace: 'stowage', name: 'rollback' });
  try {
    const action = handle.restoreItemAction(RESTORE_ACTION);
    const marked = await action.execute({ item: cm('settings'), itemFromBackup: cm('settings'), restore });
    assert.equal(marked.item.metadata.annotations[RESTORED_BY], 'rollback');
    const skipped = await action.execute({ item: cm('tmp', { [SKIP_RESTORE]: 'true' }), itemFromBackup: cm('tmp'), restore });
    assert.equal(skipped.skipRestore, true);
  } finally {
    handle.release();
  }
});
