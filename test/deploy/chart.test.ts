// Renders charts/stowage with helm itself (`helm template`, see scripts/helm/) and
// validates the output on the real apiserver with server-side dry run: CRDs first, for real, as
// `helm install` does. Also keeps the chart and deploy/ in step (CRDs, RBAC rules, pod spec).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CORE, createDynamicClient, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { helmTemplate, type TemplateOptions } from '../../scripts/helm/render.js';
import { renderAll as renderRbac } from '../../scripts/gen-rbac.js';
import { TRUST_MODES } from '../../src/config/index.js';
import { policyRule, ruleNames, rulesFor } from '../../src/rbac/rules.js';
import { serviceClientConfig, webhookConfiguration } from '../../src/webhook/index.js';
import { adminConfig, uniqueName } from '../support/kube.js';
import { applyObjects, deployRuleIds, ensureDeployCrds, loadDeployManifests, parseManifestText, REPO, type PolicyRule } from './manifests.js';

const CHART = path.join(REPO, 'charts/stowage');
const ALL_VALUES = path.join(CHART, 'ci/all-values.yaml');
const SERVICE_MONITOR_CRD = path.join(import.meta.dirname, 'fixtures/servicemonitors.monitoring.coreos.com.yaml');

interface Rendered {
  object: KubeObject;
  ruleIds: string[];
}

async function render(o: Partial<TemplateOptions> & { releaseName: string; namespace: string }): Promise<Rendered[]> {
  const text = await helmTemplate({ chartDir: CHART, ...o });
  return parseManifestText(text, `helm template ${o.releaseName}`);
}

function find(objs: readonly Rendered[], kind: string, name?: string): KubeObject {
  const o = objs.find((x) => x.object.kind === kind && (name === undefined || x.object.metadata?.name === name));
  if (o === undefined) throw new Error(`no ${kind}${name !== undefined ? ` ${name}` : ''} rendered (got ${objs.map((x) => `${x.object.kind}/${x.object.metadata?.name}`).join(', ')})`);
  return o.object;
}

type Json = unknown;

/** Paths of `sent` the apiserver did not keep (pruned or dropped as unknown): none is the goal. */
function dropped(sent: Json, got: Json, at = ''): string[] {
  // The apiserver omits empty maps and lists (`properties: {}`); that loses nothing.
  if (got === undefined && typeof sent === 'object' && sent !== null && Object.keys(sent).length === 0) return [];
  if (sent === null || typeof sent !== 'object') return JSON.stringify(sent) === JSON.stringify(got) ? [] : [`${at} (sent ${JSON.stringify(sent)}, kept ${JSON.stringify(got)})`];
  if (got === null || typeof got !== 'object') return [at];
  if (Array.isArray(sent)) {
    if (!Array.isArray(got)) return [at];
    return sent.flatMap((s, i) => dropped(s, got[i], `${at}[${i}]`));
  }
  return Object.entries(sent as Record<string, Json>).flatMap(([k, v]) => dropped(v, (got as Record<string, Json>)[k], `${at}.${k}`));
}

interface PodSpec {
  securityContext?: Json;
  volumes?: { name: string; emptyDir?: Json }[];
  affinity?: { podAntiAffinity?: Json };
  initContainers?: Json[];
  containers: {
    name: string;
    image?: string;
    args?: string[];
    env?: { name: string; value?: string; valueFrom?: Json }[];
    ports?: Json;
    livenessProbe?: Json;
    readinessProbe?: Json;
    resources?: Json;
    securityContext?: Json;
    volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  }[];
}

function podSpec(deployment: KubeObject): PodSpec {
  return (deployment as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
}

let client: DynamicClient;
const namespaces: string[] = [];

async function dryRunInstall(objs: readonly Rendered[], namespace: string): Promise<void> {
  const sent = objs.map((r) => r.object);
  const got = await applyObjects(client, sent, { dryRun: true, namespace, fieldManager: 'helm' });
  sent.forEach((s, i) => {
    const lost = dropped(s, got[i]);
    expect(lost, `${s.kind} ${s.metadata?.name}: fields the apiserver did not keep`).toEqual([]);
  });
}

beforeAll(async () => {
  client = createDynamicClient(adminConfig(), { qps: 0 });
  // `helm install` creates crds/ first (the chart's copy of deploy/crds, checked below).
  await ensureDeployCrds(client);
});

afterAll(async () => {
  for (const ns of namespaces) await client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
  client.close();
});

async function releaseNamespace(): Promise<string> {
  const ns = uniqueName('stowage-chart');
  await client.create(CORE.namespaces, undefined, { metadata: { name: ns } });
  namespaces.push(ns);
  return ns;
}

describe('charts/stowage', () => {
  it('carries exactly the CRDs of deploy/crds', () => {
    const deployCrds = fs.readdirSync(path.join(REPO, 'deploy/crds')).sort();
    const chartCrds = fs.readdirSync(path.join(CHART, 'crds')).sort();
    expect(chartCrds, 'run: bash scripts/helm/sync-crds.sh').toEqual(deployCrds);
    for (const f of deployCrds) {
      expect(fs.readFileSync(path.join(CHART, 'crds', f), 'utf8'), `charts/stowage/crds/${f} differs; run: bash scripts/helm/sync-crds.sh`).toBe(
        fs.readFileSync(path.join(REPO, 'deploy/crds', f), 'utf8'),
      );
    }
  });

  it('versions match package.json, and deploy/ runs the same image tag', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
    const chart = fs.readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8');
    expect(chart).toContain(`appVersion: "${pkg.version}"`);
    const dep = loadDeployManifests().find((m) => m.object.kind === 'Deployment');
    expect(podSpec(dep?.object ?? {}).containers[0]?.image).toBe(`stowage:${pkg.version}`);
  });

  it('renders the default values and passes server-side dry run', async () => {
    const ns = await releaseNamespace();
    const release = uniqueName('stw');
    const objs = await render({ releaseName: release, namespace: ns });
    // Hooks (the upgradeCRDs Job and its RBAC) come last, as in `helm template`.
    expect(objs.map((o) => o.object.kind)).toEqual([
      'NetworkPolicy', 'PodDisruptionBudget', 'ServiceAccount', 'Secret', 'Secret', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Service', 'Service', 'Deployment', 'MutatingWebhookConfiguration',
      'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Job',
    ]);
    await dryRunInstall(objs, ns);
    // The install's signing key: a random HMAC key, kept on uninstall.
    const signing = find(objs, 'Secret', `${release}-stowage-signing`) as KubeObject & { data: Record<string, string> };
    expect(Buffer.from(signing.data.hmac ?? '', 'base64').toString()).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(signing.metadata?.annotations?.['helm.sh/resource-policy']).toBe('keep');
    const again = find(await render({ releaseName: release, namespace: ns }), 'Secret', `${release}-stowage-signing`) as KubeObject & { data: Record<string, string> };
    expect(again.data.hmac, 'a fresh render (no cluster to look up) makes a fresh key').not.toBe(signing.data.hmac);
    const notes = await helmTemplate({ chartDir: CHART, releaseName: release, namespace: ns, notes: true, kubeconfig: inject('cluster').kubeconfigPath });
    expect(notes).toContain('No BackupStorageLocation was configured');
    expect(notes).toContain(`Trust mode requester: every Backup, Restore and request acts with the rights of whoever created it,\nrecorded by the admission webhook ${release}-stowage.`);
    const adminNotes = await helmTemplate({ chartDir: CHART, releaseName: release, namespace: ns, notes: true, kubeconfig: inject('cluster').kubeconfigPath, set: ['trustMode=cluster-admin'] });
    expect(adminNotes).toContain('Trust mode cluster-admin: runs use the server\'s own rights');
  });

  it('renders every option (ci/all-values.yaml) and passes server-side dry run', async () => {
    const ns = await releaseNamespace();
    await applyObjects(client, parseManifestText(fs.readFileSync(SERVICE_MONITOR_CRD, 'utf8'), 'servicemonitor CRD').map((d) => d.object));
    const release = uniqueName('stw');
    const objs = await render({ releaseName: release, namespace: ns, valuesFiles: [ALL_VALUES], apiVersions: ['monitoring.coreos.com/v1'] });
    const kinds = objs.map((o) => o.object.kind);
    for (const k of ['Secret', 'Job', 'BackupStorageLocation', 'Schedule', 'ServiceMonitor', 'Service', 'Deployment', 'PodDisruptionBudget']) {
      expect(kinds, k).toContain(k);
    }
    // A disabled schedule renders nothing.
    expect(objs.filter((o) => o.object.kind === 'Schedule').map((o) => o.object.metadata?.name)).toEqual([`${release}-backup-daily`]);
    await dryRunInstall(objs, ns);

    // upgradeCRDs: a pre-upgrade hook Job (run by the dockerfile test against the simulated image)
    // with a ServiceAccount that may only touch Stowage's CRDs.
    const hooks = objs.filter((o) => o.object.metadata?.annotations?.['helm.sh/hook'] !== undefined);
    expect(hooks.map((o) => o.object.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Job', 'ServiceAccount']);
    for (const h of hooks) expect(h.object.metadata?.annotations?.['helm.sh/hook']).toBe('pre-upgrade');
    const hookRole = hooks.find((o) => o.object.kind === 'ClusterRole')?.object as KubeObject & { rules: PolicyRule[] };
    expect(hookRole.rules[0]?.resourceNames?.slice().sort()).toEqual(
      fs.readdirSync(path.join(REPO, 'deploy/crds')).map((f) => f.replace(/\.yaml$/, '')).sort(),
    );
    expect(objs.some((o) => o.object.kind === 'CustomResourceDefinition')).toBe(false);

    // The chart's Secret holds the credentials, and a location without its own credential uses it.
    const secret = find(objs, 'Secret', 'stowage-cloud-credentials') as KubeObject & { data: Record<string, string> };
    expect(Buffer.from(secret.data.cloud ?? '', 'base64').toString()).toContain('aws_access_key_id = AKIAEXAMPLE');
    const bsl = find(objs, 'BackupStorageLocation', 'default') as KubeObject & { spec: { credential: Json; config: Json } };
    expect(bsl.spec.credential).toEqual({ name: secret.metadata?.name, key: 'cloud' });
    expect(bsl.spec.config).toEqual({ region: 'eu-west-1', s3Url: 'https://minio.example.com:9000', s3ForcePathStyle: 'true' });
    expect(bsl.spec).not.toHaveProperty('encryption');
    // A location without its own signing signs with the install's key (tamper-evident by default).
    const signingSecret = find(objs, 'Secret', `${release}-backup-signing`) as KubeObject & { data: Record<string, string> };
    expect((bsl.spec as { signing?: Json }).signing).toEqual({ keySecretRef: { name: signingSecret.metadata?.name, key: 'hmac' } });
    const archive = find(objs, 'BackupStorageLocation', 'archive') as KubeObject & { spec: { encryption: Json; signing: Json } };
    expect(archive.spec.encryption).toEqual({ keySecretRef: { name: 'archive-kek', key: 'k2' }, required: true });
    expect(archive.spec.signing).toEqual({ keySecretRef: { name: 'archive-signing', key: 'public' } });
    const unsigned = find(objs, 'BackupStorageLocation', 'scratch') as KubeObject & { spec: { signing: Json } };
    expect(unsigned.spec.signing).toEqual({ disabled: true });

    // Every configuration value becomes its server flag.
    const spec = podSpec(find(objs, 'Deployment'));
    const args = spec.containers[0]?.args ?? [];
    expect(args[0]).toBe('server');
    for (const a of ['--log-level=debug', '--log-format=json', '--client-qps=50.5', '--client-burst=100', '--client-page-size=0', '--default-backup-ttl=240h0m0s', '--restore-resource-priorities=customresourcedefinitions,namespaces,secrets,configmaps,-,clusters.cluster.x-k8s.io', '--metrics-address=:8085', '--download-address=:8086', '--download-url=https://stowage-downloads.example.com', '--heap-growth-percent=50', '--backup-heap-growth-percent=80', '--max-item-bytes=16777216', '--object-store-outage-timeout=5m', '--client-page-bytes=8388608', '--api-outage-timeout=2m', '--concurrent-backups=2', '--concurrent-restores=3']) {
      expect(args).toContain(a);
    }
    // nodeOptions becomes the server's NODE_OPTIONS and mallocMmapThreshold its MALLOC_MMAP_THRESHOLD_, next to the extra variables.
    const env = new Map((spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env.get('NODE_OPTIONS')).toBe('--max-old-space-size=1536 --max-semi-space-size=16');
    expect(env.get('MALLOC_MMAP_THRESHOLD_')).toBe('262144');
    expect(env.get('AWS_REGION')).toBe('us-east-1');
    expect(spec.initContainers?.length).toBe(1);
    expect(JSON.stringify(spec.initContainers)).toContain('stowage-plugin-example:0.1.0');

    const notes = await helmTemplate({ chartDir: CHART, releaseName: release, namespace: ns, valuesFiles: [ALL_VALUES], notes: true, kubeconfig: inject('cluster').kubeconfigPath });
    expect(notes).toContain('2 replicas run');
    expect(notes).not.toContain('upgradeCRDs is off');
  });

  it('renders 2 replicas by default, preferring different nodes, with a PodDisruptionBudget and leader election on the release Lease', async () => {
    const objs = await render({ releaseName: 'stowage', namespace: 'backup-system' });
    const dep = find(objs, 'Deployment') as KubeObject & { spec: { replicas: number; selector: { matchLabels: Record<string, string> } } };
    expect(dep.spec.replicas).toBe(2);
    const spec = podSpec(dep);
    // Preferred, not required: a one-node cluster still schedules both.
    expect(spec.affinity?.podAntiAffinity).toEqual({
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: dep.spec.selector.matchLabels } } }],
    });
    const pdb = find(objs, 'PodDisruptionBudget') as KubeObject & { spec: Json };
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.metadata?.namespace).toBe('backup-system');
    expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: dep.spec.selector.matchLabels } });
    // The server always elects a leader, on a Lease in the namespace it is told about.
    const env = spec.containers[0]?.env ?? [];
    expect(env.find((e) => e.name === 'STOWAGE_NAMESPACE')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
    const role = find(objs, 'Role');
    expect(role.metadata?.namespace).toBe('backup-system');
    expect((role.rules as PolicyRule[])[0]).toEqual({ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] });
    const binding = find(objs, 'RoleBinding') as KubeObject & { subjects: Json; roleRef: { name: string } };
    expect(binding.roleRef.name).toBe(role.metadata?.name);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'stowage', namespace: 'backup-system' }]);

    const one = await render({ releaseName: 'stowage', namespace: 'backup-system', set: ['replicaCount=1'] });
    expect(podSpec(find(one, 'Deployment')).affinity).toBeUndefined();
    expect(one.some((o) => o.object.kind === 'PodDisruptionBudget')).toBe(false);
  });

  it('renders the RBAC rules of deploy/ for each trust mode, rule for rule, as src/rbac/rules.ts gives them', async () => {
    for (const mode of TRUST_MODES) {
      const objs = await render({ releaseName: 'stowage', namespace: 'stowage', set: [`trustMode=${mode}`] });
      const fromDeploy = deployRuleIds(mode);
      const release = objs.filter((o) => o.object.metadata?.annotations?.['helm.sh/hook'] === undefined);
      const fromChart = release.flatMap((o) => o.ruleIds.map((id, i) => ({ id, kind: String(o.object.kind), rule: (o.object.rules as PolicyRule[])[i] })));
      expect(fromChart, mode).toEqual(fromDeploy.map(({ id, kind, rule }) => ({ id, kind, rule })));
      // Both come from the one source: same ids in the same order, same rules, in the role of their scope.
      const names = ruleNames('stowage');
      expect(fromDeploy.map(({ id, kind, rule }) => ({ id, kind, rule })), mode).toEqual(
        rulesFor(mode).map((r) => ({ id: r.id, kind: r.scope === 'cluster' ? 'ClusterRole' : 'Role', rule: policyRule(r, names) })),
      );
    }
    // A release with another name restricts the rules to its own webhook configuration and Secret.
    const other = await render({ releaseName: 'backups', namespace: 'ops' });
    const webhook = find(other, 'MutatingWebhookConfiguration');
    const byId = new Map(other.flatMap((o) => o.ruleIds.map((id, i) => [id, (o.object.rules as PolicyRule[])[i]] as const)));
    expect(byId.get('webhook-configuration')?.resourceNames).toEqual([webhook.metadata?.name]);
    expect(byId.get('webhook-tls-secret')?.resourceNames).toEqual([`${webhook.metadata?.name}-webhook-tls`]);
    const env = new Map((podSpec(find(other, 'Deployment')).containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env.get('STOWAGE_WEBHOOK_CONFIGURATION_NAME')).toBe(webhook.metadata?.name);
  });

  it('deploy/ and the chart hold what scripts/gen-rbac.ts generates (npm run rbac)', () => {
    for (const [file, text] of renderRbac()) expect(fs.readFileSync(file, 'utf8'), `${path.relative(REPO, file)}; run: npm run rbac`).toBe(text);
  });

  it('requester mode: webhook configuration, its Service and port; NetworkPolicy ports; /plugins read-only', async () => {
    const objs = await render({ releaseName: 'stowage', namespace: 'stowage' });
    const webhook = find(objs, 'MutatingWebhookConfiguration') as KubeObject & { webhooks: Json[] };
    // The same shape as deploy/50-webhook.yaml (labels differ: Helm's).
    const plainWebhook = loadDeployManifests({ webhookConfiguration: true }).find((m) => m.object.kind === 'MutatingWebhookConfiguration')?.object as KubeObject & { webhooks: Json[] };
    expect(webhook.webhooks).toEqual(plainWebhook.webhooks);
    expect(webhook.metadata?.name).toBe(plainWebhook.metadata?.name);
    // ... which is the shape the server's own builder makes (the test harness and the demo use it).
    expect(plainWebhook.webhooks).toEqual(webhookConfiguration({ name: 'stowage', namespace: 'stowage', clientConfig: serviceClientConfig('stowage') }).webhooks);
    const service = find(objs, 'Service', 'stowage-webhook') as KubeObject & { spec: { ports: { port: number; targetPort: string }[]; selector: Record<string, string> } };
    expect(service.spec.ports).toEqual([{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }]);
    const dep = find(objs, 'Deployment') as KubeObject & { spec: { template: { metadata: { labels: Record<string, string> } } } };
    expect(dep.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    const c = podSpec(dep).containers[0];
    expect(c?.ports).toContainEqual({ name: 'webhook', containerPort: 9443, protocol: 'TCP' });
    expect(c?.ports).toContainEqual({ name: 'download', containerPort: 8086, protocol: 'TCP' });
    expect(c?.volumeMounts?.find((m) => m.mountPath === '/plugins')).toEqual({ name: 'plugins', mountPath: '/plugins', readOnly: true });
    expect(new Map((c?.env ?? []).map((e) => [e.name, e.value])).get('STOWAGE_TRUST_MODE')).toBe('requester');
    const policy = find(objs, 'NetworkPolicy') as KubeObject & { spec: { podSelector: { matchLabels: Json }; ingress: Json[] } };
    expect(dep.spec.template.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels as Record<string, string>);
    // Each port from any source by default; the same policy as deploy/60-networkpolicy.yaml.
    const plainPolicy = loadDeployManifests().find((m) => m.object.kind === 'NetworkPolicy')?.object as KubeObject & { spec: { ingress: Json[] } };
    expect(policy.spec.ingress).toEqual(plainPolicy.spec.ingress);
    expect(policy.spec.ingress).toEqual(['webhook', 'download', 'metrics'].map((port) => ({ ports: [{ port, protocol: 'TCP' }] })));

    // ci/all-values.yaml narrows download and metrics to the peers it names.
    const all = find(await render({ releaseName: 'stowage', namespace: 'stowage', valuesFiles: [ALL_VALUES], apiVersions: ['monitoring.coreos.com/v1'] }), 'NetworkPolicy') as KubeObject & { spec: { ingress: { ports: Json; from?: Json[] }[] } };
    expect(all.spec.ingress.map((r) => r.from?.length ?? 0)).toEqual([0, 1, 1]);
    // Another download port moves the container port and the policy with it.
    const moved = await render({ releaseName: 'stowage', namespace: 'stowage', set: ['configuration.downloadAddress=0.0.0.0:9000', 'networkPolicy.enabled=false'] });
    expect(podSpec(find(moved, 'Deployment')).containers[0]?.ports).toContainEqual({ name: 'download', containerPort: 9000, protocol: 'TCP' });
    expect(moved.some((o) => o.object.kind === 'NetworkPolicy')).toBe(false);
  });

  it('requester mode: the webhook TLS Secret is the install\'s, empty, named for the configuration (the server creates no Secret)', async () => {
    const objs = await render({ releaseName: 'backups', namespace: 'ops' });
    const webhook = find(objs, 'MutatingWebhookConfiguration');
    const tlsSecret = find(objs, 'Secret', `${webhook.metadata?.name}-webhook-tls`) as KubeObject & { type: string; data?: unknown };
    expect(tlsSecret.metadata?.namespace).toBe('ops');
    expect(tlsSecret.type).toBe('Opaque');
    // No data: an upgrade leaves the key pair the server stored alone.
    expect(tlsSecret.data).toBeUndefined();
    // The same object as deploy/25-webhook-tls.yaml.
    const plain = loadDeployManifests().find((m) => m.object.kind === 'Secret')?.object as KubeObject & { type: string; data?: unknown };
    expect(plain.metadata?.name).toBe('stowage-webhook-tls');
    expect({ type: plain.type, data: plain.data }).toEqual({ type: tlsSecret.type, data: tlsSecret.data });
    // No rendered rule creates Secrets.
    const creating = objs.flatMap((o) => ((o.object.rules as PolicyRule[] | undefined) ?? []))
      .filter((r) => (r.resources ?? []).some((x) => x === 'secrets' || x === '*') && r.verbs.some((v) => v === 'create' || v === '*'));
    expect(creating).toEqual([]);
  });

  it('cluster-admin mode: no webhook, the server serves none, and the cluster-admin rules', async () => {
    const ns = await releaseNamespace();
    const objs = await render({ releaseName: uniqueName('stw'), namespace: ns, set: ['trustMode=cluster-admin'] });
    const kinds = objs.map((o) => o.object.kind);
    expect(kinds).not.toContain('MutatingWebhookConfiguration');
    // No webhook TLS Secret; the only Secret is the install's signing key.
    expect(objs.filter((o) => o.object.kind === 'Secret').map((o) => o.object.metadata?.name)).toEqual([expect.stringMatching(/-stowage-signing$/)]);
    expect(objs.filter((o) => o.object.kind === 'Service').map((o) => o.object.metadata?.name)).toEqual([expect.stringMatching(/-metrics$/)]);
    const c = podSpec(find(objs, 'Deployment')).containers[0];
    expect(c?.args).toContain('--webhook-address=');
    expect(JSON.stringify(c?.ports)).not.toContain('webhook');
    expect(new Map((c?.env ?? []).map((e) => [e.name, e.value])).get('STOWAGE_TRUST_MODE')).toBe('cluster-admin');
    const policy = find(objs, 'NetworkPolicy') as KubeObject & { spec: { ingress: Json[] } };
    expect(policy.spec.ingress).toEqual(['download', 'metrics'].map((port) => ({ ports: [{ port, protocol: 'TCP' }] })));
    expect(objs.flatMap((o) => o.ruleIds)).toEqual(expect.arrayContaining(['restore-write', 'restore-rbac']));
    await dryRunInstall(objs, ns);
  });

  it('refuses an unknown trust mode', async () => {
    await expect(render({ releaseName: 'stowage', namespace: 'stowage', set: ['trustMode=admin'] })).rejects.toThrow(/trustMode must be requester or cluster-admin, not "admin"/);
  });

  it('renders the pod of deploy/30-deployment.yaml with default values', async () => {
    const chart = podSpec(find(await render({ releaseName: 'stowage', namespace: 'stowage' }), 'Deployment'));
    const plain = podSpec(loadDeployManifests().find((m) => m.object.kind === 'Deployment')?.object ?? {});
    expect(chart.securityContext).toEqual(plain.securityContext);
    expect(chart.volumes).toEqual(plain.volumes);
    const [c, p] = [chart.containers[0], plain.containers[0]];
    for (const field of ['args', 'env', 'ports', 'livenessProbe', 'readinessProbe', 'resources', 'securityContext', 'volumeMounts'] as const) {
      expect(c?.[field], field).toEqual(p?.[field]);
    }
  });

  it('refuses volumeSnapshotLocation entries with the reason, creating no object nothing reads', async () => {
    await expect(render({ releaseName: 'stowage', namespace: 'stowage', set: ['configuration.volumeSnapshotLocation[0].provider=example.com/snapshots'] })).rejects.toThrow(
      /execution error at \(stowage\/templates\/volumesnapshotlocation.yaml:\d+:\d+\): configuration.volumeSnapshotLocation is not supported: Stowage takes volume snapshots through CSI only \(a VolumeSnapshotClass\), so a VolumeSnapshotLocation would be used by nothing \(the server marks any it finds Unavailable\); leave configuration.volumeSnapshotLocation empty/,
    );
    const all = await render({ releaseName: 'stowage', namespace: 'stowage', valuesFiles: [ALL_VALUES], apiVersions: ['monitoring.coreos.com/v1'] });
    expect(all.some((o) => o.object.kind === 'VolumeSnapshotLocation')).toBe(false);
  });

  it('refuses a location with no signing when the chart makes no key, and renders the explicit opt-out', async () => {
    const location = ['configuration.backupStorageLocation[0].name=vault', 'configuration.backupStorageLocation[0].provider=stowage.dev/aws', 'configuration.backupStorageLocation[0].bucket=b'];
    await expect(render({ releaseName: 'stowage', namespace: 'stowage', set: ['signingKey.create=false', ...location] })).rejects.toThrow(
      /execution error at \(stowage\/templates\/backupstoragelocation.yaml:\d+:\d+\): configuration.backupStorageLocation\[vault\] has no signing, and signingKey.create is false: give it signing.keySecretRef \{name, key\} \(a Secret entry holding its signing key\), or signing: \{disabled: true\} to opt out/,
    );
    const objs = await render({ releaseName: 'stowage', namespace: 'stowage', set: ['signingKey.create=false', ...location, 'configuration.backupStorageLocation[0].signing.disabled=true'] });
    expect((find(objs, 'BackupStorageLocation', 'vault') as KubeObject & { spec: { signing: Json } }).spec.signing).toEqual({ disabled: true });
    expect(objs.some((o) => o.object.kind === 'Secret' && (o.object.metadata?.name ?? '').endsWith('-signing'))).toBe(false);
  });

  it('fails with a clear message when a location lacks its bucket', async () => {
    await expect(
      render({ releaseName: 'stowage', namespace: 'stowage', set: ['configuration.backupStorageLocation[0].provider=stowage.dev/aws'] }),
    ).rejects.toThrow(/execution error at \(stowage\/templates\/backupstoragelocation.yaml:\d+:\d+\): configuration.backupStorageLocation\[\].bucket is required/);
  });
});

describe('deploy/30-deployment.yaml', () => {
  it('runs 2 replicas preferring different nodes, with a policy/v1 PodDisruptionBudget over them', () => {
    const manifests = loadDeployManifests();
    const dep = manifests.find((m) => m.object.kind === 'Deployment')?.object as KubeObject & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> } } } };
    expect(dep.spec.replicas).toBe(2);
    expect(podSpec(dep).affinity?.podAntiAffinity).toEqual({
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: dep.spec.selector.matchLabels } } }],
    });
    const pdb = manifests.find((m) => m.object.kind === 'PodDisruptionBudget');
    expect(pdb?.file).toBe('deploy/35-poddisruptionbudget.yaml');
    expect(pdb?.object.apiVersion).toBe('policy/v1');
    expect((pdb?.object as KubeObject & { spec: Json }).spec).toEqual({ minAvailable: 1, selector: { matchLabels: dep.spec.selector.matchLabels } });
    expect(dep.spec.template.metadata.labels).toMatchObject(dep.spec.selector.matchLabels);
  });

  it('mounts a writable emptyDir at every path the server, plugins and the runtime write', () => {
    const spec = podSpec(loadDeployManifests().find((m) => m.object.kind === 'Deployment')?.object ?? {});
    const c = spec.containers[0];
    expect((c?.securityContext as { readOnlyRootFilesystem?: boolean }).readOnlyRootFilesystem).toBe(true);
    const mounts = new Map((c?.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    const emptyDirs = new Set((spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name));
    const env = new Map((c?.env ?? []).map((e) => [e.name, e.value]));
    // /tmp: plugin processes start with a minimal environment (no TMPDIR) and put sockets there.
    const writable = ['HOME', 'TMPDIR', 'STOWAGE_SCRATCH_DIR', 'STOWAGE_LOG_SPOOL_DIR'].map((k) => env.get(k) ?? `(${k} unset)`).concat('/tmp');
    for (const p of writable) expect(emptyDirs.has(mounts.get(p) ?? ''), `${p} is an emptyDir mount`).toBe(true);
    expect(env.get('STOWAGE_PLUGIN_DIR')).toBe('/plugins');
    expect(emptyDirs.has(mounts.get('/plugins') ?? '')).toBe(true);
    // Only init containers write plugins; the server cannot replace one.
    expect(c?.volumeMounts?.find((m) => m.mountPath === '/plugins')).toEqual({ name: 'plugins', mountPath: '/plugins', readOnly: true });
    // The image sets the same paths (Dockerfile ENV), so `docker run` and the manifests agree.
    const dockerfile = fs.readFileSync(path.join(REPO, 'Dockerfile'), 'utf8');
    for (const k of ['STOWAGE_SCRATCH_DIR', 'STOWAGE_LOG_SPOOL_DIR', 'STOWAGE_PLUGIN_DIR', 'HOME', 'TMPDIR', 'NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_']) {
      expect(dockerfile).toMatch(new RegExp(`\\b${k}=${env.get(k) ?? '(unset)'}\\b`));
    }
  });

  it('the example BackupStorageLocation is signed, and valid on the real apiserver', async () => {
    const file = path.join(REPO, 'deploy/examples/backupstoragelocation.yaml');
    const text = fs.readFileSync(file, 'utf8');
    const objs = parseManifestText(text, file);
    // Signed by default, with the documented one-line step making its key.
    expect((objs[0]?.object as { spec?: { signing?: Json } }).spec?.signing).toEqual({ keySecretRef: { name: 'stowage-signing', key: 'hmac' } });
    expect(text).toContain('#   kubectl -n stowage create secret generic stowage-signing --from-literal=hmac="$(openssl rand -base64 48)"\n');
    const ns = await releaseNamespace();
    await dryRunInstall(
      objs.map((o) => ({ ...o, object: { ...o.object, metadata: { ...o.object.metadata, namespace: ns } } })),
      ns,
    );
  });
});
