// The backup engine against the real apiserver and S3 server: runBackup over a seeded namespace,
// then the tarball is read back and compared with the cluster and the manifest.
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import winston from 'winston';
import { newBackup, type BackupSpec } from '../../src/apis/v1/index.js';
import { readArchive, verifyManifest, type ArchiveContents } from '../../src/archive/index.js';
import { runBackup, type BackupResult } from '../../src/backup/index.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, createDynamicClient, loadKubeConfig, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { createBackupStore, type BackupStore } from '../../src/persistence/backupStore.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { testS3, type TestS3 } from '../support/s3ObjectStore.js';

const RBAC = 'rbac.authorization.k8s.io';
const res = (group: string, version: string, resource: string, namespaced: boolean) => ({ group, version, resource, namespaced });
const DEPLOYMENTS = res('apps', 'v1', 'deployments', true);
const ROLES = res(RBAC, 'v1', 'roles', true);
const ROLE_BINDINGS = res(RBAC, 'v1', 'rolebindings', true);
const CLUSTER_ROLES = res(RBAC, 'v1', 'clusterroles', false);

function capturingLogger(): { log: winston.Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => lines.push(...c.toString('utf8').split('\n').filter((l) => l !== '')));
  const log = winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { log, lines };
}

describe('runBackup against the real cluster', () => {
  let client: DynamicClient;
  let s3: TestS3;
  let store: BackupStore;
  let ns = '';
  let group = '';
  let pv = '';
  const secretValue = `TOPSECRET-${uniqueName('v')}`;

  const backupNow = async (name: string, spec: BackupSpec, logger = capturingLogger()): Promise<{ result: BackupResult; contents: ArchiveContents; lines: string[] }> => {
    const backup = newBackup(name, 'stowage', spec);
    const result = await runBackup({ client, store, log: logger.log, pageSize: 50 }, backup);
    expect(result.failureReason).toBeUndefined();
    const contents = await readArchive(await store.getTarball(name));
    return { result, contents, lines: logger.lines };
  };
  const paths = (c: ArchiveContents) => Object.keys(c.entries).sort();
  const itemPaths = (c: ArchiveContents) => c.items.map((i) => i.path).sort();

  beforeAll(async () => {
    client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), { qps: 200, burst: 400 });
    s3 = testS3();
    const bucket = await s3.createBucket(uniqueName('backups'));
    store = createBackupStore({ objectStore: s3.store, bucket, prefix: 'engine' });
    ns = uniqueName('bk');
    group = `${uniqueName('g')}.test.stowage.dev`;
    pv = `pv-${ns}`;

    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { team: 'shop' } } });
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `gizmos.${group}` },
      spec: {
        group, scope: 'Namespaced', names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    await waitUntil('the Gizmo API is discoverable', async () =>
      (await client.discover()).some((r) => r.groupResource === `gizmos.${group}`) ? true : undefined, 60_000, 500);

    const meta = (name: string, labels?: Record<string, string>) => ({ name, namespace: ns, ...(labels ? { labels } : {}) });
    const create = (r: Parameters<DynamicClient['create']>[0], obj: KubeObject) => client.create(r, r.namespaced === false ? undefined : ns, obj);
    const podTemplate = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/web:1' }] } };
    await Promise.all([
      create(DEPLOYMENTS, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('web', { app: 'web' }), spec: { replicas: 0, selector: { matchLabels: { app: 'web' } }, template: podTemplate } }),
      create(DEPLOYMENTS, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('db', { app: 'db' }), spec: { replicas: 0, selector: { matchLabels: { app: 'db' } }, template: { ...podTemplate, metadata: { labels: { app: 'db' } } } } }),
      create(CORE.services, { apiVersion: 'v1', kind: 'Service', metadata: meta('web', { app: 'web' }), spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } }),
      create(CORE.services, { apiVersion: 'v1', kind: 'Service', metadata: meta('db', { app: 'db' }), spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ port: 5432 }] } }),
      create(CORE.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('web-config', { app: 'web' }), data: { 'index.html': '<h1>hi</h1>' } }),
      create(CORE.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('db-config', { app: 'db' }), data: { 'pg.conf': 'max_connections=10' } }),
      create(CORE.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('skipped', { 'stowage.dev/exclude-from-backup': 'true' }), data: { a: 'b' } }),
      create(CORE.secrets, { apiVersion: 'v1', kind: 'Secret', metadata: meta('db-password', { app: 'db' }), stringData: { password: secretValue } }),
      create(CORE.secrets, { apiVersion: 'v1', kind: 'Secret', metadata: meta('api-token'), data: { token: Buffer.from(secretValue).toString('base64') } }),
      create(CORE.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('runner') }),
      create(ROLES, { apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: meta('reader'), rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] }),
      create(ROLE_BINDINGS, { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: meta('reader'), roleRef: { apiGroup: RBAC, kind: 'Role', name: 'reader' }, subjects: [{ kind: 'ServiceAccount', name: 'runner', namespace: ns }] }),
      create(CLUSTER_ROLES, { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: `${ns}-viewer` }, rules: [] }),
      create(CORE.persistentVolumes, { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: pv }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } }),
      ...[1, 2, 3].map((i) => client.create(res(group, 'v1', 'gizmos', true), ns, { apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: meta(`g${i}`), spec: { size: i } })),
    ]);
    await create(CORE.persistentVolumeClaims, {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: meta('data'),
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: pv, storageClassName: '' },
    });
    // A pod labelled app=web that mounts the claim and runs as "runner": the built-in actions follow both.
    await create(CORE.pods, {
      apiVersion: 'v1', kind: 'Pod', metadata: meta('web-0', { app: 'web' }),
      spec: {
        serviceAccountName: 'runner', automountServiceAccountToken: false, containers: [{ name: 'c', image: 'registry.invalid/web:1' }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      },
    });
  });

  afterAll(async () => {
    await client?.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    await client?.delete(CUSTOM_RESOURCE_DEFINITIONS, undefined, `gizmos.${group}`).catch(() => undefined);
    await client?.delete(CLUSTER_ROLES, undefined, `${ns}-viewer`).catch(() => undefined);
    await client?.delete(CORE.persistentVolumes, undefined, pv).catch(() => undefined);
    client?.close();
    s3?.close();
  });

  it('backs up a whole namespace with related cluster objects; paths, contents and checksums match the cluster', async () => {
    const { result, contents, lines } = await backupNow('whole', { includedNamespaces: [ns] });
    expect(result.phase, JSON.stringify(result.results.errors)).toBe('Completed');
    expect(result.errors).toBe(0);

    const inNs = (gr: string, name: string) => [`resources/${gr}/namespaces/${ns}/${name}.json`, `resources/${gr}/v1-preferredversion/namespaces/${ns}/${name}.json`];
    const cluster = (gr: string, name: string) => [`resources/${gr}/cluster/${name}.json`, `resources/${gr}/v1-preferredversion/cluster/${name}.json`];
    const expected = [
      'metadata/version',
      ...inNs('deployments.apps', 'web'), ...inNs('deployments.apps', 'db'),
      ...inNs('services', 'web'), ...inNs('services', 'db'),
      ...inNs('configmaps', 'web-config'), ...inNs('configmaps', 'db-config'), ...inNs('configmaps', 'kube-root-ca.crt'),
      ...inNs('secrets', 'db-password'), ...inNs('secrets', 'api-token'),
      ...inNs('serviceaccounts', 'runner'), ...inNs('serviceaccounts', 'default'),
      ...inNs(`roles.${RBAC}`, 'reader'), ...inNs(`rolebindings.${RBAC}`, 'reader'),
      ...inNs('persistentvolumeclaims', 'data'), ...inNs('pods', 'web-0'),
      ...inNs(`gizmos.${group}`, 'g1'), ...inNs(`gizmos.${group}`, 'g2'), ...inNs(`gizmos.${group}`, 'g3'),
      // Cluster-scoped, related: the namespace itself, the claim's volume, the gizmos' CRD.
      ...cluster('namespaces', ns), ...cluster('persistentvolumes', pv), ...cluster('customresourcedefinitions.apiextensions.k8s.io', `gizmos.${group}`),
    ];
    // What controllers add (token secrets, replica sets, endpoints) depends on their timing; the rest is exact.
    const volatile = (p: string) => /\/(replicasets\.apps|endpoints|endpointslices\.discovery\.k8s\.io)\/|\/secrets\/.*-token-/.test(p);
    expect(paths(contents).filter((p) => !volatile(p))).toEqual(expected.sort());
    expect(paths(contents).some((p) => p.includes('/events/') || p.includes('events.events.k8s.io'))).toBe(false);
    expect(paths(contents).some((p) => p.includes(`${ns}-viewer`) || p.includes('/skipped.json'))).toBe(false);

    // The manifest matches the tarball byte for byte: every entry and the whole gzipped stream.
    expect(result.manifest).toBeDefined();
    expect(verifyManifest(contents, result.manifest!)).toEqual([]);
    const chunks: Uint8Array[] = [];
    for await (const c of await store.getTarball('whole')) chunks.push(c);
    const gz = Buffer.concat(chunks);
    expect(result.manifest!.tarball).toEqual({ sha256: createHash('sha256').update(gz).digest('hex'), bytes: gz.length });

    // Contents equal the cluster's objects (those no controller touches in the meantime).
    for (const [r, name] of [[CORE.configMaps, 'web-config'], [CORE.secrets, 'db-password'], [ROLES, 'reader'], [ROLE_BINDINGS, 'reader'], [res(group, 'v1', 'gizmos', true), 'g2']] as const) {
      const live = await client.get(r, ns, name);
      const gr = r.group === '' ? r.resource : `${r.resource}.${r.group}`;
      const item = contents.items.find((i) => i.groupResource === gr && i.name === name);
      expect(item?.object, `${gr}/${name}`).toEqual(live);
    }
    const secret = contents.items.find((i) => i.name === 'db-password');
    expect((secret?.object.data as Record<string, string>).password).toBe(Buffer.from(secretValue).toString('base64'));
    const deploy = contents.items.find((i) => i.groupResource === 'deployments.apps' && i.name === 'web');
    expect(deploy?.object.spec).toEqual((await client.get(DEPLOYMENTS, ns, 'web')).spec);

    expect(result.resourceList.configmaps).toEqual([`${ns}/db-config`, `${ns}/kube-root-ca.crt`, `${ns}/web-config`]);
    expect(result.resourceList.namespaces).toEqual([ns]);
    expect(result.resourceList.persistentvolumes).toEqual([pv]);
    expect(result.progress.itemsBackedUp).toBe(contents.items.length);

    // Secret data never reaches the log, in any encoding; the skipped item is explained.
    expect(lines.length).toBeGreaterThan(10);
    for (const l of lines) {
      expect(l).not.toContain(secretValue);
      expect(l).not.toContain(Buffer.from(secretValue).toString('base64'));
    }
    expect(lines.some((l) => l.includes(`skipped configmaps \\"${ns}/skipped\\": it is labelled stowage.dev/exclude-from-backup=true`))).toBe(true);
  });

  it('selects by label: matching items, what they need, and their namespace', async () => {
    const { result, contents } = await backupNow('by-label', { includedNamespaces: [ns], labelSelector: { matchLabels: { app: 'web' } } });
    expect(result.phase).toBe('Completed');
    expect(itemPaths(contents).filter((p) => !/\/(replicasets\.apps|endpoints|endpointslices\.discovery\.k8s\.io)\//.test(p))).toEqual([
      `resources/configmaps/v1-preferredversion/namespaces/${ns}/web-config.json`,
      `resources/deployments.apps/v1-preferredversion/namespaces/${ns}/web.json`,
      `resources/namespaces/v1-preferredversion/cluster/${ns}.json`,
      `resources/persistentvolumeclaims/v1-preferredversion/namespaces/${ns}/data.json`,
      `resources/persistentvolumes/v1-preferredversion/cluster/${pv}.json`,
      `resources/pods/v1-preferredversion/namespaces/${ns}/web-0.json`,
      `resources/serviceaccounts/v1-preferredversion/namespaces/${ns}/runner.json`,
      `resources/services/v1-preferredversion/namespaces/${ns}/web.json`,
    ]);
  });

  it('ORs label selectors', async () => {
    const { contents } = await backupNow('or-labels', {
      includedNamespaces: [ns], includedResources: ['configmaps', 'secrets'],
      orLabelSelectors: [{ matchLabels: { app: 'web' } }, { matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }] }],
    });
    expect(contents.items.map((i) => `${i.groupResource}/${i.name}`).sort()).toEqual(['configmaps/db-config', 'configmaps/web-config', 'secrets/db-password']);
  });

  it('applies resource includes/excludes and includeClusterResources', async () => {
    const onlyCm = await backupNow('only-configmaps', { includedNamespaces: [ns], includedResources: ['configmaps'] });
    expect(new Set(onlyCm.contents.items.map((i) => i.groupResource))).toEqual(new Set(['configmaps']));

    const noSecrets = await backupNow('no-secrets', { includedNamespaces: [ns], excludedResources: ['secrets', `gizmos.${group}`] });
    const grs = new Set(noSecrets.contents.items.map((i) => i.groupResource));
    expect(grs.has('secrets')).toBe(false);
    expect(grs.has(`gizmos.${group}`)).toBe(false);
    // No custom resources, so their CRD is not pulled in either.
    expect(grs.has('customresourcedefinitions.apiextensions.k8s.io')).toBe(false);
    expect(grs.has('configmaps')).toBe(true);

    const noCluster = await backupNow('no-cluster', { includedNamespaces: [ns], includeClusterResources: false });
    const clusterItems = noCluster.contents.items.filter((i) => i.namespace === undefined).map((i) => i.groupResource);
    // Namespaces always go with their items; related PVs and CRDs do not when cluster resources are off.
    expect(clusterItems).toEqual(['namespaces']);

    const withCluster = await backupNow('with-cluster', { includedNamespaces: [ns], includeClusterResources: true, includedResources: ['clusterroles', 'configmaps'] });
    const names = withCluster.contents.items.map((i) => `${i.groupResource}/${i.name}`);
    expect(names).toContain(`clusterroles.${RBAC}/${ns}-viewer`);
    expect(names).toContain(`clusterroles.${RBAC}/cluster-admin`);
    expect(names.filter((n) => n.startsWith('configmaps/')).every((n) => withCluster.contents.items.find((i) => `${i.groupResource}/${i.name}` === n)?.namespace === ns)).toBe(true);
  });

  it('ends Failed, with the reason and no tarball, when cancelled mid-run', async () => {
    const ac = new AbortController();
    const progress: number[] = [];
    const result = await runBackup({
      client, store, log: capturingLogger().log, concurrency: 1, pageSize: 5, signal: ac.signal,
      onProgress: (p) => {
        progress.push(p.itemsBackedUp);
        if (p.itemsBackedUp === 3) ac.abort(new Error('the server is shutting down'));
      },
    }, newBackup('cancelled', 'stowage', { includedNamespaces: [ns] }));
    expect(result.phase).toBe('Failed');
    expect(result.failureReason).toBe('the backup was stopped: the server is shutting down');
    expect(progress.slice(0, 3)).toEqual([1, 2, 3]);
    expect(progress.length).toBeLessThan(6);
    expect(await s3.store.objectExists(store.bucket, store.keys('cancelled').tarball)).toBe(false);
  });

  it('warns, and still completes, when a custom resource stops being served between discovery and its LIST', async () => {
    const vanished = `${uniqueName('gone')}.test.stowage.dev`;
    const discovered = await client.discover();
    const gizmos = discovered.find((r) => r.groupResource === `gizmos.${group}`);
    if (gizmos === undefined) throw new Error('the Gizmo resource is not discovered');
    // Discovery as it was a moment ago: it still lists a CRD's resource that is gone now.
    const stale = { ...gizmos, group: vanished, groupResource: `gizmos.${vanished}`, apiVersion: `${vanished}/v1` };
    const staleClient = new Proxy(client, {
      get: (target, prop, receiver) => (prop === 'discover' ? async () => [...discovered, stale] : Reflect.get(target, prop, receiver)),
    });
    const logger = capturingLogger();
    const result = await runBackup({ client: staleClient, store, log: logger.log }, newBackup(uniqueName('stale'), 'stowage', { includedNamespaces: [ns] }));
    expect(result.phase, JSON.stringify(result.results)).toBe('Completed');
    expect(result.errors).toBe(0);
    expect(result.results.warnings.namespaces[ns]).toContainEqual(
      `gizmos.${vanished} is no longer served (removed after discovery); none backed up in namespace "${ns}"`,
    );
    expect(result.progress.itemsBackedUp).toBeGreaterThan(10);
  });

  it('fails the run, with the reason, when the tarball cannot be uploaded', async () => {
    const missing = createBackupStore({ objectStore: s3.store, bucket: uniqueName('no-such-bucket') });
    const logger = capturingLogger();
    const result = await runBackup({ client, store: missing, log: logger.log }, newBackup('doomed', 'stowage', { includedNamespaces: [ns] }));
    expect(result.phase).toBe('Failed');
    expect(result.failureReason).toMatch(/^uploading the tarball failed: .*(NoSuchBucket|does not exist)/);
    expect(result.manifest).toBeUndefined();
    // The end line is the controller's (lifecycle.ts), logged once: the engine leaves it out.
    expect(logger.lines.some((l) => l.includes('backup failed'))).toBe(false);
  });
});
