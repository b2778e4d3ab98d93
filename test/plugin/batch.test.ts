// ExecuteBatch: many items in one plugin call, one result per item, per-item failures, plugins
// written before the method existed, and many concurrent calls with large items.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import { MAX_BATCH_ITEMS } from '../../src/plugin/host/remoteActions.js';
import type { KubeObject } from '../../src/plugin/api/index.js';
import { configMap, pluginDir, removeTempDirs, requireBuilt, RUN } from './support.js';

beforeAll(requireBuilt);
afterAll(removeTempDirs);

const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b', namespace: 'stowage' } };
const annotations = (o: KubeObject): Record<string, string> => o.metadata.annotations ?? {};

describe('ExecuteBatch', () => {
  let pool: PluginPool;
  let old: PluginPool;
  let whole: PluginPool;

  beforeAll(async () => {
    pool = await createPluginPool({ pluginDirs: [pluginDir({ batcher: 'batch-plugin.mjs' }).dir] });
    old = await createPluginPool({ pluginDirs: [pluginDir({ 'old-plugin': 'batch-plugin.mjs' }).dir] });
    whole = await createPluginPool({ pluginDirs: [pluginDir({ 'whole-items': 'batch-plugin.mjs' }).dir] });
  });
  afterAll(async () => {
    await Promise.all([pool.shutdown(), old.shutdown(), whole.shutdown()]);
  });

  /** A ConfigMap with data, labels and annotations for the in-place action to change. */
  const rich = (name: string): KubeObject => ({
    ...configMap(name),
    metadata: { ...configMap(name).metadata, labels: { app: 'a' }, annotations: { keep: 'k', remove: 'r' } },
    data: { secret: 's', plain: 'p', nested: JSON.parse('{"__proto__":"own key"}') as unknown },
  } as KubeObject);
  const nested = (o: unknown): unknown => (o as { data: { nested: unknown } }).data.nested;
  const expected = (name: string): unknown => ({
    ...configMap(name),
    metadata: { ...configMap(name).metadata, labels: { app: 'a', touched: 'yes' }, annotations: { keep: 'k' } },
    data: { plain: 'p', nested: JSON.parse('{"__proto__":"own key"}') as unknown },
  });

  it('the plugin answers with each item\'s changes: the host keeps the rest of the objects it sent', async () => {
    const items = [rich('p-1'), rich('p-2')];
    const sent = JSON.stringify(items);
    const results = await pool.handle(RUN).backupItemAction('test.stowage.dev/in-place').executeBatch!({ items, backup });
    const out = results.map((r) => (r.ok ? r.output.item : r.error));
    expect(out).toEqual([expected('p-1'), expected('p-2')]);
    expect(JSON.stringify(items)).toBe(sent); // the items the host holds are not changed
    // Unchanged parts are the very objects sent: the host parsed no whole item.
    expect(out.map((o, i) => typeof o !== 'string' && o.metadata.annotations !== items[i]?.metadata.annotations)).toEqual([true, true]);
    expect(out.map((o, i) => nested(o) === nested(items[i]))).toEqual([true, true]);
  });

  it('a plugin that answers whole items (an SDK from before patches) gives the same results', async () => {
    const items = [rich('w-1'), rich('w-2')];
    const results = await whole.handle(RUN).backupItemAction('test.stowage.dev/in-place').executeBatch!({ items, backup });
    const out = results.map((r) => (r.ok ? r.output.item : r.error));
    expect(out).toEqual([expected('w-1'), expected('w-2')]);
    expect(out.map((o, i) => nested(o) === nested(items[i]))).toEqual([false, false]);
  });

  it('sends items in batches of at most MAX_BATCH_ITEMS, one result per item in order', async () => {
    const action = pool.handle(RUN).backupItemAction('test.stowage.dev/counted');
    const items = Array.from({ length: MAX_BATCH_ITEMS + 10 }, (_, i) => configMap(`cm-${i}`));
    const results = await action.executeBatch!({ items, backup });
    expect(results).toHaveLength(items.length);
    const out = results.map((r) => (r.ok ? r.output.item : undefined));
    expect(out.map((o) => o?.metadata.name)).toEqual(items.map((i) => i.metadata.name));
    const sizes = out.map((o) => (o === undefined ? '' : annotations(o).size));
    expect(new Set(sizes.slice(0, MAX_BATCH_ITEMS))).toEqual(new Set([String(MAX_BATCH_ITEMS)]));
    expect(new Set(sizes.slice(MAX_BATCH_ITEMS))).toEqual(new Set(['10']));
    const batchIds = new Set(out.map((o) => (o === undefined ? '' : annotations(o).batch)));
    expect(batchIds.size).toBe(2);
  });

  it('an action without executeBatch runs item by item in the plugin; a failing item fails alone', async () => {
    const action = pool.handle(RUN).backupItemAction('test.stowage.dev/picky');
    const results = await action.executeBatch!({ items: [configMap('a'), configMap('bad-b'), configMap('c')], backup });
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    const [a, b] = results;
    expect(b).toEqual({ ok: false, error: 'picky: will not take bad-b' });
    expect(a?.ok === true && a.output.additionalItems).toEqual([{ groupResource: 'secrets', namespace: 'default', name: 'a-s' }]);
    expect(a?.ok === true && annotations(a.output.item).picky).toBe('yes');
  });

  it('a plugin without ExecuteBatch gets one Execute per item instead', async () => {
    const action = old.handle(RUN).backupItemAction('test.stowage.dev/counted');
    for (let round = 0; round < 2; round++) {
      const results = await action.executeBatch!({ items: [configMap('x'), configMap('y')], backup });
      expect(results.map((r) => (r.ok ? annotations(r.output.item).batch : r.error))).toEqual(['none', 'none']);
    }
    const picky = await old.handle(RUN).backupItemAction('test.stowage.dev/picky').executeBatch!({ items: [configMap('bad-z')], backup });
    expect(picky).toHaveLength(1);
    expect(picky[0]?.ok === false && picky[0].error).toContain('picky: will not take bad-z');
  });

  it('answers 16 concurrent calls carrying 30 KiB items each', async () => {
    const action = pool.handle(RUN).backupItemAction('test.stowage.dev/picky');
    const big = (i: number): KubeObject => ({ ...configMap(`big-${i}`), data: { blob: 'x'.repeat(30 * 1024) } });
    const calls = Array.from({ length: 16 }, (_, i) => action.execute({ item: big(i), backup }));
    const batched = Array.from({ length: 16 }, (_, i) => action.executeBatch!({ items: [big(100 + i), big(200 + i)], backup }));
    const [singles, batches] = await Promise.all([Promise.all(calls), Promise.all(batched)]);
    expect(singles.map((o) => annotations(o.item).picky)).toEqual(Array(16).fill('yes'));
    expect(batches.flat().every((r) => r.ok && (r.output.item as { data?: { blob?: string } }).data?.blob?.length === 30 * 1024)).toBe(true);
  }, 30_000);
});
