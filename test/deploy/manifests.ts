// Loads the plain manifests in deploy/ and applies them to a real apiserver, for tests: retargeted
// to a test's own namespace (cluster-scoped names get the namespace as a suffix, so test files do
// not fight over one ClusterRoleBinding), in either trust mode's RBAC (deploy/20-rbac.yaml or
// deploy/cluster-admin/20-rbac.yaml, both generated from src/rbac/rules.ts), optionally without
// some RBAC rules (by their "# rule: <id>" comment), and a client authenticated as the deployed
// ServiceAccount through the TokenRequest API. installServerIdentity gives a test server exactly
// the deployed ServiceAccount and rules.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import YAML, { isMap, isSeq } from 'yaml';
import type { TrustMode } from '../../src/config/index.js';
import { createDynamicClient, isNotFound, type ApiResource, type DynamicClient, type KubeObject, type ResourceRef } from '../../src/kube/index.js';
import { webhookTlsSecretName } from '../../src/rbac/rules.js';
import { waitUntil } from '../support/kube.js';

export const REPO = path.resolve(import.meta.dirname, '../..');
export const DEPLOY_DIR = path.join(REPO, 'deploy');
export const CRD_DIR = path.join(DEPLOY_DIR, 'crds');
export const DEFAULT_NAMESPACE = 'stowage';
/** The RBAC file of each trust mode (deploy/*.yaml holds requester mode's). */
export const RBAC_FILES: Record<TrustMode, string> = {
  requester: path.join(DEPLOY_DIR, '20-rbac.yaml'),
  'cluster-admin': path.join(DEPLOY_DIR, 'cluster-admin', '20-rbac.yaml'),
};

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface LoadOptions {
  /** Install into this namespace instead of `stowage`. */
  namespace?: string;
  /** Rule ids to leave out of the ClusterRole / Role (see 20-rbac.yaml). Unknown ids throw. */
  withoutRules?: readonly string[];
  /** Whose rights runs use: picks the RBAC file and sets STOWAGE_TRUST_MODE (default requester). */
  trustMode?: TrustMode;
  /**
   * Keep the MutatingWebhookConfiguration (default: left out). Tests have no pod behind its
   * Service, and failurePolicy Fail would then refuse every Backup in the namespace; a test
   * server registers its own configuration instead.
   */
  webhookConfiguration?: boolean;
  /** The webhook configuration the rules name (default webhookConfigurationNameFor(namespace)). */
  webhookConfigurationName?: string;
}

export interface Manifest {
  file: string;
  object: KubeObject;
}

/** A rule id from the comment block above a rule (`# rule: backup-read`). */
function ruleIdOf(comment: string | null | undefined): string | undefined {
  return /^\s*rule:\s*([a-z0-9-]+)\s*$/m.exec(comment ?? '')?.[1];
}

/** Parses a YAML stream, returning each document and, for RBAC roles, each rule's id. */
export function parseManifestText(text: string, file: string): { object: KubeObject; ruleIds: string[] }[] {
  const out: { object: KubeObject; ruleIds: string[] }[] = [];
  for (const doc of YAML.parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const object = doc.toJS() as KubeObject | null;
    if (object === null) continue;
    const ruleIds: string[] = [];
    const rules = isMap(doc.contents) ? doc.contents.get('rules', true) : undefined;
    if (isSeq(rules)) {
      rules.items.forEach((item, i) => {
        // yaml attaches the comment above the first item to the sequence itself.
        const comment = (item as { commentBefore?: string | null }).commentBefore ?? (i === 0 ? rules.commentBefore : undefined);
        const id = ruleIdOf(comment);
        if (id === undefined) throw new Error(`${file}: rule ${i} of ${String(object.kind)} ${String(object.metadata?.name)} has no "# rule: <id>" comment`);
        ruleIds.push(id);
      });
    }
    out.push({ object, ruleIds });
  }
  return out;
}

/** The deploy/*.yaml files in apply order (their names sort namespace first), with `trustMode`'s RBAC file. */
export function deployFiles(dir = DEPLOY_DIR, trustMode: TrustMode = 'requester'): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => path.join(dir, f))
    .map((f) => (dir === DEPLOY_DIR && f === RBAC_FILES.requester ? RBAC_FILES[trustMode] : f));
}

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'MutatingWebhookConfiguration']);
const NAMESPACE_LABEL = 'kubernetes.io/metadata.name';

interface Container {
  env?: { name: string; value?: string }[];
}

/** The webhook configuration name the server of namespace `ns` uses: `stowage`, or `stowage-<ns>` in a test namespace. */
export function webhookConfigurationNameFor(ns: string): string {
  return ns === DEFAULT_NAMESPACE ? 'stowage' : `stowage-${ns}`;
}

/** Every object of deploy/*.yaml (not crds/, not examples/), retargeted and trimmed as asked. */
export function loadDeployManifests(opts: LoadOptions = {}): Manifest[] {
  const ns = opts.namespace ?? DEFAULT_NAMESPACE;
  const mode = opts.trustMode ?? 'requester';
  const retarget = ns !== DEFAULT_NAMESPACE;
  const clusterName = (name: string): string => (retarget ? `${name}-${ns}` : name);
  const webhookName = opts.webhookConfigurationName ?? webhookConfigurationNameFor(ns);
  // resourceNames in the rules name the webhook configuration and its TLS Secret.
  const renames = new Map([
    ['stowage', webhookName],
    [webhookTlsSecretName('stowage'), webhookTlsSecretName(webhookName)],
  ]);
  const dropping = new Set(opts.withoutRules ?? []);
  const seen = new Set<string>();
  const out: Manifest[] = [];
  const files = deployFiles(DEPLOY_DIR, mode);
  for (const file of files) {
    for (const { object, ruleIds } of parseManifestText(fs.readFileSync(file, 'utf8'), file)) {
      const obj = structuredClone(object);
      const md = (obj.metadata ??= {});
      const kind = String(obj.kind);
      if (kind === 'MutatingWebhookConfiguration' && opts.webhookConfiguration !== true) continue;
      if (kind === 'Namespace') {
        md.name = ns;
        if (md.labels?.[NAMESPACE_LABEL] !== undefined) md.labels[NAMESPACE_LABEL] = ns;
      } else if (CLUSTER_SCOPED.has(kind)) md.name = clusterName(String(md.name));
      else md.namespace = ns;
      // The webhook's TLS Secret is named after the configuration.
      if (kind === 'Secret') md.name = renames.get(String(md.name)) ?? md.name;
      const roleRef = obj.roleRef as { kind: string; name: string } | undefined;
      if (roleRef?.kind === 'ClusterRole') roleRef.name = clusterName(roleRef.name);
      for (const s of (obj.subjects as { namespace?: string }[] | undefined) ?? []) if (s.namespace !== undefined) s.namespace = ns;
      if (Array.isArray(obj.rules)) {
        ruleIds.forEach((id) => seen.add(id));
        obj.rules = (obj.rules as PolicyRule[])
          .filter((_, i) => !dropping.has(ruleIds[i] ?? ''))
          .map((r) => (r.resourceNames === undefined ? r : { ...r, resourceNames: r.resourceNames.map((n) => renames.get(n) ?? n) }));
      }
      for (const w of (obj.webhooks as { namespaceSelector?: { matchLabels?: Record<string, string> }; clientConfig?: { service?: { namespace: string } } }[] | undefined) ?? []) {
        if (w.namespaceSelector?.matchLabels?.[NAMESPACE_LABEL] !== undefined) w.namespaceSelector.matchLabels[NAMESPACE_LABEL] = ns;
        if (w.clientConfig?.service !== undefined) w.clientConfig.service.namespace = ns;
      }
      if (kind === 'Deployment') {
        const containers = (obj as unknown as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec.containers;
        for (const e of containers.flatMap((c) => c.env ?? [])) {
          if (e.name === 'STOWAGE_TRUST_MODE') e.value = mode;
          if (e.name === 'STOWAGE_WEBHOOK_CONFIGURATION_NAME') e.value = webhookName;
        }
      }
      out.push({ file: path.relative(REPO, file), object: obj });
    }
  }
  for (const id of dropping) if (!seen.has(id)) throw new Error(`no RBAC rule with id "${id}" in deploy/ (ids: ${[...seen].join(', ')})`);
  return out;
}

/** Every rule id in deploy/ (in `trustMode`'s RBAC file) with the kind and name of the role holding it. */
export function deployRuleIds(trustMode: TrustMode = 'requester'): { id: string; kind: string; name: string; rule: PolicyRule }[] {
  const out: { id: string; kind: string; name: string; rule: PolicyRule }[] = [];
  for (const file of deployFiles(DEPLOY_DIR, trustMode)) {
    for (const { object, ruleIds } of parseManifestText(fs.readFileSync(file, 'utf8'), file)) {
      ruleIds.forEach((id, i) => out.push({ id, kind: String(object.kind), name: String(object.metadata?.name), rule: (object.rules as PolicyRule[])[i] as PolicyRule }));
    }
  }
  return out;
}

/** Finds the resource for an object's apiVersion and kind, rediscovering once for new CRDs. */
export function resourceResolver(client: DynamicClient): (obj: KubeObject) => Promise<ResourceRef> {
  let cache: ApiResource[] | undefined;
  return async (obj) => {
    const [group, version] = (obj.apiVersion ?? '').includes('/') ? (obj.apiVersion ?? '').split('/') : ['', obj.apiVersion ?? ''];
    for (let attempt = 0; attempt < 2; attempt++) {
      cache ??= await client.discover({ onGroupError: () => undefined });
      const r = cache.find((x) => x.group === group && x.kind === obj.kind);
      if (r !== undefined) return { group: r.group, version: version ?? r.version, resource: r.resource, namespaced: r.namespaced };
      cache = undefined;
    }
    throw new Error(`the apiserver serves no ${obj.kind} in ${obj.apiVersion}`);
  };
}

export interface ApplyOptions {
  /** Server-side dry run: validated and admitted, never stored. */
  dryRun?: boolean;
  fieldManager?: string;
  /** Namespace for namespaced objects that name none (as `kubectl -n`). */
  namespace?: string;
}

/**
 * Server-side applies each object in order, as `kubectl apply --server-side` would; after a
 * CustomResourceDefinition it waits until the CRD is Established so later objects can use it.
 * Errors name the object.
 */
export async function applyObjects(client: DynamicClient, objects: readonly KubeObject[], opts: ApplyOptions = {}): Promise<KubeObject[]> {
  const resolve = resourceResolver(client);
  const out: KubeObject[] = [];
  for (const obj of objects) {
    const res = await resolve(obj);
    const name = obj.metadata?.name ?? '';
    const ns = res.namespaced === true ? (obj.metadata?.namespace ?? opts.namespace) : undefined;
    if (res.namespaced === true && ns === undefined) throw new Error(`${obj.kind} ${name} names no namespace`);
    const body = ns !== undefined ? { ...obj, metadata: { ...obj.metadata, namespace: ns } } : obj;
    try {
      out.push(await client.patch(res, ns, name, body, 'apply', { force: true, fieldManager: opts.fieldManager ?? 'stowage-test', dryRun: opts.dryRun === true }));
    } catch (err) {
      throw new Error(`applying ${obj.kind} ${ns !== undefined ? `${ns}/` : ''}${name}: ${(err as Error).message}`, { cause: err });
    }
    if (obj.kind === 'CustomResourceDefinition' && opts.dryRun !== true) await waitEstablished(client, res, name);
  }
  return out;
}

async function waitEstablished(client: DynamicClient, res: ResourceRef, name: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const crd = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(res, undefined, name);
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    if (Date.now() > deadline) throw new Error(`CRD ${name} is not Established after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Deletes the objects in reverse order; missing ones are fine. */
export async function deleteObjects(client: DynamicClient, objects: readonly KubeObject[]): Promise<void> {
  const resolve = resourceResolver(client);
  for (const obj of [...objects].reverse()) {
    const res = await resolve(obj);
    try {
      await client.delete(res, res.namespaced === true ? obj.metadata?.namespace : undefined, obj.metadata?.name ?? '', { propagationPolicy: 'Background' });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/**
 * Installs the CRDs from deploy/crds as `helm install` installs a chart's crds/: created when
 * missing, left alone when present (other test files install the same CRDs concurrently).
 */
export async function ensureDeployCrds(client: DynamicClient): Promise<void> {
  const crds = fs
    .readdirSync(CRD_DIR)
    .sort()
    .flatMap((f) => parseManifestText(fs.readFileSync(path.join(CRD_DIR, f), 'utf8'), f).map((d) => d.object));
  const resolve = resourceResolver(client);
  for (const crd of crds) {
    const res = await resolve(crd);
    try {
      await client.create(res, undefined, crd);
    } catch (err) {
      if ((err as { status?: number }).status !== 409) throw err;
    }
    await waitEstablished(client, res, crd.metadata?.name ?? '');
  }
}

/**
 * A kubeconfig for a ServiceAccount, with a token from the TokenRequest API (what the kubelet
 * mounts into the server's pod), on the admin kubeconfig's cluster.
 */
export async function serviceAccountConfig(admin: k8s.KubeConfig, namespace: string, name: string, expirationSeconds = 3600): Promise<k8s.KubeConfig> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const tr = await core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { audiences: [], expirationSeconds } } });
  const token = tr.status?.token;
  if (token === undefined || token === '') throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  const cluster = admin.getCurrentCluster();
  if (cluster === null) throw new Error('the admin kubeconfig has no current cluster');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: 'cluster' }],
    users: [{ name: `system:serviceaccount:${namespace}:${name}`, token }],
    contexts: [{ name: 'sa', cluster: 'cluster', user: `system:serviceaccount:${namespace}:${name}` }],
    currentContext: 'sa',
  });
  return kc;
}

/** A DynamicClient authenticated as the ServiceAccount. */
export async function serviceAccountClient(admin: k8s.KubeConfig, namespace: string, name: string): Promise<DynamicClient> {
  return createDynamicClient(await serviceAccountConfig(admin, namespace, name), { qps: 0 });
}

/** Writes a kubeconfig for the ServiceAccount (mode 0600), e.g. for `stowage server --kubeconfig`. */
export async function writeServiceAccountKubeconfig(admin: k8s.KubeConfig, namespace: string, name: string, file: string): Promise<string> {
  fs.writeFileSync(file, (await serviceAccountConfig(admin, namespace, name)).exportConfig(), { mode: 0o600 });
  return file;
}

/** What installServerIdentity installed: a ServiceAccount with the deployed rules, and its kubeconfig. */
export interface ServerIdentity {
  namespace: string;
  serviceAccount: string;
  /** The server's `--webhook-configuration-name`: the only configuration its rules may patch. */
  webhookConfigurationName: string;
  /** A kubeconfig with the ServiceAccount's own token (TokenRequest, 1 h), mode 0600. */
  kubeconfigPath: string;
  /** The objects applied (Namespace, ServiceAccount, ClusterRole, Role and bindings). */
  objects: KubeObject[];
  /** Deletes the cluster-scoped objects and the bindings (the namespace is left to the test). */
  remove(): Promise<void>;
}

export interface IdentityOptions {
  namespace: string;
  /** Which rule set (default requester). */
  trustMode?: TrustMode;
  /** Rule ids to leave out, as for loadDeployManifests. */
  withoutRules?: readonly string[];
  /** Where to write the kubeconfig (default a fresh temporary directory). */
  kubeconfigPath?: string;
  /** The webhook configuration its rules name (default webhookConfigurationNameFor(namespace)). */
  webhookConfigurationName?: string;
}

const SSAR = { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectaccessreviews', namespaced: false };

/**
 * Gives a test server the deployed identity: the Namespace, ServiceAccount `stowage` and the
 * generated RBAC of `trustMode` from deploy/ (ClusterRole and binding named `stowage-<ns>`; the
 * rules' resourceNames name the webhook configuration `stowage-<ns>` and its Secret
 * `stowage-<ns>-webhook-tls`, which is created empty as deploy/ does), waits until the bindings are in effect, and writes a kubeconfig
 * with the ServiceAccount's token. Start the server with `--kubeconfig <kubeconfigPath>`,
 * `--namespace <ns>`, `--trust-mode <mode>` and `--webhook-configuration-name <webhookConfigurationName>`.
 */
export async function installServerIdentity(admin: DynamicClient, adminConfig: k8s.KubeConfig, opts: IdentityOptions): Promise<ServerIdentity> {
  // The Secret is the webhook's TLS Secret, which the install creates and the server only updates.
  const kinds = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Secret']);
  const webhookConfigurationName = opts.webhookConfigurationName ?? webhookConfigurationNameFor(opts.namespace);
  const objects = loadDeployManifests({ namespace: opts.namespace, trustMode: opts.trustMode ?? 'requester', withoutRules: opts.withoutRules ?? [], webhookConfigurationName })
    .map((m) => m.object)
    .filter((o) => kinds.has(String(o.kind)));
  await applyObjects(admin, objects);
  const kubeconfigPath = opts.kubeconfigPath ?? path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-sa-')), 'kubeconfig');
  const kc = await serviceAccountConfig(adminConfig, opts.namespace, 'stowage');
  fs.writeFileSync(kubeconfigPath, kc.exportConfig(), { mode: 0o600 });
  // RBAC reaches the authorizer through an informer: wait until both bindings are in effect
  // (the ServiceAccount asks about itself, which needs no rule).
  const sa = createDynamicClient(kc, { qps: 0 });
  try {
    const effective = async (): Promise<boolean> => {
      const bound = await Promise.all(
        objects
          .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
          .map(async (o) => {
            const rule = (o.rules as PolicyRule[])[0];
            if (rule === undefined) return true;
            const r = await sa.create<{ status?: { allowed?: boolean } }>(SSAR, undefined, {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: {
                resourceAttributes: {
                  verb: rule.verbs[0],
                  group: rule.apiGroups?.[0] === '*' ? '' : (rule.apiGroups?.[0] ?? ''),
                  resource: rule.resources?.[0] === '*' ? 'configmaps' : (rule.resources?.[0] ?? ''),
                  name: rule.resourceNames?.[0] ?? '',
                  namespace: o.kind === 'Role' ? opts.namespace : '',
                },
              },
            });
            return r.status?.allowed === true;
          }),
      );
      return bound.every(Boolean);
    };
    await waitUntil(`the RBAC of ServiceAccount ${opts.namespace}/stowage to take effect`, async () => ((await effective()) ? true : undefined), 30_000, 100);
  } finally {
    sa.close();
  }
  const removable = objects.filter((o) => o.kind !== 'Namespace' && o.kind !== 'ServiceAccount');
  return {
    namespace: opts.namespace,
    serviceAccount: 'stowage',
    webhookConfigurationName,
    kubeconfigPath,
    objects,
    remove: () => deleteObjects(admin, removable),
  };
}
