// Applies deploy/ to the real apiserver and checks the ServiceAccount's privileges with its own
// token from the TokenRequest API: broad enough for backups and restores, and no more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as k8s from '@kubernetes/client-node';
import { CORE, LEASES, createDynamicClient, isForbidden, KubeError, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { adminConfig, uniqueName, waitUntil } from '../support/kube.js';
import { applyObjects, deleteObjects, deployRuleIds, ensureDeployCrds, loadDeployManifests, serviceAccountClient } from './manifests.js';

const SSAR = { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectaccessreviews', namespaced: false };
const DEPLOYMENTS = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
const ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', namespaced: true };

interface Access {
  verb: string;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
}

async function allowed(client: DynamicClient, a: Access): Promise<boolean> {
  const r = await client.create<{ status?: { allowed?: boolean } }>(SSAR, undefined, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { verb: a.verb, group: a.group ?? '', resource: a.resource, subresource: a.subresource ?? '', namespace: a.namespace ?? '' } },
  });
  return r.status?.allowed === true;
}

const describeAccess = (a: Access): string =>
  `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.group ? `.${a.group}` : ''}${a.namespace ? ` in ${a.namespace}` : ' cluster-wide'}`;

let admin: k8s.KubeConfig;
let adminClient: DynamicClient;
const installed: KubeObject[][] = [];

async function install(ns: string, withoutRules: string[] = []): Promise<DynamicClient> {
  const objects = loadDeployManifests({ namespace: ns, withoutRules }).map((m) => m.object);
  installed.push(objects);
  await applyObjects(adminClient, objects);
  return serviceAccountClient(admin, ns, 'stowage');
}

beforeAll(async () => {
  admin = adminConfig();
  adminClient = createDynamicClient(admin, { qps: 0 });
  await ensureDeployCrds(adminClient);
});

afterAll(async () => {
  for (const objects of installed) await deleteObjects(adminClient, objects);
  adminClient.close();
});

describe('deploy/ RBAC with the ServiceAccount token', () => {
  let ns = '';
  let sa: DynamicClient;

  beforeAll(async () => {
    ns = uniqueName('stowage-rbac');
    sa = await install(ns);
    // RBAC reaches the authorizer through an informer: wait until the binding is in effect.
    await waitUntil('the ClusterRoleBinding to take effect', async () => ((await allowed(sa, { verb: 'list', resource: 'configmaps' })) ? true : undefined), 30_000);
  });

  it('applies every object and creates the ServiceAccount', async () => {
    const serviceAccount = await adminClient.get(CORE.serviceAccounts, ns, 'stowage');
    expect(serviceAccount.metadata?.name).toBe('stowage');
    const dep = await adminClient.get<{ spec: { template: { spec: { serviceAccountName: string } } } }>(DEPLOYMENTS, ns, 'stowage');
    expect(dep.spec.template.spec.serviceAccountName).toBe('stowage');
  });

  it('lists configmaps cluster-wide but may not delete one', async () => {
    await adminClient.create(CORE.configMaps, ns, { metadata: { name: 'keep-me' }, data: { a: '1' } });
    const page = await sa.list(CORE.configMaps);
    expect(page.items.some((c) => c.metadata?.namespace === ns && c.metadata.name === 'keep-me')).toBe(true);

    const err = await sa.delete(CORE.configMaps, ns, 'keep-me').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KubeError);
    expect(isForbidden(err)).toBe(true);
    // The message names the missing permission, from the apiserver.
    expect((err as KubeError).message).toMatch(/cannot delete resource "configmaps"/);
    expect((await adminClient.get(CORE.configMaps, ns, 'keep-me')).metadata?.name).toBe('keep-me');
  });

  it('creates and patches what a restore writes, but never updates or deletes it', async () => {
    await sa.create(CORE.configMaps, ns, { metadata: { name: 'restored' }, data: { a: '1' } });
    await sa.patch(CORE.configMaps, ns, 'restored', { data: { a: '2' } }, 'merge');
    const err = await sa.replace(CORE.configMaps, ns, 'restored', { metadata: { name: 'restored' }, data: { a: '3' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isForbidden(err)).toBe(true);
  });

  it('can restore a RoleBinding-worthy Role that grants more than the ServiceAccount holds (escalate)', async () => {
    // The Role grants delete, which the ServiceAccount lacks; without escalate the apiserver refuses it.
    const role = { metadata: { name: 'restored-admin' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] }] };
    const created = await sa.create<KubeObject>(ROLES, ns, role, { dryRun: true });
    expect(created.metadata?.name).toBe('restored-admin');
  });

  it('holds the Lease in its own namespace for leader election, nowhere else', async () => {
    const lease = { metadata: { name: 'stowage-test-lease' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } };
    const created = await sa.create<KubeObject & { spec: Record<string, unknown> }>(LEASES, ns, lease);
    await sa.replace(LEASES, ns, 'stowage-test-lease', { ...created, spec: { ...created.spec, holderIdentity: 'b' } });
    expect(await allowed(sa, { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system' })).toBe(false);
    expect(await allowed(sa, { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', namespace: ns })).toBe(false);
  });

  it('has exactly the access the rules document', async () => {
    const yes: Access[] = [
      { verb: 'get', resource: 'secrets', namespace: ns },
      { verb: 'list', resource: 'secrets', namespace: 'kube-system' },
      { verb: 'list', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
      { verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default' },
      { verb: 'create', resource: 'namespaces' },
      { verb: 'patch', resource: 'pods', subresource: 'status', namespace: 'default' },
      { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
      { verb: 'watch', group: 'stowage.dev', resource: 'backups', namespace: ns },
      { verb: 'update', group: 'stowage.dev', resource: 'backups', subresource: 'status', namespace: ns },
      { verb: 'delete', group: 'stowage.dev', resource: 'backups', namespace: ns },
      { verb: 'create', resource: 'events', namespace: ns },
      { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: ns },
    ];
    const no: Access[] = [
      { verb: 'delete', resource: 'namespaces' },
      { verb: 'delete', resource: 'secrets', namespace: ns },
      { verb: 'deletecollection', resource: 'pods', namespace: 'default' },
      { verb: 'delete', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
      { verb: 'update', group: 'apps', resource: 'deployments', namespace: 'default' },
      { verb: 'watch', resource: 'configmaps' },
      { verb: 'impersonate', resource: 'users' },
      { verb: 'delete', resource: 'events', namespace: ns },
      { verb: 'deletecollection', group: 'stowage.dev', resource: 'backups', namespace: ns },
    ];
    for (const a of yes) expect(await allowed(sa, a), describeAccess(a)).toBe(true);
    for (const a of no) expect(await allowed(sa, a), describeAccess(a)).toBe(false);
  });
});

describe('deploy/ RBAC without one rule', () => {
  it('every rule carries an id, and stowage.dev is the only group with delete', () => {
    const rules = deployRuleIds();
    expect(rules.map((r) => r.id).sort()).toEqual(['backup-read', 'events', 'leader-election', 'restore-rbac', 'restore-write', 'stowage-resources']);
    const deleting = rules.filter((r) => r.rule.verbs.some((v) => v === 'delete' || v === 'deletecollection' || v === '*'));
    expect(deleting.map((r) => r.id)).toEqual(['stowage-resources']);
    expect(deleting[0]?.rule.apiGroups).toEqual(['stowage.dev']);
  });

  it('without backup-read the token cannot list, and the error names the missing permission', async () => {
    const ns = uniqueName('stowage-rbac');
    const sa = await install(ns, ['backup-read']);
    await waitUntil('the ClusterRoleBinding to take effect', async () => ((await allowed(sa, { verb: 'create', resource: 'events', namespace: ns })) ? true : undefined), 30_000);
    const err = await sa.list(CORE.configMaps).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isForbidden(err)).toBe(true);
    expect((err as KubeError).message).toMatch(/cannot list resource "configmaps"/);
    expect(await allowed(sa, { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: ns })).toBe(true);
  });

  it('without restore-rbac a Role granting more than the ServiceAccount holds cannot be restored', async () => {
    const ns = uniqueName('stowage-rbac');
    const sa = await install(ns, ['restore-rbac']);
    await waitUntil('the ClusterRoleBinding to take effect', async () => ((await allowed(sa, { verb: 'list', resource: 'configmaps' })) ? true : undefined), 30_000);
    const role = { metadata: { name: 'restored-admin' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] }] };
    const err = await sa.create(ROLES, ns, role, { dryRun: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isForbidden(err)).toBe(true);
    expect((err as KubeError).message).toMatch(/attempting to grant RBAC permissions not currently held/);
  });
});
