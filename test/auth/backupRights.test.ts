// A backup runs with its requester's rights (trust mode requester): `stowage server` as a child
// process, the real API server and its RBAC. The team users get real rights with RoleBindings; the
// Backups are created by admin with the requester stamp preset (admin may impersonate anyone, so
// the admission webhook lets such a stamp stand).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup, type BackupSpec } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester, type Requester } from '../../src/auth/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { CORE } from '../../src/kube/index.js';
import type { ResourceList, RunResults } from '../../src/persistence/results.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { suspendWebhook } from '../support/webhook.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true } as const;
// carol (group team-c) is this file's own team user: other files grant team-a rights in their
// namespaces while this one runs, which a backup of * by alice would see.
const CAROL: Requester = { username: 'carol', uid: 'carol-uid', groups: ['team-c', 'system:authenticated'] };
const ADMIN: Requester = { username: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'] };
const TESTER: Requester = { username: 'tester', uid: '', groups: ['system:authenticated'] };
const NOT_STAMPED = 'it has no stowage.dev/requester annotation: the Stowage admission webhook did not record who created it (is the MutatingWebhookConfiguration installed?), and in trust mode "requester" nothing runs without knowing whose rights to use';

describe('backup with the requester\'s rights', () => {
  const id = uniqueName('rights');
  const teamA = uniqueName('team-a');
  const teamB = uniqueName('team-b');
  /** carol may only view here: ConfigMaps yes, Secrets no. */
  const teamAView = uniqueName('team-a-view');
  /** carol may edit here; its claim is bound to a PersistentVolume, which she may not get. */
  const teamAPv = uniqueName('team-a-pv');
  /** carol is bound to cluster-admin here (a RoleBinding): she may list everything, in this namespace only. */
  const teamStar = uniqueName('team-star');
  const pvName = uniqueName('pv-rights');
  const ns = uniqueName('stowage');
  const adminNs = uniqueName('stowage-ca');
  const loc = filesystemLocation();
  const caLoc = filesystemLocation();
  const secretValue = (team: string): string => `secret-of-${team}-${id}`;
  let client: DynamicClient;
  let server: RunningServer;
  let caServer: RunningServer;

  beforeAll(async () => {
    client = testClient(inject('cluster').kubeconfigPath);
    for (const n of [teamA, teamB, teamAView, teamAPv, teamStar]) await ensureNamespace(client, n);
    const bind = (namespace: string, role: string, group: string): Promise<unknown> => client.create(ROLE_BINDINGS, namespace, {
      metadata: { name: `${group}-${role}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    });
    // The built-in edit role lets team-a list Secrets in its namespace; view does not.
    await bind(teamA, 'edit', 'team-c');
    await bind(teamAView, 'view', 'team-c');
    await bind(teamB, 'edit', 'team-b');
    await bind(teamAPv, 'edit', 'team-c');
    await bind(teamStar, 'cluster-admin', 'team-c');
    await client.create(CORE.persistentVolumes, undefined, {
      metadata: { name: pvName },
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: '', hostPath: { path: `/tmp/${pvName}` } },
    });
    await client.create(CORE.persistentVolumeClaims, teamAPv, {
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName: pvName, resources: { requests: { storage: '1Gi' } } },
    });
    for (const team of [teamA, teamB, teamAView, teamStar]) {
      await client.create(CORE.configMaps, team, { metadata: { name: 'settings', labels: { 'rights-test': id } }, data: { team } });
      await client.create(CORE.secrets, team, { metadata: { name: 'creds', labels: { 'rights-test': id } }, stringData: { password: secretValue(team) } });
    }
    // What the controller manager adds to every namespace (the default ServiceAccount, with no
    // token Secret since 1.24, and the root CA ConfigMap) is there before any backup, so the
    // expected items are stable.
    for (const team of [teamA, teamB, teamAView, teamStar]) {
      await waitUntil(`${team}'s default ServiceAccount and root CA`, async () => {
        const sa = await client.get(CORE.serviceAccounts, team, 'default').catch(() => undefined);
        const ca = await client.get(CORE.configMaps, team, 'kube-root-ca.crt').catch(() => undefined);
        return sa !== undefined && ca !== undefined ? true : undefined;
      }, 60_000, 250);
    }
    [server, caServer] = await Promise.all([
      startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: ns, location: loc, args: ['--trust-mode', 'requester'] }),
      startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: adminNs, location: caLoc, args: ['--trust-mode', 'cluster-admin'] }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([server?.stop(), caServer?.stop()]);
    await client?.delete(CORE.persistentVolumes, undefined, pvName).catch(() => undefined);
  });

  async function backup(name: string, spec: BackupSpec, requester: Requester | undefined, namespace = ns): Promise<Backup> {
    const b = newBackup(name, namespace, spec);
    if (requester !== undefined) b.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester(requester) };
    await client.create(RESOURCES.Backup, namespace, b);
    return waitFinished<Backup>(client, RESOURCES.Backup, namespace, name, 120_000);
  }

  const dir = (root: string, name: string): string => path.join(root, 'backups', 'backups', name);
  const gz = (root: string, name: string, file: string): Buffer => zlib.gunzipSync(fs.readFileSync(path.join(dir(root, name), `${name}-${file}`)));
  const resourceList = (root: string, name: string): ResourceList => JSON.parse(gz(root, name, 'resource-list.json.gz').toString()) as ResourceList;
  const results = (root: string, name: string): RunResults => JSON.parse(gz(root, name, 'results.gz').toString()) as RunResults;
  /** The run log's messages, one a line (the file is JSON lines, quotes escaped). */
  const runLog = (root: string, name: string): string =>
    gz(root, name, 'logs.gz').toString().split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { msg: string }).msg).join('\n');
  const tarball = (root: string, name: string): string => zlib.gunzipSync(fs.readFileSync(path.join(dir(root, name), `${name}.tar.gz`))).toString('latin1');
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const names = async (res: typeof CORE[keyof typeof CORE], namespace: string): Promise<string[]> =>
    (await client.listAll(res, { namespace })).items.map((o) => `${namespace}/${o.metadata?.name ?? ''}`).sort();
  /** `checked carol's rights to the backup's scope: 90 SubjectAccessReviews in 120 ms`. */
  const reviewCost = (log: string, who: string): { reviews: number; ms: number } => {
    const m = new RegExp(`checked ${who}'s rights to the backup's scope: (\\d+) SubjectAccessReviews(?: \\(and \\d+ SelfSubjectRulesReviews\\))? in (\\d+) ms`).exec(log);
    expect(m, log).not.toBeNull();
    return { reviews: Number(m?.[1]), ms: Number(m?.[2]) };
  };

  it('backs up carol\'s namespace with her rights: exactly what edit lets her list, and says whose rights it used', async () => {
    const b = await backup('carol-own', { includedNamespaces: [teamA] }, CAROL);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(resourceList(loc.root, 'carol-own')).toEqual({
      configmaps: await names(CORE.configMaps, teamA),
      namespaces: [teamA],
      secrets: await names(CORE.secrets, teamA),
      serviceaccounts: await names(CORE.serviceAccounts, teamA),
    });
    const r = results(loc.root, 'carol-own');
    // edit does not let her read RoleBindings (her own binding stays out) nor the ClusterRoleBindings of her ServiceAccounts.
    expect(r.warnings.namespaces[teamA]).toContain(`not backing up rolebindings.rbac.authorization.k8s.io in namespace ${teamA}: carol may not list them there`);
    expect(r.warnings.cluster).toContain('carol may not list clusterrolebindings.rbac.authorization.k8s.io, so no ClusterRoleBinding of a backed-up ServiceAccount is backed up');
    expect(r.errors).toEqual({ cluster: [], namespaces: {} });
    const log = runLog(loc.root, 'carol-own');
    expect(log).toContain('running with the rights of carol (groups: team-c) (trust mode requester)');
    const cost = reviewCost(log, 'carol');
    console.log(`carol's backup of one namespace: ${cost.reviews} SubjectAccessReviews in ${cost.ms} ms`);
  });

  it('does not back up team-b\'s Secrets for carol: PartiallyFailed naming them, and none of their data in the tarball', async () => {
    const b = await backup('carol-b', { includedNamespaces: [teamA, teamB], includedResources: ['secrets', 'configmaps'] }, CAROL);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('PartiallyFailed');
    expect(b.status?.errors).toBe(1);
    const r = results(loc.root, 'carol-b');
    expect(r.errors).toEqual({ cluster: [], namespaces: { [teamB]: [`nothing backed up from namespace ${teamB}: carol may not list configmaps or list secrets there`] } });
    const list = resourceList(loc.root, 'carol-b');
    expect(list.secrets).toEqual(await names(CORE.secrets, teamA));
    expect(list.configmaps).toEqual(await names(CORE.configMaps, teamA));
    const tar = tarball(loc.root, 'carol-b');
    expect(tar).not.toContain(teamB);
    expect(tar).not.toContain(b64(secretValue(teamB)));
    expect(tar).not.toContain(secretValue(teamB));
    // Her own Secret is in it: the scan would find one.
    expect(tar).toContain(b64(secretValue(teamA)));
    expect(runLog(loc.root, 'carol-b')).toContain(`nothing backed up from namespace ${teamB}: carol may not list configmaps or list secrets there`);
  });

  it('takes carol\'s ConfigMaps but not her Secrets where she may not list Secrets, with a warning', async () => {
    const b = await backup('carol-view', { includedNamespaces: [teamAView] }, CAROL);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    const list = resourceList(loc.root, 'carol-view');
    expect(list.configmaps).toEqual(await names(CORE.configMaps, teamAView));
    expect(list.secrets).toBeUndefined();
    expect(results(loc.root, 'carol-view').warnings.namespaces[teamAView]).toContain(`not backing up secrets in namespace ${teamAView}: carol may not list them there`);
    expect(tarball(loc.root, 'carol-view')).not.toContain(b64(secretValue(teamAView)));
  });

  it('backs up * for carol as "everything she may read": her namespaces, listed one by one, the rest left out unnamed', async () => {
    // Other test files create and delete namespaces meanwhile: the count is taken before and after.
    const before = (await client.listAll(CORE.namespaces)).items.length;
    const b = await backup('carol-all', { includedNamespaces: ['*'], labelSelector: { matchLabels: { 'rights-test': id } } }, CAROL);
    expect(b.status?.phase, `${JSON.stringify(b.status)}: ${JSON.stringify(results(loc.root, 'carol-all').errors).slice(0, 1500)}`).toBe('Completed');
    const list = resourceList(loc.root, 'carol-all');
    expect(list.configmaps).toEqual([`${teamA}/settings`, `${teamAView}/settings`, `${teamStar}/settings`].sort());
    expect(list.secrets).toEqual([`${teamA}/creds`, `${teamStar}/creds`].sort());
    const log = runLog(loc.root, 'carol-all');
    // What she may list only in her namespaces is listed there, not cluster-wide (which would be refused).
    expect(log).toContain(`backed up 1 configmaps in namespace "${teamA}"`);
    expect(log).toContain(`backed up 1 configmaps in namespace "${teamAView}"`);
    const r = results(loc.root, 'carol-all');
    expect(r.errors).toEqual({ cluster: [], namespaces: {} });
    const all = (await client.listAll(CORE.namespaces)).items.length;
    // Her four namespaces are named where something is left out of them (she may get them); the other namespaces are counted.
    expect(r.warnings.namespaces[teamAView]).toContain(`not backing up secrets in namespace ${teamAView}: carol may not list them there`);
    const nothing = /^nothing backed up from (\d+) namespaces: carol may not read any of the \d+ resources in scope there \(namespaces not named: carol may not list namespaces\)$/;
    const counted = r.warnings.cluster.flatMap((w) => { const m = nothing.exec(w); return m === null ? [] : [Number(m[1])]; });
    expect(counted, JSON.stringify(r.warnings)).toHaveLength(1);
    expect(counted[0]).toBeGreaterThanOrEqual(Math.min(before, all) - 4);
    expect(counted[0]).toBeLessThanOrEqual(Math.max(before, all) - 4);
    expect(r.warnings.cluster).toContain('not backing up clusterroles.rbac.authorization.k8s.io: carol may not list them');
    // She may not list namespaces: no other namespace's name reaches her backup's results or log.
    for (const other of [teamB, adminNs, 'kube-system']) expect(JSON.stringify(r)).not.toContain(other);
    expect(gz(loc.root, 'carol-all', 'logs.gz').toString()).not.toContain(teamB);
    const cost = reviewCost(log, 'carol');
    console.log(`carol's backup of *: ${/checked carol's rights[^\n"]*/.exec(log)?.[0] ?? ''} (${all} namespaces)`);
    // A cluster-wide review per resource, then per namespace only where her rules could allow it (her 3
    // namespaces), not one per resource in each of the others: bounded by her namespaces, not the cluster's.
    const discovered = (await client.discover()).length;
    // Her rules in the other namespaces (the cluster's rules among them) allow neither a cluster-wide
    // LIST of any of these nor anything there: no cluster-wide review per resource, none per other namespace.
    expect(cost.reviews).toBeLessThanOrEqual(2 + discovered * 4 + 4);
    expect(all).toBeGreaterThan(4 + 3);
  });

  it('leaves out a dependency carol may not get, with a warning naming it; admin\'s backup pulls it in', async () => {
    const b = await backup('carol-pv', { includedNamespaces: [teamAPv] }, CAROL);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    const list = resourceList(loc.root, 'carol-pv');
    expect(list.persistentvolumeclaims).toEqual([`${teamAPv}/data`]);
    expect(list.persistentvolumes).toBeUndefined();
    const warning = `not backing up persistentvolumes "${pvName}", needed by persistentvolumeclaims "${teamAPv}/data" (PersistentVolume "${pvName}" is bound to PersistentVolumeClaim "${teamAPv}/data"): carol may not get it`;
    expect(results(loc.root, 'carol-pv').warnings.cluster).toContain(warning);
    expect(runLog(loc.root, 'carol-pv')).toContain(warning);
    const admin = await backup('admin-pv', { includedNamespaces: [teamAPv] }, ADMIN);
    expect(admin.status?.phase, JSON.stringify(admin.status)).toBe('Completed');
    expect(resourceList(loc.root, 'admin-pv').persistentvolumes).toEqual([pvName]);
  });

  it('refuses a Backup nobody stamped: FailedValidation, nothing written', async () => {
    // The webhook stamps every create; out of its scope (as with its configuration deleted) an
    // unstamped Backup gets through, and must not run. The webhook comes back for later tests:
    // the stamps they preset count only once it has sealed them.
    const restore = await suspendWebhook(client, ns);
    const b = await backup('unstamped', { includedNamespaces: [teamA] }, undefined).finally(restore);
    expect(b.status?.phase).toBe('FailedValidation');
    expect(b.status?.validationErrors).toEqual([NOT_STAMPED]);
    expect(fs.existsSync(dir(loc.root, 'unstamped'))).toBe(false);
  });

  it('refuses a backup by a user with no rights at all: FailedValidation naming what they may not list', async () => {
    const small = await backup('tester-small', { includedNamespaces: [teamA], includedResources: ['configmaps', 'secrets'] }, TESTER);
    expect(small.status?.phase).toBe('FailedValidation');
    expect(small.status?.validationErrors).toEqual([`tester may not list anything in scope: configmaps and secrets in namespace ${teamA}`]);
    const all = await backup('tester-all', { includedNamespaces: [teamA] }, TESTER);
    expect(all.status?.phase).toBe('FailedValidation');
    expect(all.status?.validationErrors).toHaveLength(1);
    expect(all.status?.validationErrors?.[0]).toMatch(new RegExp(`^tester may not list anything in scope: any of the \\d+ resources in namespace ${teamA}$`));
    expect(fs.existsSync(dir(loc.root, 'tester-small'))).toBe(false);
  });

  it('takes everything in carol\'s namespace where she is bound to cluster-admin, at one review there instead of one per resource', async () => {
    const b = await backup('carol-star', { includedNamespaces: [teamStar] }, CAROL);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    const list = resourceList(loc.root, 'carol-star');
    expect(list.secrets).toEqual(await names(CORE.secrets, teamStar));
    expect(list['rolebindings.rbac.authorization.k8s.io']).toEqual([`${teamStar}/team-c-cluster-admin`]);
    expect(tarball(loc.root, 'carol-star')).toContain(b64(secretValue(teamStar)));
    // Cluster-wide she may list nothing: the cluster-scoped dependencies are left out, as for edit.
    expect(results(loc.root, 'carol-star').warnings.cluster).toContain('carol may not list clusterrolebindings.rbac.authorization.k8s.io, so no ClusterRoleBinding of a backed-up ServiceAccount is backed up');
    const cost = reviewCost(runLog(loc.root, 'carol-star'), 'carol');
    // Everything cluster-wide (no), list namespaces (no), everything in her namespace (yes), get her Namespace.
    expect(cost.reviews).toBe(4);
  });

  it('takes everything for admin\'s wildcard backup, at one review', async () => {
    const b = await backup('admin-all', { includedNamespaces: ['*'], labelSelector: { matchLabels: { 'rights-test': id } } }, ADMIN);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(b.status?.warnings ?? 0).toBe(0);
    const list = resourceList(loc.root, 'admin-all');
    expect(list.secrets).toEqual([teamA, teamB, teamAView, teamStar].map((t) => `${t}/creds`).sort());
    expect(list.configmaps).toEqual([teamA, teamB, teamAView, teamStar].map((t) => `${t}/settings`).sort());
    expect(tarball(loc.root, 'admin-all')).toContain(b64(secretValue(teamB)));
    const log = runLog(loc.root, 'admin-all');
    expect(log).toContain('running with the rights of admin (groups: system:masters) (trust mode requester)');
    const cost = reviewCost(log, 'admin');
    const discovered = (await client.discover()).length;
    // `list` on `*` in `*`, which an admin may: nothing else to ask.
    expect(cost.reviews).toBe(1);
    console.log(`admin's wildcard backup: ${cost.reviews} SubjectAccessReviews in ${cost.ms} ms (${discovered} resources discovered)`);
  });

  it('in trust mode cluster-admin takes everything for carol\'s stamp, as before', async () => {
    const b = await backup('carol-ca', { includedNamespaces: [teamA, teamB], includedResources: ['secrets', 'configmaps'] }, CAROL, adminNs);
    expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
    expect(resourceList(caLoc.root, 'carol-ca').secrets).toEqual([...await names(CORE.secrets, teamA), ...await names(CORE.secrets, teamB)].sort());
    expect(tarball(caLoc.root, 'carol-ca')).toContain(b64(secretValue(teamB)));
    const log = runLog(caLoc.root, 'carol-ca');
    expect(log).toContain('running with the server\'s rights (trust mode cluster-admin), requested by carol (groups: team-c)');
    expect(log).not.toContain('SubjectAccessReviews');
  });
});
