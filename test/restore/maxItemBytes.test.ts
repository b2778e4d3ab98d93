// --max-item-bytes end to end: `stowage server` with a 64 KiB per-item cap backs up a namespace
// holding one ConfigMap bigger than that, then restores it. The big one fails alone, named with its
// size, the cap and the flag; every other object is restored; the restore ends PartiallyFailed.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { gzTar, validHead } from '../fixtures/archives/hostile.js';
import { uniqueName } from '../support/kube.js';
import { readGzippedObject, testS3 } from '../support/s3ObjectStore.js';
import { getOrUndefined, restoreNow, setupEnv, type Env } from './support.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CAP = 64 * 1024;

describe('--max-item-bytes', () => {
  const stowageNs = uniqueName('stowage');
  const app = uniqueName('bigitem');
  const copy = `${app}-copy`;
  const bucket = uniqueName('maxitem');
  let client: DynamicClient;
  let server: RunningServer | undefined;

  const readObject = (key: string): Promise<string> => readGzippedObject(bucket, `cluster/${key}`);

  beforeAll(async () => {
    client = testClient(inject('cluster').kubeconfigPath);
    const s3 = testS3();
    await s3.createBucket(bucket);
    s3.close();
    await ensureNamespace(client, app);
    await client.create(CORE.configMaps, app, { metadata: { name: 'big' }, data: { blob: 'x'.repeat(100 * 1024) } });
    await client.create(CORE.configMaps, app, { metadata: { name: 'small' }, data: { color: 'blue' } });
    await client.create(CORE.secrets, app, { metadata: { name: 'token' }, stringData: { token: 'not-big' } });
    await ensureNamespace(client, stowageNs);
    await createS3CredentialsSecret(client, stowageNs, 'cloud-credentials', inject('s3'));
    server = await startServer({
      kubeconfigPath: inject('cluster').kubeconfigPath, namespace: stowageNs, args: [`--max-item-bytes=${CAP}`],
      location: { name: 'default', spec: s3LocationSpec(inject('s3'), { bucket, prefix: 'cluster', secret: 'cloud-credentials' }) },
    });
  });

  afterAll(async () => {
    await server?.stop();
    for (const ns of [app, copy]) await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
  });

  it('fails the item over the cap alone, named, and restores the rest: PartiallyFailed', async () => {
    await client.create(RESOURCES.Backup, stowageNs, newBackup('b', stowageNs, { includedNamespaces: [app] }));
    const backup = await waitFinished<Backup>(client, RESOURCES.Backup, stowageNs, 'b');
    // The cap is the reader's: writing a big item is not limited by it.
    expect(backup.status?.phase, backup.status?.failureReason).toBe('Completed');

    await client.create(RESOURCES.Restore, stowageNs, newRestore('r', stowageNs, { backupName: 'b', namespaceMapping: { [app]: copy } }));
    const r = await waitFinished<Restore>(client, RESOURCES.Restore, stowageNs, 'r');
    expect(r.status?.phase, r.status?.failureReason).toBe('PartiallyFailed');
    expect(r.status?.failureReason).toBeUndefined();
    expect(r.status?.errors).toBe(1);
    expect(r.status?.summary?.failed).toBe(1);

    // The others are restored: the namespace, the small ConfigMap, the Secret.
    const small = await client.get<{ data?: Record<string, string> }>(CORE.configMaps, copy, 'small');
    expect(small.data).toEqual({ color: 'blue' });
    await client.get(CORE.secrets, copy, 'token');
    await expect(client.get(CORE.configMaps, copy, 'big')).rejects.toSatisfy(isNotFound);

    const named = new RegExp(
      `configmaps ${copy}/big: its copy in the backup is (\\d+) bytes, over the ${CAP}-byte per-item cap; not restored\\. ` +
      'Raise the server\'s --max-item-bytes to restore it',
    );
    const results = await readObject('restores/r/restore-r-results.gz');
    const m = named.exec(results);
    expect(m, results).not.toBeNull();
    expect(Number(m?.[1])).toBeGreaterThan(100 * 1024);
    const log = await readObject('restores/r/restore-r-logs.gz');
    expect(log).toMatch(named);
    // Its classic copy and its preferred-version copy.
    expect(log).toMatch(/read the backup archive: .*, 2 entries over the 65536-byte per-item cap skipped/);
  });
});

describe('runRestore with maxItemBytes', () => {
  let env: Env;
  const ns = uniqueName('bigitem');
  const big = { name: `resources/configmaps/namespaces/${ns}/big.json`, body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big', namespace: ns }, data: { x: 'y'.repeat(5000) } }) };
  const bigBytes = Buffer.byteLength(big.body);

  async function* bytes(b: Buffer): AsyncGenerator<Uint8Array> {
    yield b;
  }
  const stored = async (entries: Parameters<typeof gzTar>[0]): Promise<Backup> => {
    const name = uniqueName('b');
    await env.store.putTarball(name, bytes(await gzTar(entries)));
    return newBackup(name, 'stowage');
  };

  beforeAll(async () => {
    env = await setupEnv('maxitem');
  });
  afterAll(async () => {
    await env?.client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    await env?.close();
  });

  it('a dry run predicts the failure (a warning), and a label selector cannot leave the unread item out', async () => {
    const backup = await stored([...validHead(ns), big]);
    const dry = await restoreNow(env, backup, { dryRun: true, labelSelector: { matchLabels: { any: 'thing' } } }, { maxItemBytes: 4096 });
    expect(dry.result.phase).toBe('Completed');
    expect(dry.result.summary.failed).toBe(1);
    expect(dry.result.results.warnings.namespaces[ns]).toEqual([
      `configmaps ${ns}/big: would fail: its copy in the backup is ${bigBytes} bytes, over the 4096-byte per-item cap; not restored ` +
      '(unread, so whether it matches the label selector is unknown). Raise the server\'s --max-item-bytes to restore it',
    ]);
    expect(await getOrUndefined(env.client, CORE.namespaces, undefined, ns)).toBeUndefined();
  });

  it('restores the rest for real, and counts the big item in the progress', async () => {
    const { result, progress } = await restoreNow(env, await stored([...validHead(ns), big]), {}, { maxItemBytes: 4096 });
    expect(result.phase).toBe('PartiallyFailed');
    expect(result.summary).toEqual({ created: 2, updated: 0, skipped: 0, failed: 1 });
    expect(result.results.errors.namespaces[ns]).toEqual([
      `configmaps ${ns}/big: its copy in the backup is ${bigBytes} bytes, over the 4096-byte per-item cap; not restored. Raise the server's --max-item-bytes to restore it`,
    ]);
    expect(result.progress).toEqual({ totalItems: 3, itemsRestored: 3 });
    expect(progress.every((p) => p.totalItems === 3)).toBe(true);
    expect(await getOrUndefined(env.client, CORE.configMaps, ns, 'first')).toBeDefined();
  });

  it('with a cap above the item, restores it', async () => {
    const { result } = await restoreNow(env, await stored([...validHead(ns), big]), { existingResourcePolicy: 'none' }, { maxItemBytes: 8192 });
    expect(result.failureReason).toBeUndefined();
    expect(result.summary.failed).toBe(0);
    expect(await getOrUndefined(env.client, CORE.configMaps, ns, 'big')).toBeDefined();
  });

  it('still refuses a hostile archive whole, big item or not, before anything is created', async () => {
    const other = uniqueName('bigitem');
    const { result } = await restoreNow(env, await stored([...validHead(other), big, { name: 'resources/configmaps/namespaces/x/../../../evil.json', body: '{}' }]), {}, { maxItemBytes: 4096 });
    expect(result.phase).toBe('Failed');
    expect(result.failureReason).toContain('(path-traversal)');
    expect(result.outcomes).toEqual([]);
    expect(await getOrUndefined(env.client, CORE.namespaces, undefined, other)).toBeUndefined();
  });
});
