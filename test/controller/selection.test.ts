// Item selection end to end (issue 21, part 3) through `stowage server` and a real apiserver:
// includedNames/excludedNames (exact, glob, regex:, scoped per resource), Velero's namespace globs,
// the scope-specific resource filters (includedClusterScopedResources,
// excludedClusterScopedResources, includedNamespaceScopedResources,
// excludedNamespaceScopedResources), on backup, on restore from a full backup, and in dependency
// pull-ins; and bad patterns refused at validation.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type BackupSpec, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const CM = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const SECRET = { group: '', version: 'v1', resource: 'secrets', namespaced: true };
const SA = { group: '', version: 'v1', resource: 'serviceaccounts', namespaced: true };
const DEPLOY = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
const SC = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses', namespaced: false };
const CR = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', namespaced: false };
const NS = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };

/** Ten ConfigMaps; `^app-[0-9]$` matches exactly three of them. */
const TEN = ['app-1', 'app-2', 'app-3', 'app-10', 'app-x', 'my-app-1', 'db-1', 'db-2', 'web', 'misc'];
const THREE = ['app-1', 'app-2', 'app-3'];

describe('item selection', () => {
  const ns = uniqueName('stowage');
  const p = uniqueName('sel');
  const alpha = `${p}-alpha`;
  const beta = `${p}-beta`;
  const gamma = `${p}-gamma`;
  const storageClass = `${p}-fast`;
  const clusterRole = `${p}-reader`;
  const loc = filesystemLocation();
  let client: DynamicClient;
  let server: RunningServer;

  beforeAll(async () => {
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    for (const n of [alpha, beta, gamma]) await ensureNamespace(client, n);
    for (const name of TEN) await client.create(CM, alpha, { metadata: { name }, data: { name } });
    await client.create(CM, beta, { metadata: { name: 'app-1' }, data: { in: 'beta' } });
    await client.create(CM, gamma, { metadata: { name: 'app-1' }, data: { in: 'gamma' } });
    await client.create(SECRET, alpha, { metadata: { name: 'creds' }, stringData: { token: 'x' } });
    await client.create(SA, alpha, { metadata: { name: 'web-sa' } });
    await client.create(DEPLOY, alpha, {
      metadata: { name: 'web' },
      spec: {
        replicas: 0, selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { serviceAccountName: 'web-sa', containers: [{ name: 'web', image: 'nginx:1' }] } },
      },
    });
    await client.create(SC, undefined, { metadata: { name: storageClass }, provisioner: 'example.com/none' });
    await client.create(CR, undefined, { metadata: { name: clusterRole }, rules: [] });
    server = await startServer({ kubeconfigPath: kc, namespace: ns, location: loc });
  });

  afterAll(async () => {
    await server?.stop();
    for (const [res, name] of [[SC, storageClass], [CR, clusterRole]] as const) await client?.delete(res, undefined, name).catch(() => undefined);
  });

  async function backupAndWait(name: string, spec: BackupSpec): Promise<Backup> {
    await client.create(RESOURCES.Backup, ns, newBackup(name, ns, spec));
    return waitFinished<Backup>(client, RESOURCES.Backup, ns, name);
  }
  async function restoreAndWait(name: string, spec: RestoreSpec): Promise<Restore> {
    await client.create(RESOURCES.Restore, ns, newRestore(name, ns, spec));
    return waitFinished<Restore>(client, RESOURCES.Restore, ns, name);
  }
  function resourceList(backup: string): Record<string, string[]> {
    const file = path.join(loc.root, 'backups', 'backups', backup, `${backup}-resource-list.json.gz`);
    const list = JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString()) as Record<string, string[]>;
    return Object.fromEntries(Object.entries(list).map(([k, v]) => [k, [...v].sort()]));
  }
  async function configMapNames(namespace: string): Promise<string[]> {
    // The control plane may add kube-root-ca.crt to every namespace: it is not the restore's.
    return (await client.list<KubeObject>(CM, { namespace })).items.map((o) => o.metadata?.name ?? '').filter((n) => n !== 'kube-root-ca.crt').sort();
  }

  it('backs up exactly the 3 of 10 ConfigMaps a scoped regex selects (includedNames "configmaps/regex:...")', async () => {
    const b = await backupAndWait('regex', { includedNamespaces: [alpha], includedResources: ['configmaps'], includedNames: ['configmaps/regex:^app-[0-9]$'] });
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(resourceList('regex')).toEqual({ configmaps: THREE.map((n) => `${alpha}/${n}`) });
    expect(b.status?.progress?.itemsBackedUp).toBe(3);
  });

  it('restores the same 3 of 10 from a full backup, leaving the resources the entry is not scoped to whole', async () => {
    const full = await backupAndWait('full', { includedNamespaces: [alpha] });
    expect(full.status?.phase, JSON.stringify(full.status)).toBe('Completed');
    expect(resourceList('full').configmaps).toEqual(expect.arrayContaining(TEN.map((n) => `${alpha}/${n}`)));
    const target = `${alpha}-copy`;
    const r = await restoreAndWait('regex', {
      backupName: 'full', namespaceMapping: { [alpha]: target }, includedNames: ['configmaps/regex:^app-[0-9]$'], excludedNames: ['deployments/web'],
    });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(await configMapNames(target)).toEqual(THREE);
    // Secrets are not narrowed by a configmaps/ entry; the Deployment is excluded by name.
    await client.get(SECRET, target, 'creds');
    await expect(client.get(DEPLOY, target, 'web')).rejects.toSatisfy(isNotFound);
  });

  it('selects namespaces by Velero\'s globs, with {a,b}, ?, and [abc]; an unscoped name narrows every resource', async () => {
    const b = await backupAndWait('globs', {
      includedNamespaces: [`${p}-{alpha,beta}`, `${p}-?amma`], excludedNamespaces: [`${p}-[b]eta`],
      includedResources: ['configmaps', 'secrets', 'namespaces'], includedNames: ['app-1'],
    });
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    // No secret is named app-1; Namespace objects come with the items they hold.
    expect(resourceList('globs')).toEqual({ configmaps: [`${alpha}/app-1`, `${gamma}/app-1`], namespaces: [alpha, gamma] });
  });

  it('honours the scope-specific resource filters on backup', async () => {
    const b = await backupAndWait('scoped', {
      includedNamespaces: [alpha], includedNamespaceScopedResources: ['configmaps'], excludedNamespaceScopedResources: ['secrets'],
      includedClusterScopedResources: ['storageclasses', 'clusterroles'], excludedClusterScopedResources: ['nodes'],
      includedNames: ['clusterroles/{' + clusterRole + ',none}', 'storageclasses/' + storageClass],
    });
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    const list = resourceList('scoped');
    expect(Object.keys(list).sort()).toEqual(['clusterroles.rbac.authorization.k8s.io', 'configmaps', 'namespaces', 'storageclasses.storage.k8s.io']);
    expect(list['storageclasses.storage.k8s.io']).toEqual([storageClass]);
    expect(list['clusterroles.rbac.authorization.k8s.io']).toEqual([clusterRole]);
    expect(list.configmaps).toEqual(expect.arrayContaining(TEN.map((n) => `${alpha}/${n}`)));
    expect(list.namespaces).toEqual([alpha]);
  });

  it('honours the scope-specific resource filters on restore', async () => {
    // The backup holds both cluster-scoped objects; the restore takes back only the StorageClass.
    await client.delete(SC, undefined, storageClass);
    await client.delete(CR, undefined, clusterRole);
    const target = `${alpha}-scoped`;
    const r = await restoreAndWait('scoped', {
      backupName: 'scoped', namespaceMapping: { [alpha]: target },
      includedClusterScopedResources: ['storageclasses.storage.k8s.io'], excludedNamespaceScopedResources: ['configmaps'],
    });
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    await client.get(SC, undefined, storageClass);
    await expect(client.get(CR, undefined, clusterRole)).rejects.toSatisfy(isNotFound);
    expect(await configMapNames(target)).toEqual([]);
    // The Namespace object is cluster-scoped, and taken unless excluded.
    await client.get(NS, undefined, target);
  });

  it('pulls in a dependency under the scope-specific filters (as Velero) unless excludedNames names it', async () => {
    const withSa = await backupAndWait('deps', { includedNamespaces: [alpha], includedNamespaceScopedResources: ['deployments.apps'] });
    expect(withSa.status?.phase, JSON.stringify(withSa.status)).toBe('Completed');
    expect(resourceList('deps').serviceaccounts).toEqual([`${alpha}/web-sa`]);
    expect(resourceList('deps')['deployments.apps']).toEqual([`${alpha}/web`]);
    const without = await backupAndWait('nodeps', { includedNamespaces: [alpha], includedNamespaceScopedResources: ['deployments.apps'], excludedNames: ['serviceaccounts/web-sa'] });
    expect(without.status?.phase, JSON.stringify(without.status)).toBe('Completed');
    expect(resourceList('nodeps').serviceaccounts).toBeUndefined();
    expect(resourceList('nodeps')['deployments.apps']).toEqual([`${alpha}/web`]);
  });

  it('refuses a bad pattern, a bad namespace glob and mixed filter styles at validation, naming each', async () => {
    const b = await backupAndWait('bad', {
      includedNamespaces: [`${p}-{alpha`], includedNames: ['configmaps/regex:^app-[0-9'],
      includedResources: ['configmaps'], includedClusterScopedResources: ['storageclasses'],
    });
    expect(b.status?.phase).toBe('FailedValidation');
    const errors = b.status?.validationErrors ?? [];
    expect(errors).toContain(`includedNamespaces[0] "${p}-{alpha" is not a valid namespace pattern: a "{" is never closed by "}"`);
    expect(errors).toContain('includedNames[0] "configmaps/regex:^app-[0-9" is not a valid regular expression: Invalid regular expression: /^app-[0-9/: Unterminated character class');
    expect(errors.some((e) => e.startsWith('the scope-specific resource filters (includedClusterScopedResources) cannot be combined with includedResources'))).toBe(true);
    expect(fs.existsSync(path.join(loc.root, 'backups', 'backups', 'bad'))).toBe(false);

    const r = await restoreAndWait('bad', { backupName: 'full', excludedNames: ['regex:(unclosed'] });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toContain('excludedNames[0] "regex:(unclosed" is not a valid regular expression: Invalid regular expression: /(unclosed/: Unterminated group');
    await waitUntil('the refusal in the server log', async () => (server.output().includes('regex:(unclosed') ? true : undefined), 30_000);
  });
});
