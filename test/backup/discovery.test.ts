// Every served resource is backed up, at the version it is read at, and restored: a CronJob at
// batch/v1 (v1beta1 is gone since 1.25); a CRD group whose kinds are served at
// different versions; includeAllGroupVersions; a LIST the apiserver refuses; an include that names
// nothing. Real apiserver, real S3 server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBackup, type Backup, type BackupSpec } from '../../src/apis/v1/index.js';
import { readArchive, type ArchiveContents } from '../../src/archive/index.js';
import { runBackup, type BackupResult } from '../../src/backup/index.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, createDynamicClient, type ApiResource, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { userConfig, uniqueName, waitUntil } from '../support/kube.js';
import { capturingLogger, createNs, getOrUndefined, res, restoreNow, setupEnv, RBAC, type Env } from '../restore/support.js';

const CRONJOBS = res('batch', 'v1', 'cronjobs', true);

describe('discovery of every served resource, against the real cluster', () => {
  let env: Env;
  let client: DynamicClient;
  let ns = '';
  let group = '';
  let widgets = '';
  let gadgets = '';

  const crd = (plural: string, kind: string, versions: { name: string; storage: boolean }[]): KubeObject => ({
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${plural}.${group}` },
    spec: {
      group, scope: 'Namespaced', names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      // conversion None: the versions share one schema, so the apiserver only rewrites apiVersion.
      conversion: { strategy: 'None' },
      versions: versions.map((v) => ({ ...v, served: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } })),
    },
  });

  /** Runs a backup and stores it whole, as the controller does; returns the result and the tarball read back. */
  const backupNow = async (spec: BackupSpec, c: DynamicClient = client): Promise<{ backup: Backup; result: BackupResult; contents: ArchiveContents }> => {
    const backup = newBackup(uniqueName('b'), 'stowage', spec);
    const result = await runBackup({ client: c, store: env.store, log: capturingLogger().log, pageSize: 50 }, backup);
    expect(result.failureReason).toBeUndefined();
    const done: Backup = { ...backup, status: { phase: result.phase, formatVersion: result.formatVersion } };
    await env.store.completeBackup(backup.metadata.name, { resourceList: result.resourceList, results: result.results, backup: done, ...(result.manifest ? { manifest: result.manifest } : {}) });
    return { backup: done, result, contents: await readArchive(await env.store.getTarball(backup.metadata.name)) };
  };
  const record = (r: BackupResult, gr: string) => r.results.resources?.find((x) => x.groupResource === gr);

  beforeAll(async () => {
    env = await setupEnv('discovery');
    client = env.client;
    ns = uniqueName('disc');
    group = `${uniqueName('mv')}.test.stowage.dev`;
    widgets = `widgets.${group}`;
    gadgets = `gadgets.${group}`;
    await createNs(client, ns);
    // One group, two CRDs: widgets at v1 (storage) and v1alpha1, gadgets only at v1alpha1. The group prefers v1.
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd('widgets', 'Widget', [{ name: 'v1', storage: true }, { name: 'v1alpha1', storage: false }]));
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, crd('gadgets', 'Gadget', [{ name: 'v1alpha1', storage: true }]));
    await waitUntil('both kinds are discoverable', async () => {
      const d = await client.discover();
      return d.some((r) => r.groupResource === widgets) && d.some((r) => r.groupResource === gadgets) ? true : undefined;
    }, 60_000, 500);
    await client.create(res(group, 'v1', 'widgets', true), ns, { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } });
    await client.create(res(group, 'v1alpha1', 'gadgets', true), ns, { apiVersion: `${group}/v1alpha1`, kind: 'Gadget', metadata: { name: 'g1' }, spec: { colour: 'red' } });
    await client.create(res('autoscaling', 'v1', 'horizontalpodautoscalers', true), ns, {
      apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'web' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 80 },
    });
    await client.create(CRONJOBS, ns, {
      apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'nightly' },
      spec: { schedule: '0 3 * * *', suspend: true, jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.invalid/job:1' }] } } } } },
    });
  });

  afterAll(async () => {
    await client?.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    for (const name of [widgets, gadgets]) await client?.delete(CUSTOM_RESOURCE_DEFINITIONS, undefined, name).catch(() => undefined);
    env?.close();
  });

  it('discovers each kind at the version that serves it: the group\'s preferred one where it can', async () => {
    const d = await client.discover();
    expect(d.find((r) => r.groupResource === widgets)).toMatchObject({ version: 'v1', versions: ['v1', 'v1alpha1'] });
    expect(d.find((r) => r.groupResource === gadgets)).toMatchObject({ version: 'v1alpha1', versions: ['v1alpha1'] });
    expect(d.find((r) => r.groupResource === 'cronjobs.batch')).toMatchObject({ version: 'v1', apiVersion: 'batch/v1', versions: ['v1'] });
  });

  it('backs up a CronJob at batch/v1 and a kind served only at a non-preferred version, records every resource, and restores them', async () => {
    const { backup, result, contents } = await backupNow({ includedNamespaces: [ns] });
    expect(result.phase, JSON.stringify(result.results)).toBe('Completed');
    const paths = Object.keys(contents.entries);
    expect(paths).toEqual(expect.arrayContaining([
      `resources/cronjobs.batch/namespaces/${ns}/nightly.json`,
      `resources/cronjobs.batch/v1-preferredversion/namespaces/${ns}/nightly.json`,
      `resources/${gadgets}/namespaces/${ns}/g1.json`,
      `resources/${gadgets}/v1alpha1-preferredversion/namespaces/${ns}/g1.json`,
      `resources/${widgets}/v1-preferredversion/namespaces/${ns}/w1.json`,
    ]));
    // Without includeAllGroupVersions, one version per object.
    expect(contents.alternateVersions).toEqual([]);
    expect(contents.items.find((i) => i.groupResource === 'cronjobs.batch')?.apiVersion).toBe('batch/v1');

    // The completeness record: every resource in scope, the version used, listed and written counts.
    expect(record(result, 'cronjobs.batch')).toEqual({ groupResource: 'cronjobs.batch', apiVersion: 'batch/v1', listed: 1, written: 1 });
    expect(record(result, gadgets)).toEqual({ groupResource: gadgets, apiVersion: `${group}/v1alpha1`, listed: 1, written: 1 });
    expect(record(result, widgets)).toEqual({ groupResource: widgets, apiVersion: `${group}/v1`, listed: 1, written: 1 });
    expect(record(result, 'secrets')?.apiVersion).toBe('v1');
    expect(record(result, 'secrets')?.error).toBeUndefined();
    expect(record(result, 'jobs.batch')).toEqual({ groupResource: 'jobs.batch', apiVersion: 'batch/v1', listed: 0, written: 0 });
    for (const [gr, names] of Object.entries(result.resourceList)) expect(record(result, gr)?.written, gr).toBe(names.length);
    const grs = (result.results.resources ?? []).map((r) => r.groupResource);
    expect(grs).toEqual([...grs].sort());
    // The results file holds the record.
    expect((await env.store.getResults(backup.metadata.name))?.resources).toEqual(result.results.resources);

    for (const [r, name] of [[CRONJOBS, 'nightly'], [res(group, 'v1alpha1', 'gadgets', true), 'g1'], [res(group, 'v1', 'widgets', true), 'w1']] as const) {
      await client.delete(r, ns, name);
    }
    const { result: restored } = await restoreNow(env, backup, { includedNamespaces: [ns] });
    expect(restored.phase, JSON.stringify(restored.results)).toBe('Completed');
    expect(restored.results.warnings.cluster.filter((w) => w.includes('backed up at'))).toEqual([]);
    const created = restored.outcomes.filter((o) => o.action === 'created').map((o) => `${o.groupResource}/${o.name}`).sort();
    expect(created).toEqual(expect.arrayContaining(['cronjobs.batch/nightly', `${gadgets}/g1`, `${widgets}/w1`]));
    const cj = await client.get(CRONJOBS, ns, 'nightly');
    expect((cj.spec as { schedule: string }).schedule).toBe('0 3 * * *');
    expect((await client.get(res(group, 'v1alpha1', 'gadgets', true), ns, 'g1')).spec).toEqual({ colour: 'red' });
  });

  it('includeAllGroupVersions stores every served version of each object, and restore prefers the one the cluster prefers', async () => {
    const { backup, result, contents } = await backupNow({ includedNamespaces: [ns], includeAllGroupVersions: true });
    expect(result.phase, JSON.stringify(result.results)).toBe('Completed');
    expect(record(result, widgets)).toEqual({ groupResource: widgets, apiVersion: `${group}/v1`, listed: 1, written: 1, otherVersions: [`${group}/v1alpha1`] });
    // A resource served at one version only has no other versions.
    expect(record(result, gadgets)?.otherVersions).toBeUndefined();
    const alt = contents.alternateVersions.filter((a) => a.groupResource === widgets);
    expect(alt.map((a) => [a.path, a.apiVersion])).toEqual([[`resources/${widgets}/v1alpha1/namespaces/${ns}/w1.json`, `${group}/v1alpha1`]]);
    expect(alt[0]?.object.spec).toEqual({ size: 3 });
    // A built-in kind the apiserver converts: an HPA (written at v1) is read at the preferred
    // autoscaling/v2 and also stored at v1.
    expect(record(result, 'horizontalpodautoscalers.autoscaling')).toMatchObject({ apiVersion: 'autoscaling/v2', written: 1, otherVersions: ['autoscaling/v1'] });
    const hpa = contents.alternateVersions.filter((a) => a.groupResource === 'horizontalpodautoscalers.autoscaling');
    expect(hpa.map((a) => a.path)).toEqual([`resources/horizontalpodautoscalers.autoscaling/v1/namespaces/${ns}/web.json`]);
    expect(hpa[0]?.object.spec).toMatchObject({ targetCPUUtilizationPercentage: 80 });
    expect(contents.items.find((i) => i.groupResource === 'horizontalpodautoscalers.autoscaling')?.object.spec)
      .toMatchObject({ metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }] });
    // No classic copy for the other version: the classic copy is the v1 object.
    expect(contents.items.find((i) => i.groupResource === widgets)?.apiVersion).toBe(`${group}/v1`);

    // A target that serves widgets only at v1alpha1: the backup's v1alpha1 copy is restored.
    await client.delete(res(group, 'v1', 'widgets', true), ns, 'w1');
    const onlyAlpha = (d: ApiResource[]) => d.map((r) => (r.groupResource === widgets ? { ...r, version: 'v1alpha1', apiVersion: `${group}/v1alpha1`, versions: ['v1alpha1'] } : r));
    const { result: restored } = await restoreNow(env, backup, { includedNamespaces: [ns], includedResources: [widgets] }, { discovered: onlyAlpha(await client.discover()) });
    expect(restored.phase, JSON.stringify(restored.results)).toBe('Completed');
    expect(restored.results.warnings.cluster).toContain(
      `1 ${widgets} item backed up at ${group}/v1, which this cluster does not serve, restored from the backup's copies at ${group}/v1alpha1`,
    );
    expect(restored.outcomes.find((o) => o.groupResource === widgets)).toMatchObject({ name: 'w1', action: 'created' });
    expect((await client.get(res(group, 'v1', 'widgets', true), ns, 'w1')).spec).toEqual({ size: 3 });
  });

  it('without a copy at a served version, restores the stored object at the cluster\'s preferred version and says so', async () => {
    const { backup } = await backupNow({ includedNamespaces: [ns], includedResources: [widgets] });
    await client.delete(res(group, 'v1', 'widgets', true), ns, 'w1');
    const d = (await client.discover()).map((r) => (r.groupResource === widgets ? { ...r, version: 'v1alpha1', apiVersion: `${group}/v1alpha1`, versions: ['v1alpha1'] } : r));
    const { result: restored } = await restoreNow(env, backup, { includedNamespaces: [ns] }, { discovered: d });
    expect(restored.phase, JSON.stringify(restored.results)).toBe('Completed');
    expect(restored.results.warnings.cluster.find((w) => w.startsWith(`1 ${widgets} item backed up at ${group}/v1, which this cluster does not serve, and the backup holds no copy`)))
      .toContain(`sent as ${group}/v1alpha1 with only the apiVersion changed`);
    expect((await getOrUndefined(client, res(group, 'v1alpha1', 'widgets', true), ns, 'w1'))?.spec).toEqual({ size: 3 });
  });

  it('warns about an include that names a resource or a namespace the cluster does not have', async () => {
    const missingNs = uniqueName('no-such-ns');
    const { result } = await backupNow({ includedNamespaces: [ns, missingNs], includedResources: ['cronjobs', 'nosuchthings.example.com'] });
    expect(result.phase).toBe('Completed');
    expect(result.results.warnings.cluster).toEqual(['includedResources names "nosuchthings.example.com", which this cluster does not serve; nothing is backed up for it']);
    expect(result.results.warnings.namespaces[missingNs]).toEqual([`namespace "${missingNs}" is included but does not exist`]);
    expect(result.resourceList['cronjobs.batch']).toEqual([`${ns}/nightly`]);
  });

  it('includeAllGroupVersions: a version the apiserver cannot convert to makes the backup PartiallyFailed, naming it and why', async () => {
    // sprockets: stored at v1, also served at v1beta1 through a conversion webhook whose service does
    // not exist. Reading at v1 needs no conversion (so other backups are unaffected); at v1beta1 the LIST fails.
    const other = `${uniqueName('cv')}.test.stowage.dev`;
    const name = `sprockets.${other}`;
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, undefined, {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name },
      spec: {
        group: other, scope: 'Namespaced', names: { plural: 'sprockets', singular: 'sprocket', kind: 'Sprocket', listKind: 'SprocketList' },
        conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { service: { namespace: ns, name: 'no-such-converter', path: '/convert', port: 443 } } } },
        versions: [{ name: 'v1', served: true, storage: true, schema }, { name: 'v1beta1', served: true, storage: false, schema }],
      },
    });
    try {
      await waitUntil('sprockets are discoverable at both versions', async () =>
        ((await client.discover()).find((r) => r.groupResource === name)?.versions?.length === 2 ? true : undefined), 60_000, 500);
      await client.create(res(other, 'v1', 'sprockets', true), ns, { apiVersion: `${other}/v1`, kind: 'Sprocket', metadata: { name: 's1' }, spec: { teeth: 12 } });
      const { result, contents } = await backupNow({ includedNamespaces: [ns], includedResources: [name], includeAllGroupVersions: true });
      expect(result.phase).toBe('PartiallyFailed');
      const errors = result.results.errors.cluster;
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(new RegExp(`^includeAllGroupVersions: listing ${name.replace(/\./g, '\\.')} at ${other.replace(/\./g, '\\.')}/v1beta1 failed, so its items are not stored at that version: .*conversion webhook`));
      // The item itself is backed up at v1; the record says what is missing and why.
      expect(result.resourceList[name]).toEqual([`${ns}/s1`]);
      expect(record(result, name)).toEqual({ groupResource: name, apiVersion: `${other}/v1`, listed: 1, written: 1, error: errors[0] });
      expect(contents.alternateVersions).toEqual([]);
    } finally {
      await client.delete(CUSTOM_RESOURCE_DEFINITIONS, undefined, name).catch(() => undefined);
    }
  });

  it('ends PartiallyFailed, naming each resource and why, when the apiserver refuses a LIST', async () => {
    // The unprivileged user may read configmaps and cronjobs in the namespace, nothing else: every
    // other LIST answers 403, a real refusal of a resource that discovery lists.
    await client.create(res(RBAC, 'v1', 'roles', true), ns, {
      apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { name: 'some-reader' },
      rules: [{ apiGroups: ['', 'batch'], resources: ['configmaps', 'cronjobs'], verbs: ['get', 'list'] }],
    });
    await client.create(res(RBAC, 'v1', 'rolebindings', true), ns, {
      apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: 'some-reader' },
      roleRef: { apiGroup: RBAC, kind: 'Role', name: 'some-reader' }, subjects: [{ kind: 'User', apiGroup: RBAC, name: 'tester' }],
    });
    const tester = createDynamicClient(userConfig(), { qps: 200, burst: 400 });
    try {
      await waitUntil('the role applies', async () => ((await tester.list(CORE.configMaps, { namespace: ns })).items.length > 0 ? true : undefined), 30_000, 200);
      const { result } = await backupNow({ includedNamespaces: [ns], includedResources: ['configmaps', 'cronjobs', 'secrets', gadgets] }, tester);
      expect(result.phase).toBe('PartiallyFailed');
      const errors = result.results.errors.namespaces[ns] ?? [];
      expect(errors).toHaveLength(2);
      expect(errors.find((e) => e.startsWith(`listing secrets in namespace "${ns}" at v1 failed: `))).toMatch(/forbidden/);
      expect(errors.find((e) => e.startsWith(`listing ${gadgets} in namespace "${ns}" at ${group}/v1alpha1 failed: `))).toMatch(/forbidden/);
      expect(record(result, 'secrets')).toMatchObject({ listed: 0, written: 0, error: expect.stringMatching(/^listing secrets .* forbidden/) });
      expect(record(result, 'cronjobs.batch')).toEqual({ groupResource: 'cronjobs.batch', apiVersion: 'batch/v1', listed: 1, written: 1 });
      // Nor can the CRD of the custom resources in scope, or the Namespace objects: errors too. No
      // ServiceAccount is in scope, so the ClusterRoleBindings are not needed and not listed.
      expect(result.results.errors.cluster).toEqual([
        expect.stringMatching(/^listing CustomResourceDefinitions failed, so custom resources are backed up without their CRDs: .*forbidden/),
        expect.stringMatching(/^listing namespaces failed: .*forbidden/),
      ]);
    } finally {
      tester.close();
    }
  });
});
