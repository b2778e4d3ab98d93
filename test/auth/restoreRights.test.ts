// Restores act with their requester's rights (issue 19), end to end: `stowage server` in trust mode
// "requester" against the real API server with real RBAC. alice (group team-a) may read the
// namespaces the admin's backups hold (`edit`, `admin`: they are hers), has `edit` in a fresh copy
// of her namespace and `admin` in another; every write of her restores goes out
// impersonating her, so the API server's RBAC decides each item, and a restore mapped into a
// namespace where she may create nothing fails validation before anything runs.
// The admission webhook that stamps Restores is another part of the issue: here the admin creates
// them with the stamp already set (the admin may impersonate anyone, so this stays legal with it).
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type BackupSpec, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester, type Requester } from '../../src/auth/index.js';
import { CORE, isNotFound, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import type { ItemOutcome } from '../../src/restore/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { readGzippedObject, testS3 } from '../support/s3ObjectStore.js';
import { createS3CredentialsSecret, ensureNamespace, s3LocationSpec, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { removeWebhook } from '../support/webhook.js';
import { DEPLOYMENTS, RBAC, ROLE_BINDINGS, getOrUndefined, res } from '../restore/support.js';

const CLUSTER_ROLE_BINDINGS = res(RBAC, 'v1', 'clusterrolebindings', false);
const SERVICE_ACCOUNTS = res('', 'v1', 'serviceaccounts', true);
const CRBS = 'clusterrolebindings.rbac.authorization.k8s.io';
/** alice may not read ClusterRoleBindings, so no restore of hers may bring one back (issue 31). */
const crbLack = (backup: string): string => `alice may not restore backup "${backup}": what it would restore holds ${CRBS} (cluster-scoped), which alice may neither list nor create`;
const CRB_LACK = crbLack('hostile');
const ALICE: Requester = { username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] };
const ADMIN: Requester = { username: 'admin', uid: 'admin', groups: ['system:masters', 'system:authenticated'] };
const stamped = <T extends KubeObject>(obj: T, who: Requester): T => ({
  ...obj, metadata: { ...obj.metadata, annotations: { ...obj.metadata?.annotations, [REQUESTER_ANNOTATION]: formatRequester(who) } },
});

describe('restores act with their requester\'s rights', () => {
  const stowageNs = uniqueName('stowage-rr');
  const bucket = uniqueName('restore-rights');
  const plain = uniqueName('team-a');
  const copy = uniqueName('team-a');
  const hostile = uniqueName('team-a');
  const own = uniqueName('team-a');
  const crb = uniqueName('team-a-root');
  let client: DynamicClient;
  let server: RunningServer | undefined;

  const readGzip = (key: string): Promise<string> => readGzippedObject(bucket, `cluster/${key}`);
  const outcomesOf = async (r: string): Promise<Map<string, ItemOutcome>> => {
    const results = JSON.parse(await readGzip(`restores/${r}/restore-${r}-results.gz`)) as { outcomes: ItemOutcome[] };
    return new Map(results.outcomes.map((o) => [`${o.groupResource} ${o.namespace === '' ? '' : `${o.namespace}/`}${o.name}`, o]));
  };
  const backup = async (name: string, spec: BackupSpec): Promise<void> => {
    await client.create(RESOURCES.Backup, stowageNs, stamped(newBackup(name, stowageNs, spec), ADMIN));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, stowageNs, name);
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
  };
  const restore = async (name: string, spec: RestoreSpec, who: Requester | undefined): Promise<Restore> => {
    const r = newRestore(name, stowageNs, spec);
    await client.create(RESOURCES.Restore, stowageNs, who === undefined ? r : stamped(r, who));
    return waitFinished<Restore>(client, RESOURCES.Restore, stowageNs, name);
  };
  const bind = (ns: string, role: string): Promise<unknown> =>
    client.create(ROLE_BINDINGS, ns, {
      metadata: { name: `team-a-${role}` },
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: RBAC, kind: 'Group', name: 'team-a' }],
    });
  const gone = (what: string, get: () => Promise<unknown>): Promise<true> =>
    waitUntil(`${what} deleted`, async () => get().then(() => undefined, (err: unknown) => (isNotFound(err) ? true : undefined)));
  const removeFromKubeSystem = async (): Promise<void> => {
    for (const [ref, name] of [[DEPLOYMENTS, 'miner'], [ROLE_BINDINGS, 'root'], [SERVICE_ACCOUNTS, 'bot']] as const) {
      await client.delete(ref, 'kube-system', name).catch(() => undefined);
      await gone(`${name} in kube-system`, () => client.get(ref, 'kube-system', name));
    }
  };

  // The privileged workload (the node's root filesystem, host network and PIDs), the RoleBinding to cluster-admin and (through the ServiceAccount it
  // binds) a ClusterRoleBinding to cluster-admin: what a team member might plant in their own namespace.
  const HOSTILE_KINDS = ['deployments', 'rolebindings', 'serviceaccounts', 'clusterrolebindings'];
  const miner = {
    metadata: { name: 'miner' },
    spec: {
      replicas: 0, selector: { matchLabels: { app: 'miner' } },
      template: {
        metadata: { labels: { app: 'miner' } },
        // The test API server runs with --allow-privileged=false; the node's root filesystem and its host namespaces are as strong.
        spec: {
          hostNetwork: true, hostPID: true, volumes: [{ name: 'root', hostPath: { path: '/' } }],
          containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'root', mountPath: '/host' }], securityContext: { runAsUser: 0 } }],
        },
      },
    },
  };

  beforeAll(async () => {
    client = testClient(inject('cluster').kubeconfigPath);
    const s3 = testS3();
    await s3.createBucket(bucket);
    s3.close();
    for (const ns of [plain, copy, hostile, own, stowageNs]) await ensureNamespace(client, ns);
    // Her namespaces: she may read what their backups hold (issue 31: a restore takes only what its requester could read).
    await bind(plain, 'edit');
    await bind(hostile, 'admin');
    await bind(copy, 'edit');
    await bind(own, 'admin');
    await client.create(CORE.configMaps, plain, { metadata: { name: 'settings', labels: { app: 'web' } }, data: { color: 'blue' } });
    await client.create(CORE.secrets, plain, { metadata: { name: 'creds' }, stringData: { password: 'hunter2' } });
    await client.create(DEPLOYMENTS, plain, {
      metadata: { name: 'web' },
      spec: { replicas: 0, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
    });
    await client.create(DEPLOYMENTS, hostile, miner);
    await client.create(SERVICE_ACCOUNTS, hostile, { metadata: { name: 'bot' } });
    await client.create(ROLE_BINDINGS, hostile, {
      metadata: { name: 'root' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: RBAC, kind: 'Group', name: 'team-a' }],
    });
    await client.create(CLUSTER_ROLE_BINDINGS, undefined, {
      metadata: { name: crb }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'bot', namespace: hostile }],
    });
    await createS3CredentialsSecret(client, stowageNs, 'cloud-credentials', inject('s3'));
    server = await startServer({
      kubeconfigPath: inject('cluster').kubeconfigPath, namespace: stowageNs,
      location: { name: 'default', spec: s3LocationSpec(inject('s3'), { bucket, prefix: 'cluster', secret: 'cloud-credentials' }) },
    });
    await backup('plain', { includedNamespaces: [plain], includedResources: ['configmaps', 'secrets', 'deployments'] });
    // The ClusterRoleBinding comes along as related to the ServiceAccount it binds; the ClusterRole is left out by the filter.
    await backup('hostile', { includedNamespaces: [hostile], includedResources: HOSTILE_KINDS });
  });

  afterAll(async () => {
    await server?.stop();
    await removeFromKubeSystem().catch(() => undefined);
    await client.delete(CLUSTER_ROLE_BINDINGS, undefined, crb).catch(() => undefined);
    for (const ns of [plain, copy, hostile, own, stowageNs]) await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
  });

  it('alice restores her namespace into a fresh copy she has edit in: Completed, the objects equal, the run log naming her', async () => {
    const r = await restore('alice-copy', { backupName: 'plain', namespaceMapping: { [plain]: copy } }, ALICE);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(r.status?.summary).toMatchObject({ created: 3, failed: 0 });
    const cm = await client.get<{ data?: Record<string, string> }>(CORE.configMaps, copy, 'settings');
    expect(cm.data).toEqual({ color: 'blue' });
    const [src, dst] = await Promise.all([client.get<{ data?: unknown }>(CORE.secrets, plain, 'creds'), client.get<{ data?: unknown }>(CORE.secrets, copy, 'creds')]);
    expect(dst.data).toEqual(src.data);
    const [d0, d1] = await Promise.all([client.get<{ spec?: unknown }>(DEPLOYMENTS, plain, 'web'), client.get<{ spec?: unknown }>(DEPLOYMENTS, copy, 'web')]);
    expect(d1.spec).toEqual(d0.spec);
    const log = await readGzip('restores/alice-copy/restore-alice-copy-logs.gz');
    // One cluster-wide review per kind (3), then one in the copy: its first kind (configmaps) is allowed.
    expect(log).toContain('acting with the rights of alice (groups: team-a) (trust mode requester): every read and write of the cluster is made as them; ' +
      'SubjectAccessReviews allowed reading what it restores, and 4 allowed its 1 target namespace');
  });

  it('a restore by alice mapped into kube-system fails validation naming kube-system, and nothing is created', async () => {
    const r = await restore('alice-kube-system', { backupName: 'hostile', namespaceMapping: { [hostile]: 'kube-system' } }, ALICE);
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([
      CRB_LACK,
      `alice may not create objects in namespace kube-system (mapped from ${hostile}): not allowed to create deployments.apps, rolebindings.rbac.authorization.k8s.io, serviceaccounts`,
    ]);
    expect(await getOrUndefined(client, DEPLOYMENTS, 'kube-system', 'miner')).toBeUndefined();
    expect(await getOrUndefined(client, ROLE_BINDINGS, 'kube-system', 'root')).toBeUndefined();
    expect(await getOrUndefined(client, SERVICE_ACCOUNTS, 'kube-system', 'bot')).toBeUndefined();
  });

  it('a dry run by alice into kube-system is refused the same way', async () => {
    const r = await restore('alice-kube-system-dry', { backupName: 'hostile', dryRun: true, namespaceMapping: { [hostile]: 'kube-system' } }, ALICE);
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([
      CRB_LACK,
      `alice may not create objects in namespace kube-system (mapped from ${hostile}): not allowed to create deployments.apps, rolebindings.rbac.authorization.k8s.io, serviceaccounts`,
    ]);
  });

  it('a backup whose resource list was deleted is refused before anything is written, as backup verify refuses it', async () => {
    // (A backup that never had a resource list, as Velero's, is checked from the plan instead:
    // test/auth/restoreSourceRights.test.ts.)
    await backup('hostile-unlisted', { includedNamespaces: [hostile], includedResources: HOSTILE_KINDS });
    const s3 = testS3();
    try {
      await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'cluster/backups/hostile-unlisted/hostile-unlisted-resource-list.json.gz' }));
    } finally {
      s3.close();
    }
    const r = await restore('alice-unlisted', { backupName: 'hostile-unlisted', namespaceMapping: { [hostile]: 'kube-system' } }, ALICE);
    expect(r.status?.phase).toBe('Failed');
    expect(r.status?.failureReason).toBe('the restore was refused (records-missing): backup hostile-unlisted has no resource list in object storage, ' +
      'though Stowage writes one with every finished backup: it was deleted, so the backup cannot be checked and is not restored');
    expect(r.status?.summary).toEqual({ created: 0, updated: 0, skipped: 0, failed: 0 });
    expect(await getOrUndefined(client, DEPLOYMENTS, 'kube-system', 'miner')).toBeUndefined();
  });

  // The API's own messages, as the restore's item outcomes carry them (the request, then the API's words and status).
  const escalation = (): string =>
    `create rolebindings.rbac.authorization.k8s.io "root" in namespace "${own}": rolebindings.rbac.authorization.k8s.io "root" is forbidden: ` +
    'user "alice" (groups=["team-a" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n' +
    '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]} (403 Forbidden)';

  // A dry run reads each object first: alice may not even read the ClusterRoleBinding, and the API says so.
  it('a restore by alice into her own namespace that would bring back the ClusterRoleBinding she may not read fails validation, also as a dry run', async () => {
    for (const dryRun of [false, true]) {
      const name = `alice-own-crb${dryRun ? '-dry' : ''}`;
      const r = await restore(name, { backupName: 'hostile', dryRun, namespaceMapping: { [hostile]: own } }, ALICE);
      expect(r.status?.phase).toBe('FailedValidation');
      expect(r.status?.validationErrors).toEqual([CRB_LACK]);
    }
    expect(await getOrUndefined(client, DEPLOYMENTS, own, 'miner')).toBeUndefined();
  });

  it('a dry run by alice into her own namespace, without the ClusterRoleBinding, predicts the API\'s refusal of the RoleBinding', async () => {
    const r = await restore('alice-own-dry', { backupName: 'hostile', dryRun: true, namespaceMapping: { [hostile]: own }, excludedResources: [CRBS] }, ALICE);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    const o = await outcomesOf('alice-own-dry');
    expect(o.get(`rolebindings.rbac.authorization.k8s.io ${own}/root`)).toMatchObject({ action: 'failed', reason: escalation() });
    expect(o.has(`clusterrolebindings.rbac.authorization.k8s.io ${crb}`)).toBe(false);
    expect(o.get(`deployments.apps ${own}/miner`)).toMatchObject({ action: 'created', validated: true });
    expect(await getOrUndefined(client, DEPLOYMENTS, own, 'miner')).toBeUndefined();
  });

  it('a restore by alice into her own namespace, without the ClusterRoleBinding: the RoleBinding to cluster-admin fails with the API\'s message, the rest is restored', async () => {
    const r = await restore('alice-own', { backupName: 'hostile', namespaceMapping: { [hostile]: own }, excludedResources: [CRBS] }, ALICE);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('PartiallyFailed');
    const o = await outcomesOf('alice-own');
    expect(o.get(`rolebindings.rbac.authorization.k8s.io ${own}/root`)).toMatchObject({ action: 'failed', reason: escalation() });
    expect(r.status?.summary?.failed).toBe(1);
    expect(await getOrUndefined(client, ROLE_BINDINGS, own, 'root')).toBeUndefined();
    expect(await getOrUndefined(client, DEPLOYMENTS, own, 'miner')).toBeDefined();
    expect(await getOrUndefined(client, SERVICE_ACCOUNTS, own, 'bot')).toBeDefined();
  });

  it('the same hostile restores with an admin stamp succeed', async () => {
    const intoOwn = await restore('admin-own', { backupName: 'hostile', namespaceMapping: { [hostile]: own }, existingResourcePolicy: 'update' }, ADMIN);
    expect(intoOwn.status?.phase, JSON.stringify(intoOwn.status)).toBe('Completed');
    expect(await getOrUndefined(client, ROLE_BINDINGS, own, 'root')).toBeDefined();
    const intoSystem = await restore('admin-kube-system', { backupName: 'hostile', namespaceMapping: { [hostile]: 'kube-system' } }, ADMIN);
    expect(intoSystem.status?.phase, JSON.stringify(intoSystem.status)).toBe('Completed');
    expect(await getOrUndefined(client, DEPLOYMENTS, 'kube-system', 'miner')).toBeDefined();
    expect(await getOrUndefined(client, ROLE_BINDINGS, 'kube-system', 'root')).toBeDefined();
    expect(await readGzip('restores/admin-kube-system/restore-admin-kube-system-logs.gz'))
      .toContain('acting with the rights of admin (groups: system:masters) (trust mode requester)');
    await removeFromKubeSystem();
  });

  it('an unstamped Restore fails validation saying whose rights are missing', async () => {
    // The webhook stamps every create; taking the namespace out of its scope (as deleting the
    // configuration would) lets an unstamped Restore through, which must not run.
    await removeWebhook(client, stowageNs);
    const r = await restore('unstamped', { backupName: 'plain', namespaceMapping: { [plain]: copy } }, undefined);
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([
      `it has no ${REQUESTER_ANNOTATION} annotation: the Stowage admission webhook did not record who created it (is the MutatingWebhookConfiguration installed?), ` +
      'and in trust mode "requester" nothing runs without knowing whose rights to use',
    ]);
  });

  it('in trust mode cluster-admin, alice\'s restore into kube-system runs with the server\'s rights and succeeds (what that mode gives up)', async () => {
    await server?.stop();
    server = await startServer({ kubeconfigPath: inject('cluster').kubeconfigPath, namespace: stowageNs, args: ['--trust-mode', 'cluster-admin'] });
    const r = await restore('alice-kube-system-admin-mode', { backupName: 'hostile', namespaceMapping: { [hostile]: 'kube-system' } }, ALICE);
    expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
    expect(await getOrUndefined(client, DEPLOYMENTS, 'kube-system', 'miner')).toBeDefined();
    expect(await getOrUndefined(client, ROLE_BINDINGS, 'kube-system', 'root')).toBeDefined();
    expect(await readGzip('restores/alice-kube-system-admin-mode/restore-alice-kube-system-admin-mode-logs.gz'))
      .toContain("acting with alice (groups: team-a), with the server's rights (trust mode cluster-admin)");
  });
});
