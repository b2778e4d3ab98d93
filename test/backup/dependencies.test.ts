// Cluster-scoped dependency closure on the real apiserver: a namespace-only backup (cluster resources
// "auto") takes the cluster-scoped objects its contents need, records each in results.pulledIn with
// the reason, leaves unrelated ones out, and a restore of that namespace brings them back first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBackup, type Backup, type BackupSpec } from '../../src/apis/v1/index.js';
import { readArchive, type ArchiveContents } from '../../src/archive/index.js';
import { runBackup, type BackupResult } from '../../src/backup/index.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, type KubeObject, type ResourceRef } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { capturingLogger, deleteNsAndWait, getOrUndefined, RBAC, res, restoreNow, setupEnv, type Env } from '../restore/support.js';

const CLUSTER_ROLES = res(RBAC, 'v1', 'clusterroles', false);
const CLUSTER_ROLE_BINDINGS = res(RBAC, 'v1', 'clusterrolebindings', false);
const ROLE_BINDINGS = res(RBAC, 'v1', 'rolebindings', true);
const STORAGE_CLASSES = res('storage.k8s.io', 'v1', 'storageclasses', false);
const PRIORITY_CLASSES = res('scheduling.k8s.io', 'v1', 'priorityclasses', false);
const RUNTIME_CLASSES = res('node.k8s.io', 'v1', 'runtimeclasses', false);
const DEPLOYMENTS = res('apps', 'v1', 'deployments', true);
const STATEFUL_SETS = res('apps', 'v1', 'statefulsets', true);

describe('cluster-scoped dependencies of a namespace backup', () => {
  let env: Env;
  let ns = '';
  let group = '';
  let crd = '';
  // Cluster-scoped names, unique per run: the dependencies, and an unrelated binding and role.
  const n = { ops: '', opsBinding: '', view: '', fast: '', slow: '', pv: '', high: '', runtime: '', unrelatedRole: '', unrelatedBinding: '' };
  let backup: Backup;
  let result: BackupResult;
  let contents: ArchiveContents;
  let lines: string[] = [];

  const clusterObjects = (): [ResourceRef, string][] => [
    [CLUSTER_ROLE_BINDINGS, n.opsBinding], [CLUSTER_ROLE_BINDINGS, n.unrelatedBinding],
    [CLUSTER_ROLES, n.ops], [CLUSTER_ROLES, n.view], [CLUSTER_ROLES, n.unrelatedRole],
    [CORE.persistentVolumes, n.pv], [STORAGE_CLASSES, n.fast], [STORAGE_CLASSES, n.slow],
    [PRIORITY_CLASSES, n.high], [RUNTIME_CLASSES, n.runtime], [CUSTOM_RESOURCE_DEFINITIONS, crd],
  ];

  const backupOf = async (name: string, spec: BackupSpec): Promise<{ result: BackupResult; contents: ArchiveContents; lines: string[]; backup: Backup }> => {
    const logger = capturingLogger();
    const b = newBackup(name, 'stowage', spec);
    const r = await runBackup({ client: env.client, store: env.store, log: logger.log }, b);
    expect(r.failureReason).toBeUndefined();
    const done: Backup = { ...b, status: { phase: r.phase, formatVersion: r.formatVersion } };
    await env.store.completeBackup(name, { resourceList: r.resourceList, results: r.results, ...(r.manifest !== undefined ? { manifest: r.manifest } : {}), backup: done });
    return { result: r, contents: await readArchive(await env.store.getTarball(name)), lines: logger.lines, backup: done };
  };
  const has = (c: ArchiveContents, gr: string, name: string): boolean => c.items.some((i) => i.groupResource === gr && i.name === name && i.namespace === undefined);
  // The Deployment's ReplicaSet names the same classes, and the two are listed concurrently: either
  // may be the first to need them and be recorded. The test reads the ReplicaSet as its Deployment.
  const asDeployment = (s: string): string => s
    .replace(new RegExp(`replicasets\\.apps "${ns}/web-[a-z0-9]+"`, 'g'), `deployments.apps "${ns}/web"`)
    .replace(new RegExp(`ReplicaSet "${ns}/web-[a-z0-9]+"`, 'g'), `Deployment "${ns}/web"`);
  const messages = (ls: string[]): string[] =>
    ls.map((l) => JSON.parse(l) as { level: string; message: string }).filter((l) => l.level === 'info').map((l) => asDeployment(l.message));

  beforeAll(async () => {
    env = await setupEnv('deps');
    const { client } = env;
    ns = uniqueName('deps');
    group = `${uniqueName('g')}.test.stowage.dev`;
    crd = `widgets.${group}`;
    for (const k of Object.keys(n) as (keyof typeof n)[]) n[k] = `${ns}-${k.toLowerCase()}`;

    await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: crd },
      spec: {
        group, scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    });
    const cluster = (r: ResourceRef, obj: KubeObject) => client.create(r, undefined, obj);
    const rbac = (kind: string, name: string, extra: Record<string, unknown>): KubeObject => ({ apiVersion: `${RBAC}/v1`, kind, metadata: { name }, ...extra });
    await Promise.all([
      cluster(CLUSTER_ROLES, rbac('ClusterRole', n.ops, { rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] })),
      cluster(CLUSTER_ROLES, rbac('ClusterRole', n.view, { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] })),
      cluster(CLUSTER_ROLES, rbac('ClusterRole', n.unrelatedRole, { rules: [] })),
      cluster(CLUSTER_ROLE_BINDINGS, rbac('ClusterRoleBinding', n.opsBinding, {
        roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: n.ops }, subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: ns }],
      })),
      // Binds an account of the same name in another namespace: not this namespace's dependency.
      cluster(CLUSTER_ROLE_BINDINGS, rbac('ClusterRoleBinding', n.unrelatedBinding, {
        roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: n.unrelatedRole }, subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: `${ns}-elsewhere` }],
      })),
      cluster(STORAGE_CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: n.fast }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' }),
      cluster(STORAGE_CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: n.slow }, provisioner: 'kubernetes.io/no-provisioner' }),
      cluster(PRIORITY_CLASSES, { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: n.high }, value: 1000, description: 'test' }),
      cluster(RUNTIME_CLASSES, { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: n.runtime }, handler: 'runc' }),
      cluster(CORE.persistentVolumes, {
        apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: n.pv },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/deps' }, storageClassName: n.fast, claimRef: { namespace: ns, name: 'data' } },
      }),
    ]);
    await waitUntil('the Widget API is discoverable', async () => ((await client.discover()).some((r) => r.groupResource === crd) ? true : undefined), 60_000, 500);

    const create = (r: ResourceRef, obj: KubeObject) => client.create(r, ns, { ...obj, metadata: { ...obj.metadata, namespace: ns } });
    const podSpec = { serviceAccountName: 'operator', priorityClassName: n.high, runtimeClassName: n.runtime, containers: [{ name: 'c', image: 'registry.invalid/web:1' }] };
    await Promise.all([
      create(CORE.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'operator' } }),
      create(ROLE_BINDINGS, { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: 'viewers' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: n.view }, subjects: [{ kind: 'ServiceAccount', name: 'operator', namespace: ns }] }),
      create(CORE.persistentVolumeClaims, {
        apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: n.fast, volumeName: n.pv },
      }),
      create(DEPLOYMENTS, {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
        spec: { replicas: 0, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: podSpec } },
      }),
      create(STATEFUL_SETS, {
        apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db' },
        spec: {
          replicas: 0, serviceName: 'db', selector: { matchLabels: { app: 'db' } },
          template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/db:1' }] } },
          volumeClaimTemplates: [{ metadata: { name: 'pgdata' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: n.slow, resources: { requests: { storage: '1Gi' } } } }],
        },
      }),
      create(res(group, 'v1', 'widgets', true), { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } }),
    ]);

    ({ result, contents, lines, backup } = await backupOf(uniqueName('deps'), { includedNamespaces: [ns] }));
  }, 120_000);

  afterAll(async () => {
    await env?.client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    for (const [r, name] of clusterObjects()) await env?.client.delete(r, undefined, name).catch(() => undefined);
    env?.close();
  });

  it('takes each dependency, records why, and leaves unrelated cluster objects out', () => {
    expect(result.phase).toBe('Completed');
    expect(result.results.warnings).toEqual({ cluster: [], namespaces: {} });
    const expected = [
      [`clusterrolebindings.${RBAC}`, n.opsBinding, 'serviceaccounts "' + ns + '/operator"', `ClusterRoleBinding "${n.opsBinding}" binds ServiceAccount "${ns}/operator"`],
      [`clusterroles.${RBAC}`, n.ops, `clusterrolebindings.${RBAC} "${n.opsBinding}"`, `ClusterRole "${n.ops}" is the role of ClusterRoleBinding "${n.opsBinding}"`],
      [`clusterroles.${RBAC}`, n.view, `rolebindings.${RBAC} "${ns}/viewers"`, `ClusterRole "${n.view}" is the role of RoleBinding "${ns}/viewers"`],
      ['persistentvolumes', n.pv, `persistentvolumeclaims "${ns}/data"`, `PersistentVolume "${n.pv}" is bound to PersistentVolumeClaim "${ns}/data"`],
      ['storageclasses.storage.k8s.io', n.fast, `persistentvolumes "${n.pv}"`, `StorageClass "${n.fast}" is the class of PersistentVolume "${n.pv}"`],
      ['storageclasses.storage.k8s.io', n.slow, `statefulsets.apps "${ns}/db"`, `StorageClass "${n.slow}" is the class of volume claim template "pgdata" of StatefulSet "${ns}/db"`],
      ['priorityclasses.scheduling.k8s.io', n.high, `deployments.apps "${ns}/web"`, `PriorityClass "${n.high}" is named by Deployment "${ns}/web"`],
      ['runtimeclasses.node.k8s.io', n.runtime, `deployments.apps "${ns}/web"`, `RuntimeClass "${n.runtime}" is named by Deployment "${ns}/web"`],
      ['customresourcedefinitions.apiextensions.k8s.io', crd, `widgets.${group} "${ns}/w1"`, `CustomResourceDefinition "${crd}" defines Widget "${ns}/w1"`],
    ].map(([groupResource, name, requiredBy, reason]) => ({ groupResource, name, requiredBy, reason }));
    const byName = (a: { groupResource?: string; name?: string }, b: { groupResource?: string; name?: string }) =>
      `${a.groupResource}/${a.name}` < `${b.groupResource}/${b.name}` ? -1 : 1;
    const pulledIn = (result.results.pulledIn ?? []).map((p) => ({ ...p, requiredBy: asDeployment(p.requiredBy), reason: asDeployment(p.reason) }));
    expect([...pulledIn].sort(byName)).toEqual(expected.sort(byName));
    for (const e of expected) {
      expect(has(contents, e.groupResource ?? '', e.name ?? ''), `${e.groupResource} ${e.name} in the tarball`).toBe(true);
      expect(messages(lines)).toContain(`pulled in ${e.groupResource} "${e.name}": ${e.reason}`);
    }
    // A binding comes before the role it brings, in the record as in the restore order.
    const order = (result.results.pulledIn ?? []).map((p) => p.name);
    expect(order.indexOf(n.opsBinding)).toBeLessThan(order.indexOf(n.ops));
    expect(has(contents, `clusterrolebindings.${RBAC}`, n.unrelatedBinding)).toBe(false);
    expect(has(contents, `clusterroles.${RBAC}`, n.unrelatedRole)).toBe(false);
    // Nothing else cluster-scoped but the namespace itself.
    const clusterItems = contents.items.filter((i) => i.namespace === undefined).map((i) => `${i.groupResource}/${i.name}`).sort();
    expect(clusterItems).toEqual([...expected.map((e) => `${e.groupResource}/${e.name}`), `namespaces/${ns}`].sort());
  });

  it('names what it leaves out when includeClusterResources is false or a resource is excluded', async () => {
    const off = await backupOf(uniqueName('deps-off'), { includedNamespaces: [ns], includeClusterResources: false });
    expect(off.result.results.pulledIn).toBeUndefined();
    expect(off.contents.items.filter((i) => i.namespace === undefined).map((i) => i.groupResource)).toEqual(['namespaces']);
    const info = messages(off.lines);
    for (const [gr, name, parent] of [
      [`clusterrolebindings.${RBAC}`, n.opsBinding, `serviceaccounts "${ns}/operator"`],
      ['persistentvolumes', n.pv, `persistentvolumeclaims "${ns}/data"`],
      ['priorityclasses.scheduling.k8s.io', n.high, `deployments.apps "${ns}/web"`],
      ['customresourcedefinitions.apiextensions.k8s.io', crd, `widgets.${group} "${ns}/w1"`],
    ]) {
      expect(info.some((m) => m.startsWith(`not backing up ${gr} "${name}", needed by ${parent} (`) && m.endsWith('): includeClusterResources is false')), `${gr} ${name}`).toBe(true);
    }
    // Once per item, though a Deployment and a StatefulSet could both name it.
    expect(info.filter((m) => m.startsWith(`not backing up priorityclasses.scheduling.k8s.io "${n.high}"`))).toHaveLength(1);

    const noClasses = await backupOf(uniqueName('deps-nosc'), { includedNamespaces: [ns], excludedResources: ['storageclasses', 'clusterroles'] });
    expect(has(noClasses.contents, 'storageclasses.storage.k8s.io', n.fast)).toBe(false);
    expect(has(noClasses.contents, `clusterroles.${RBAC}`, n.ops)).toBe(false);
    expect(has(noClasses.contents, 'persistentvolumes', n.pv)).toBe(true);
    expect(has(noClasses.contents, `clusterrolebindings.${RBAC}`, n.opsBinding)).toBe(true);
    expect(messages(noClasses.lines)).toContain(
      `not backing up storageclasses.storage.k8s.io "${n.fast}", needed by persistentvolumes "${n.pv}" (StorageClass "${n.fast}" is the class of PersistentVolume "${n.pv}"): the resource filter excludes it`,
    );
    expect((noClasses.result.results.pulledIn ?? []).map((p) => p.groupResource)).not.toContain('storageclasses.storage.k8s.io');
  });

  it('a restore of the namespace recreates them, before what needs them', async () => {
    const { client } = env;
    await deleteNsAndWait(client, ns);
    for (const [r, name] of clusterObjects()) await client.delete(r, undefined, name).catch(() => undefined);
    for (const [r, name] of clusterObjects()) {
      await waitUntil(`${r.resource} ${name} to be gone`, async () => ((await getOrUndefined(client, r, undefined, name)) === undefined ? true : undefined), 60_000, 250);
    }

    const { result: restored } = await restoreNow(env, backup, { includedNamespaces: [ns] });
    expect(restored.failureReason).toBeUndefined();
    expect(restored.results.errors).toEqual({ cluster: [], namespaces: {} });
    expect(restored.phase).toBe('Completed');
    for (const [r, name] of clusterObjects()) {
      const back = await getOrUndefined(client, r, undefined, name);
      if (name === n.unrelatedBinding || name === n.unrelatedRole) expect(back, `${r.resource} ${name}`).toBeUndefined();
      else expect(back, `${r.resource} ${name} restored`).toBeDefined();
    }
    const binding = await client.get(CLUSTER_ROLE_BINDINGS, undefined, n.opsBinding);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'operator', namespace: ns }]);
    expect((await client.get(DEPLOYMENTS, ns, 'web')).spec).toMatchObject({ template: { spec: { priorityClassName: n.high, runtimeClassName: n.runtime } } });

    // Each cluster-scoped dependency is created before what needs it.
    const at = (gr: string, name: string): number => restored.outcomes.findIndex((o) => o.groupResource === gr && o.name === name && o.action === 'created');
    const before = (a: [string, string], b: [string, string]) => {
      expect(at(...a), `${a.join(' ')} created`).toBeGreaterThanOrEqual(0);
      expect(at(...a), `${a.join(' ')} before ${b.join(' ')}`).toBeLessThan(at(...b));
    };
    before(['storageclasses.storage.k8s.io', n.fast], ['persistentvolumes', n.pv]);
    before(['persistentvolumes', n.pv], ['persistentvolumeclaims', 'data']);
    before([`clusterroles.${RBAC}`, n.ops], [`clusterrolebindings.${RBAC}`, n.opsBinding]);
    before([`clusterroles.${RBAC}`, n.view], [`rolebindings.${RBAC}`, 'viewers']);
    before(['priorityclasses.scheduling.k8s.io', n.high], ['deployments.apps', 'web']);
    before(['runtimeclasses.node.k8s.io', n.runtime], ['deployments.apps', 'web']);
    before(['storageclasses.storage.k8s.io', n.slow], ['statefulsets.apps', 'db']);
    before(['customresourcedefinitions.apiextensions.k8s.io', crd], [`widgets.${group}`, 'w1']);
  });

  it('under a namespace mapping, a pulled-in ClusterRoleBinding binds the restored account in its new namespace', async () => {
    const { client } = env;
    const copy = `${ns}-copy`;
    try {
      await client.delete(CLUSTER_ROLE_BINDINGS, undefined, n.opsBinding);
      const { result: restored } = await restoreNow(env, backup, { includedNamespaces: [ns], namespaceMapping: { [ns]: copy } });
      expect(restored.results.errors).toEqual({ cluster: [], namespaces: {} });
      expect(restored.outcomes.find((o) => o.groupResource === `clusterrolebindings.${RBAC}` && o.name === n.opsBinding)?.action).toBe('created');
      expect((await client.get(CLUSTER_ROLE_BINDINGS, undefined, n.opsBinding)).subjects).toEqual([{ kind: 'ServiceAccount', name: 'operator', namespace: copy }]);
      expect(await getOrUndefined(client, CORE.serviceAccounts, copy, 'operator')).toBeDefined();
    } finally {
      await client.delete(CORE.namespaces, undefined, copy).catch(() => undefined);
    }
  });
});
