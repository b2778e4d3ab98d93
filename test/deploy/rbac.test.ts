// Applies deploy/ to the real apiserver and checks the ServiceAccount's privileges with its own
// token from the TokenRequest API, in each trust mode: requester mode (the default) reads, keeps
// its own kinds, Lease, TLS Secret and webhook configuration, impersonates and asks
// SubjectAccessReviews, and can write nothing else; cluster-admin mode adds what restores with
// the server's own rights need. Every refusal is asserted with the API server's exact message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as k8s from '@kubernetes/client-node';
import { CORE, LEASES, SUBJECT_ACCESS_REVIEWS, createDynamicClient, isForbidden, KubeError, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { ruleCount, rulesFor } from '../../src/rbac/rules.js';
import { adminConfig, uniqueName, waitUntil } from '../support/kube.js';
import { applyObjects, deleteObjects, deployRuleIds, ensureDeployCrds, loadDeployManifests, serviceAccountClient, webhookConfigurationNameFor } from './manifests.js';

const SSAR = { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectaccessreviews', namespaced: false };
const DEPLOYMENTS = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
const ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', namespaced: true };
const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true };
const CLUSTER_ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', namespaced: false };
const WEBHOOKS = { group: 'admissionregistration.k8s.io', version: 'v1', resource: 'mutatingwebhookconfigurations', namespaced: false };

interface Access {
  verb: string;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

async function allowed(client: DynamicClient, a: Access): Promise<boolean> {
  const r = await client.create<{ status?: { allowed?: boolean } }>(SSAR, undefined, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { verb: a.verb, group: a.group ?? '', resource: a.resource, subresource: a.subresource ?? '', namespace: a.namespace ?? '', name: a.name ?? '' } },
  });
  return r.status?.allowed === true;
}

const describeAccess = (a: Access): string =>
  `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.group ? `.${a.group}` : ''}${a.name ? ` "${a.name}"` : ''}${a.namespace ? ` in ${a.namespace}` : ' cluster-wide'}`;

/** The API server's message for a refused call; fails when the call was not refused as Forbidden. */
async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'the call was refused').toBeInstanceOf(KubeError);
  expect(isForbidden(err), (err as Error).message).toBe(true);
  return (err as KubeError).apiMessage;
}

let admin: k8s.KubeConfig;
let adminClient: DynamicClient;
const installed: KubeObject[][] = [];

async function install(ns: string, opts: { withoutRules?: string[]; trustMode?: 'requester' | 'cluster-admin'; webhookConfiguration?: boolean } = {}): Promise<DynamicClient> {
  const objects = loadDeployManifests({ namespace: ns, ...opts }).map((m) => m.object);
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

describe('deploy/ RBAC in requester mode with the ServiceAccount token', () => {
  let ns = '';
  let other = '';
  let sa: DynamicClient;
  let user = '';
  const otherWebhook = uniqueName('other-webhook');

  beforeAll(async () => {
    ns = uniqueName('stowage-rbac');
    other = uniqueName('rbac-other');
    user = `system:serviceaccount:${ns}:stowage`;
    await adminClient.create(CORE.namespaces, undefined, { metadata: { name: other } });
    // The real webhook configuration (retargeted to ns), which the server may patch, and another one it may not.
    sa = await install(ns, { webhookConfiguration: true });
    await adminClient.create(WEBHOOKS, undefined, {
      metadata: { name: otherWebhook },
      webhooks: [
        {
          name: 'other.example.com',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          // Selects no namespace: this test only needs the object.
          namespaceSelector: { matchLabels: { 'stowage.test/none': 'none' } },
          clientConfig: { url: 'https://127.0.0.1:1/none' },
        },
      ],
    });
    // RBAC reaches the authorizer through an informer: wait until the bindings are in effect.
    await waitUntil('the ClusterRoleBinding and RoleBinding to take effect', async () =>
      (await allowed(sa, { verb: 'list', resource: 'configmaps' })) && (await allowed(sa, { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: ns })) ? true : undefined, 30_000);
  });

  afterAll(async () => {
    await adminClient.delete(WEBHOOKS, undefined, otherWebhook).catch(() => undefined);
    await adminClient.delete(CORE.namespaces, undefined, other).catch(() => undefined);
    sa.close();
  });

  it('applies every object: namespace labelled for the webhook, ServiceAccount, Deployment, Services, NetworkPolicy', async () => {
    const namespace = await adminClient.get(CORE.namespaces, undefined, ns);
    expect(namespace.metadata?.labels?.['kubernetes.io/metadata.name']).toBe(ns);
    const dep = await adminClient.get<{ spec: { template: { spec: { serviceAccountName: string } } } }>(DEPLOYMENTS, ns, 'stowage');
    expect(dep.spec.template.spec.serviceAccountName).toBe('stowage');
    expect((await adminClient.get(CORE.services, ns, 'stowage-webhook')).metadata?.name).toBe('stowage-webhook');
    const webhook = await adminClient.get<{ webhooks: { clientConfig: { service: { namespace: string } }; namespaceSelector: Record<string, unknown> }[] }>(WEBHOOKS, undefined, webhookConfigurationNameFor(ns));
    expect(webhook.webhooks[0]?.clientConfig.service.namespace).toBe(ns);
    expect(webhook.webhooks[0]?.namespaceSelector).toEqual({ matchLabels: { 'kubernetes.io/metadata.name': ns } });
  });

  it('lists everything a backup reads, Secrets included, but may not watch or delete it', async () => {
    await adminClient.create(CORE.configMaps, other, { metadata: { name: 'keep-me' }, data: { a: '1' } });
    const page = await sa.list(CORE.configMaps);
    expect(page.items.some((c) => c.metadata?.namespace === other && c.metadata.name === 'keep-me')).toBe(true);
    expect((await sa.list(CORE.secrets, { namespace: 'kube-system' })).items).toBeDefined();
    expect(await refusal(sa.delete(CORE.configMaps, other, 'keep-me'))).toBe(
      `configmaps "keep-me" is forbidden: User "${user}" cannot delete resource "configmaps" in API group "" in the namespace "${other}"`,
    );
    expect((await adminClient.get(CORE.configMaps, other, 'keep-me')).metadata?.name).toBe('keep-me');
  });

  it('impersonates users, groups and ServiceAccounts: the API server then decides as for them', async () => {
    const alice = sa.impersonating({ username: 'alice', groups: ['team-a'] });
    expect(await refusal(alice.list(CORE.configMaps, { namespace: other }))).toBe(
      `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "${other}"`,
    );
    // Granted to the group: the impersonated group is what the API server sees.
    await adminClient.create(ROLES, other, { metadata: { name: 'read-configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] });
    await adminClient.create(ROLE_BINDINGS, other, {
      metadata: { name: 'team-a-reads' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'team-a' }],
    });
    const listed = await waitUntil('team-a to list configmaps', async () => alice.list(CORE.configMaps, { namespace: other }).catch(() => undefined), 30_000);
    expect(listed.items.map((c) => c.metadata?.name)).toContain('keep-me');
    // A ServiceAccount requester is impersonated by its username (needs impersonate on serviceaccounts).
    const account = sa.impersonating({ username: `system:serviceaccount:${other}:default`, groups: ['system:serviceaccounts', `system:serviceaccounts:${other}`] });
    expect(await refusal(account.list(CORE.configMaps, { namespace: other }))).toBe(
      `configmaps is forbidden: User "system:serviceaccount:${other}:default" cannot list resource "configmaps" in API group "" in the namespace "${other}"`,
    );
    // Impersonate-Uid needs impersonate on uids.authentication.k8s.io (sent on 1.22+ only).
    expect(await allowed(sa, { verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids' })).toBe(true);
  });

  it('asks SubjectAccessReviews about a requester', async () => {
    const review = async (namespace: string, resource: string): Promise<boolean | undefined> =>
      (
        await sa.create<{ status?: { allowed?: boolean } }>(SUBJECT_ACCESS_REVIEWS, undefined, {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: { user: 'bob', groups: ['team-b'], resourceAttributes: { verb: 'list', group: '', resource, namespace } },
        })
      ).status?.allowed;
    expect(await review(other, 'secrets')).toBe(false);
    await adminClient.create(ROLE_BINDINGS, other, {
      metadata: { name: 'bob-views' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
    });
    await waitUntil('bob to list configmaps', async () => ((await review(other, 'configmaps')) === true ? true : undefined), 30_000);
    // The view role has no Secrets: a SubjectAccessReview tells them apart.
    expect(await review(other, 'secrets')).toBe(false);
  });

  it('patches only its own webhook configuration, and creates or deletes none', async () => {
    const own = webhookConfigurationNameFor(ns);
    const caBundle = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');
    const patched = await sa.patch<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(WEBHOOKS, undefined, own, [{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: caBundle }], 'json');
    expect(patched.webhooks[0]?.clientConfig.caBundle).toBe(caBundle);
    expect(await refusal(sa.patch(WEBHOOKS, undefined, otherWebhook, [{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: caBundle }], 'json'))).toBe(
      `mutatingwebhookconfigurations.admissionregistration.k8s.io "${otherWebhook}" is forbidden: User "${user}" cannot patch resource "mutatingwebhookconfigurations" in API group "admissionregistration.k8s.io" at the cluster scope`,
    );
    expect(await refusal(sa.create(WEBHOOKS, undefined, { metadata: { name: uniqueName('mine') }, webhooks: [] }))).toBe(
      `mutatingwebhookconfigurations.admissionregistration.k8s.io is forbidden: User "${user}" cannot create resource "mutatingwebhookconfigurations" in API group "admissionregistration.k8s.io" at the cluster scope`,
    );
    expect(await refusal(sa.delete(WEBHOOKS, undefined, own))).toBe(
      `mutatingwebhookconfigurations.admissionregistration.k8s.io "${own}" is forbidden: User "${user}" cannot delete resource "mutatingwebhookconfigurations" in API group "admissionregistration.k8s.io" at the cluster scope`,
    );
  });

  it('keeps its Lease and its webhook TLS Secret in its own namespace, nowhere else', async () => {
    const lease = { metadata: { name: 'stowage-test-lease' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } };
    const created = await sa.create<KubeObject & { spec: Record<string, unknown> }>(LEASES, ns, lease);
    await sa.replace(LEASES, ns, 'stowage-test-lease', { ...created, spec: { ...created.spec, holderIdentity: 'b' } });
    expect(await refusal(sa.create(LEASES, other, lease))).toBe(
      `leases.coordination.k8s.io is forbidden: User "${user}" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "${other}"`,
    );

    // The install creates the TLS Secret (deploy/25-webhook-tls.yaml), empty; the server only updates it by name.
    const tls = `${webhookConfigurationNameFor(ns)}-webhook-tls`;
    const secret = await sa.get<KubeObject & { data?: Record<string, string> }>(CORE.secrets, ns, tls);
    expect(secret.data).toBeUndefined();
    await sa.replace(CORE.secrets, ns, tls, { ...secret, data: { 'tls.crt': 'YQ==', 'tls.key': 'Yg==' } });
    const another = await adminClient.create<KubeObject>(CORE.secrets, ns, { metadata: { name: 'credentials' }, data: { cloud: 'eA==' } });
    expect(await refusal(sa.replace(CORE.secrets, ns, 'credentials', { ...another, data: { cloud: 'eQ==' } }))).toBe(
      `secrets "credentials" is forbidden: User "${user}" cannot update resource "secrets" in API group "" in the namespace "${ns}"`,
    );
    for (const where of [ns, other]) {
      expect(await refusal(sa.create(CORE.secrets, where, { metadata: { name: 'planted' } }))).toBe(
        `secrets is forbidden: User "${user}" cannot create resource "secrets" in API group "" in the namespace "${where}"`,
      );
    }
  });

  it('cannot mint a token through a service-account-token Secret: it creates no Secret at all', async () => {
    const token = { metadata: { name: 'stowage-token', annotations: { 'kubernetes.io/service-account.name': 'stowage' } }, type: 'kubernetes.io/service-account-token' };
    expect(await refusal(sa.create(CORE.secrets, ns, token))).toBe(
      `secrets is forbidden: User "${user}" cannot create resource "secrets" in API group "" in the namespace "${ns}"`,
    );
    for (const verb of ['create', 'patch', 'delete', 'deletecollection']) {
      expect(await allowed(sa, { verb, resource: 'secrets', namespace: ns }), `${verb} secrets in ${ns}`).toBe(false);
    }
  });

  it('cannot mint tokens, exec into pods, escalate or bind, write outside its kinds or delete outside stowage.dev', async () => {
    expect(await refusal(sa.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/serviceaccounts/stowage/token`, body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [] } } }))).toBe(
      `serviceaccounts "stowage" is forbidden: User "${user}" cannot create resource "serviceaccounts/token" in API group "" in the namespace "${ns}"`,
    );
    expect(await refusal(sa.request({ method: 'POST', path: `/api/v1/namespaces/${other}/pods/any/exec`, query: { command: 'id', stdout: true } }))).toBe(
      `pods "any" is forbidden: User "${user}" cannot create resource "pods/exec" in API group "" in the namespace "${other}"`,
    );
    expect(await refusal(sa.create(CORE.configMaps, other, { metadata: { name: 'planted' } }))).toBe(
      `configmaps is forbidden: User "${user}" cannot create resource "configmaps" in API group "" in the namespace "${other}"`,
    );
    expect(await refusal(sa.create(DEPLOYMENTS, other, { metadata: { name: 'planted' }, spec: {} }))).toBe(
      `deployments.apps is forbidden: User "${user}" cannot create resource "deployments" in API group "apps" in the namespace "${other}"`,
    );
    const binding = {
      metadata: { name: 'planted' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'stowage', namespace: ns }],
    };
    expect(await refusal(sa.create(ROLE_BINDINGS, other, binding))).toBe(
      `rolebindings.rbac.authorization.k8s.io is forbidden: User "${user}" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "${other}"`,
    );
    expect(await refusal(sa.create(CLUSTER_ROLE_BINDINGS, undefined, binding))).toBe(
      `clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "${user}" cannot create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope`,
    );
    expect(await refusal(sa.patch(CORE.configMaps, other, 'keep-me', { data: { a: '2' } }, 'merge'))).toBe(
      `configmaps "keep-me" is forbidden: User "${user}" cannot patch resource "configmaps" in API group "" in the namespace "${other}"`,
    );
    expect(await refusal(sa.delete(CORE.namespaces, undefined, other))).toBe(
      `namespaces "${other}" is forbidden: User "${user}" cannot delete resource "namespaces" in API group "" in the namespace "${other}"`,
    );
    for (const a of [
      { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
      { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
      { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: ns },
    ]) {
      expect(await allowed(sa, a), describeAccess(a)).toBe(false);
    }
  });

  it('lists but cannot GET arbitrary kinds, so no GET connect request (websocket exec, attach, port-forward, proxy) is authorized', async () => {
    // The API server authorizes a GET (websocket) connect request as "get" on the subresource, so
    // "get" on "*" would open exec, attach and port-forward. Runs read as their requester; the
    // server itself needs only LIST on "*", GET on its CRDs and on Secrets of its namespace.
    const pods = { group: '', version: 'v1', resource: 'pods', namespaced: true };
    await adminClient.create(pods, other, { metadata: { name: 'target' }, spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] } });
    for (const sub of ['exec', 'attach', 'portforward']) {
      expect(await refusal(sa.request({ method: 'GET', path: `/api/v1/namespaces/${other}/pods/target/${sub}`, query: { command: 'id', stdout: true } })), sub).toBe(
        `pods "target" is forbidden: User "${user}" cannot get resource "pods/${sub}" in API group "" in the namespace "${other}"`,
      );
    }
    expect(await refusal(sa.get(pods, other, 'target'))).toBe(`pods "target" is forbidden: User "${user}" cannot get resource "pods" in API group "" in the namespace "${other}"`);
    expect((await sa.list(pods, { namespace: other })).items.map((p) => p.metadata?.name)).toEqual(['target']);
    for (const a of [
      { verb: 'get', resource: 'pods', subresource: 'exec', namespace: other },
      { verb: 'get', resource: 'services', subresource: 'proxy', namespace: other },
      { verb: 'get', resource: 'nodes', subresource: 'proxy' },
      { verb: 'get', resource: 'secrets', namespace: other },
    ]) expect(await allowed(sa, a), describeAccess(a)).toBe(false);
  });

  it('residual: impersonate on any group includes system:masters, so the token itself stays cluster-admin in effect', async () => {
    // A requester may be in any group, and RBAC has no deny rule, so impersonate on groups cannot
    // leave system:masters out. What requester mode narrows is what a run's creator can make the
    // server do, not what a stolen server token can do.
    const root = sa.impersonating({ username: 'stowage-test-nobody', groups: ['system:masters'] });
    const created = await root.create<KubeObject>(CORE.configMaps, other, { metadata: { name: 'as-masters' } }, { dryRun: true });
    expect(created.metadata?.name).toBe('as-masters');
  });

  it('has exactly the access the rules document', async () => {
    const own = webhookConfigurationNameFor(ns);
    const yes: Access[] = [
      { verb: 'get', resource: 'secrets', namespace: ns },
      { verb: 'list', resource: 'secrets', namespace: 'kube-system' },
      { verb: 'list', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
      { verb: 'impersonate', resource: 'users' },
      { verb: 'impersonate', resource: 'groups' },
      { verb: 'impersonate', resource: 'serviceaccounts', namespace: 'kube-system' },
      { verb: 'create', group: 'authorization.k8s.io', resource: 'subjectaccessreviews' },
      { verb: 'watch', group: 'stowage.dev', resource: 'backups', namespace: ns },
      { verb: 'update', group: 'stowage.dev', resource: 'backups', subresource: 'status', namespace: ns },
      { verb: 'delete', group: 'stowage.dev', resource: 'backups', namespace: ns },
      { verb: 'create', resource: 'events', namespace: ns },
      { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: ns },
      { verb: 'patch', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations', name: own },
      { verb: 'update', resource: 'secrets', namespace: ns, name: `${own}-webhook-tls` },
    ];
    const no: Access[] = [
      { verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default' },
      { verb: 'create', resource: 'namespaces' },
      { verb: 'create', resource: 'pods', namespace: ns },
      { verb: 'patch', resource: 'pods', subresource: 'status', namespace: 'default' },
      { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: ns },
      { verb: 'create', resource: 'pods', subresource: 'exec', namespace: ns },
      { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
      { verb: 'delete', resource: 'namespaces' },
      { verb: 'delete', resource: 'secrets', namespace: ns },
      { verb: 'update', resource: 'secrets', namespace: ns, name: 'credentials' },
      { verb: 'create', resource: 'secrets', namespace: ns },
      { verb: 'create', resource: 'secrets', namespace: ns, name: `${own}-webhook-tls` },
      { verb: 'deletecollection', resource: 'pods', namespace: 'default' },
      { verb: 'delete', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' },
      { verb: 'watch', resource: 'configmaps' },
      { verb: 'delete', resource: 'events', namespace: ns },
      { verb: 'deletecollection', group: 'stowage.dev', resource: 'backups', namespace: ns },
      { verb: 'patch', group: 'admissionregistration.k8s.io', resource: 'validatingwebhookconfigurations', name: own },
      { verb: 'create', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system' },
    ];
    for (const a of yes) expect(await allowed(sa, a), describeAccess(a)).toBe(true);
    for (const a of no) expect(await allowed(sa, a), describeAccess(a)).toBe(false);
  });
});

describe('deploy/cluster-admin RBAC with the ServiceAccount token', () => {
  let ns = '';
  let sa: DynamicClient;

  beforeAll(async () => {
    ns = uniqueName('stowage-rbac');
    sa = await install(ns, { trustMode: 'cluster-admin' });
    await waitUntil('the ClusterRoleBinding to take effect', async () => ((await allowed(sa, { verb: 'create', resource: 'configmaps', namespace: ns })) ? true : undefined), 30_000);
  });

  afterAll(() => sa.close());

  it('sets STOWAGE_TRUST_MODE on the Deployment', async () => {
    const dep = await adminClient.get<{ spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } }>(DEPLOYMENTS, ns, 'stowage');
    expect(dep.spec.template.spec.containers[0]?.env.find((e) => e.name === 'STOWAGE_TRUST_MODE')?.value).toBe('cluster-admin');
  });

  it('creates and patches what a restore writes, but never updates or deletes it', async () => {
    await sa.create(CORE.configMaps, ns, { metadata: { name: 'restored' }, data: { a: '1' } });
    await sa.patch(CORE.configMaps, ns, 'restored', { data: { a: '2' } }, 'merge');
    const user = `system:serviceaccount:${ns}:stowage`;
    expect(await refusal(sa.replace(CORE.configMaps, ns, 'restored', { metadata: { name: 'restored' }, data: { a: '3' } }))).toBe(
      `configmaps "restored" is forbidden: User "${user}" cannot update resource "configmaps" in API group "" in the namespace "${ns}"`,
    );
    expect(await refusal(sa.delete(CORE.configMaps, ns, 'restored'))).toBe(
      `configmaps "restored" is forbidden: User "${user}" cannot delete resource "configmaps" in API group "" in the namespace "${ns}"`,
    );
  });

  it('can restore a Role that grants more than the ServiceAccount holds (escalate)', async () => {
    // The Role grants delete, which the ServiceAccount lacks; without escalate the apiserver refuses it.
    const role = { metadata: { name: 'restored-admin' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] }] };
    const created = await sa.create<KubeObject>(ROLES, ns, role, { dryRun: true });
    expect(created.metadata?.name).toBe('restored-admin');
  });

  it('may exec into pods, for hooks run with its own rights (hook-exec: create and get on pods/exec)', async () => {
    for (const verb of ['create', 'get']) expect(await allowed(sa, { verb, resource: 'pods', subresource: 'exec', namespace: 'default' }), verb).toBe(true);
    const hookExec = deployRuleIds('cluster-admin').find((r) => r.id === 'hook-exec')?.rule;
    expect(hookExec).toEqual({ apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] });
  });

  it('holds every requester-mode rule but the narrow reads, which its backup-read covers', () => {
    const requester = deployRuleIds('requester').map((r) => r.id);
    const admin = deployRuleIds('cluster-admin').map((r) => r.id);
    expect(admin.filter((id) => !requester.includes(id))).toEqual(['backup-read', 'restore-write', 'restore-rbac', 'hook-exec', 'restore-hooks-watch', 'csi-snapshots']);
    // Requester mode's own read rules are what backup-read (get and list on everything) covers.
    expect(requester.filter((id) => !admin.includes(id))).toEqual(['backup-list', 'crd-read', 'csi-snapshot-volumes', 'credential-secrets']);
  });
});

describe('deploy/ RBAC rule ids', () => {
  it('every rule carries an id, and stowage.dev is the only group with delete but the CSI snapshot objects, in both modes', () => {
    expect(deployRuleIds().map((r) => r.id)).toEqual([
      'backup-list', 'crd-read', 'stowage-resources', 'csi-snapshot-contents', 'csi-snapshot-volumes', 'impersonate', 'impersonate-uid', 'access-review', 'webhook-configuration', 'events',
      'leader-election', 'webhook-tls-secret', 'credential-secrets',
    ]);
    // No rule in either mode creates Secrets (a service-account-token Secret is a token that never expires).
    for (const mode of ['requester', 'cluster-admin'] as const) {
      const creating = deployRuleIds(mode).filter((r) => ['secrets', '*'].some((x) => (r.rule.resources ?? []).includes(x)) && r.rule.verbs.some((v) => v === 'create' || v === '*'));
      expect(creating.map((r) => r.id), mode).toEqual(mode === 'requester' ? [] : ['restore-write']);
    }
    for (const mode of ['requester', 'cluster-admin'] as const) {
      const deleting = deployRuleIds(mode).filter((r) => r.rule.verbs.some((v) => v === 'delete' || v === 'deletecollection' || v === '*'));
      // Beyond its own kinds only the CSI snapshot objects: the contents its backups kept (the code
      // deletes none it cannot tie to a backup), and in cluster-admin mode its runs' VolumeSnapshots.
      expect(deleting.map((r) => r.id)).toEqual(mode === 'requester' ? ['stowage-resources', 'csi-snapshot-contents'] : ['stowage-resources', 'csi-snapshot-contents', 'csi-snapshots']);
      expect(deleting[0]?.rule.apiGroups).toEqual(['stowage.dev']);
      for (const r of deleting.slice(1)) expect([r.rule.apiGroups, r.rule.resources]).toEqual([['snapshot.storage.k8s.io'], [r.id === 'csi-snapshots' ? 'volumesnapshots' : 'volumesnapshotcontents']]);
    }
    // Requester mode writes nothing but its own kinds, Lease, events, webhook configuration and TLS Secret.
    const writing = deployRuleIds().filter((r) => r.rule.verbs.some((v) => ['create', 'update', 'patch'].includes(v)));
    expect(writing.every((r) => !(r.rule.resources ?? []).includes('*'))).toBe(true);
    // The counts the rules module reports are those of the files.
    expect(ruleCount(rulesFor('requester')).rules).toBe(deployRuleIds('requester').length);
    expect(ruleCount(rulesFor('cluster-admin')).rules).toBe(deployRuleIds('cluster-admin').length);
  });

  it('without backup-list the token cannot list, and the error names the missing permission', async () => {
    const ns = uniqueName('stowage-rbac');
    const sa = await install(ns, { withoutRules: ['backup-list'] });
    await waitUntil('the ClusterRoleBinding to take effect', async () => ((await allowed(sa, { verb: 'create', resource: 'events', namespace: ns })) ? true : undefined), 30_000);
    expect(await refusal(sa.list(CORE.configMaps))).toBe(`configmaps is forbidden: User "system:serviceaccount:${ns}:stowage" cannot list resource "configmaps" in API group "" at the cluster scope`);
    expect(await allowed(sa, { verb: 'impersonate', resource: 'users' })).toBe(true);
    sa.close();
  });

  it('in cluster-admin mode without restore-rbac a Role granting more than the ServiceAccount holds cannot be restored', async () => {
    const ns = uniqueName('stowage-rbac');
    const sa = await install(ns, { trustMode: 'cluster-admin', withoutRules: ['restore-rbac'] });
    await waitUntil('the ClusterRoleBinding to take effect', async () => ((await allowed(sa, { verb: 'create', resource: 'configmaps', namespace: ns })) ? true : undefined), 30_000);
    const role = { metadata: { name: 'restored-admin' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] }] };
    expect(await refusal(sa.create(ROLES, ns, role, { dryRun: true }))).toMatch(
      new RegExp(`^roles.rbac.authorization.k8s.io "restored-admin" is forbidden: user "system:serviceaccount:${ns}:stowage" \\(groups=.*\\) is attempting to grant RBAC permissions not currently held:\\n\\{APIGroups:\\[""\\], Resources:\\["configmaps"\\], Verbs:\\["delete"\\]\\}$`),
    );
    sa.close();
  });
});
