// Unit tests of the action logic: plain functions, no server needed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { annotateOnBackup, BACKED_UP_BY, DATA_KEYS, markOnRestore, RESTORED_BY, SKIP_RESTORE } from '../src/actions.js';

const cm = (name, annotations) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'app', annotations }, data: { a: '1', b: '2' } });
const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'nightly', namespace: 'stowage' } };
const restore = { apiVersion: 'stowage.dev/v1', kind: 'Restore', metadata: { name: 'rollback', namespace: 'stowage' } };

test('backup annotates the ConfigMap and keeps its other annotations', () => {
  const out = annotateOnBackup({ item: cm('settings', { keep: 'me' }), backup });
  assert.deepEqual(out.item.metadata.annotations, { keep: 'me', [BACKED_UP_BY]: 'nightly', [DATA_KEYS]: '2' });
  assert.deepEqual(out.additionalItems, []);
});

test('restore marks ConfigMaps, and skips those that ask for it', () => {
  const marked = markOnRestore({ item: cm('settings'), itemFromBackup: cm('settings'), restore });
  assert.equal(marked.skipRestore, false);
  assert.equal(marked.item.metadata.annotations[RESTORED_BY], 'rollback');
  const skipped = markOnRestore({ item: cm('temp', { [SKIP_RESTORE]: 'true' }), itemFromBackup: cm('temp'), restore });
  assert.equal(skipped.skipRestore, true);
});
