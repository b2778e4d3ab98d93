// Plugin backup item actions inside a real backup: items go to the plugin a page at a time
// (ExecuteBatch), one item's failure fails that item alone, and additional items are backed up.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import winston from 'winston';
import { newBackup } from '../../src/apis/v1/index.js';
import { readArchive } from '../../src/archive/index.js';
import { runBackup } from '../../src/backup/index.js';
import { CORE, createDynamicClient, loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { createBackupStore, type BackupStore } from '../../src/persistence/backupStore.js';
import { createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import { uniqueName } from '../support/kube.js';
import { testS3 } from '../support/s3ObjectStore.js';
import { pluginDir, removeTempDirs, requireBuilt } from '../plugin/support.js';

const CONFIGMAPS = 120;
const CLUSTER_ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', namespaced: false };
const PAGE = 50;

describe('plugin backup item actions in a backup', () => {
  let client: DynamicClient;
  let store: BackupStore;
  let pool: PluginPool;
  let ns = '';

  beforeAll(async () => {
    requireBuilt();
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 200, burst: 400 });
    const s3 = testS3();
    store = createBackupStore({ objectStore: s3.store, bucket: await s3.createBucket(uniqueName('actions')), prefix: '' });
    pool = await createPluginPool({ pluginDirs: [pluginDir({ batcher: 'batch-plugin.mjs' }).dir] });
    ns = uniqueName('acts');
    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const names = Array.from({ length: CONFIGMAPS }, (_, i) => (i % 40 === 7 ? `bad-${i}` : `cm-${i}`));
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(names.slice(i, i + 20).map((name) => client.create(CORE.configMaps, ns, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { k: name } })));
    }
    await client.create(CORE.secrets, ns, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'cm-3-s', namespace: ns }, data: { k: 'c2VjcmV0' } });
    await client.create(CLUSTER_ROLES, undefined, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `${ns}-cm-5` }, rules: [] });
  }, 120_000);
  afterAll(async () => {
    await pool.shutdown();
    await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    await client.delete(CLUSTER_ROLES, undefined, `${ns}-cm-5`).catch(() => undefined);
    removeTempDirs();
  });

  it('batches a page per call, fails only the item an action refused, and backs up additional items', async () => {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (c: Buffer) => lines.push(...c.toString('utf8').split('\n').filter((l) => l !== '')));
    const log = winston.createLogger({ level: 'info', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
    const handle = pool.handle({ kind: 'backup', namespace: 'stowage', name: 'actions' });
    const actions = ['test.stowage.dev/counted', 'test.stowage.dev/picky'].map((name) => ({ name, action: handle.backupItemAction(name) }));
    const backup = newBackup(uniqueName('b'), 'stowage', { includedNamespaces: [ns], includedResources: ['configmaps', 'secrets', 'clusterroles'] });
    const result = await runBackup({ client, store, log, actions, pageSize: PAGE }, backup);
    handle.release();

    expect(result.phase).toBe('PartiallyFailed');
    const bad = Array.from({ length: CONFIGMAPS }, (_, i) => i).filter((i) => i % 40 === 7).map((i) => `bad-${i}`);
    expect(result.results.errors.namespaces[ns]?.sort()).toEqual(
      bad.map((b) => `backup item action test.stowage.dev/picky failed on configmaps "${ns}/${b}": picky: will not take ${b}`).sort(),
    );
    const contents = await readArchive(await store.getTarball(backup.metadata.name));
    const cms = contents.items.filter((i) => i.groupResource === 'configmaps' && i.namespace === ns);
    // Every configmap but the refused ones (and kube-root-ca.crt, which the controller-manager adds).
    expect(cms.map((i) => i.name).filter((n) => !n.startsWith('kube-')).sort()).toEqual(
      Array.from({ length: CONFIGMAPS }, (_, i) => (i % 40 === 7 ? `bad-${i}` : `cm-${i}`)).filter((n) => !bad.includes(n)).sort(),
    );
    const annotations = cms.map((i) => (i.object.metadata as { annotations?: Record<string, string> }).annotations ?? {});
    expect(annotations.every((a) => a.picky === 'yes')).toBe(true);
    // The counted action saw each list page in one call: batches of at most a page, several items each.
    const sizes = annotations.map((a) => Number(a.size));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(PAGE);
    expect(new Set(annotations.map((a) => a.batch)).size).toBe(Math.ceil((cms.length + bad.length) / PAGE));
    // picky names <name>-s for each item: the one that exists is backed up, the others are warnings.
    expect(contents.items.some((i) => i.groupResource === 'secrets' && i.name === 'cm-3-s')).toBe(true);
    expect(result.results.warnings.namespaces[ns]?.some((w) => w.includes('"cm-4-s"') || w.includes(`${ns}/cm-4-s`))).toBe(true);
    expect(lines.some((l) => l.includes('picky: will not take bad-7'))).toBe(true);
    // A cluster-scoped item a plugin names is pulled in, with a reason naming the plugin and the item.
    expect(contents.items.some((i) => i.groupResource === 'clusterroles.rbac.authorization.k8s.io' && i.name === `${ns}-cm-5`)).toBe(true);
    expect(result.results.pulledIn).toEqual([{
      groupResource: 'clusterroles.rbac.authorization.k8s.io', name: `${ns}-cm-5`, requiredBy: `configmaps "${ns}/cm-5"`,
      reason: `named by plugin action test.stowage.dev/picky for ConfigMap "${ns}/cm-5"`,
    }]);
  }, 120_000);
});
