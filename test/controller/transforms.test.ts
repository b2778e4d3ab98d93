// Restore transforms end to end through `stowage server`: resource modifier rules in Velero's
// format (spec.resourceModifier, a ConfigMap of the server's namespace) and the built-in mappings
// (labelled ConfigMaps: storage class, images), on a real API server. A rule that fails on one item
// fails that item only; a bad rule fails validation; a dry run shows the patched objects.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { ensureBuilt, runCli, show } from '../cli/helpers.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';

const DEPLOY = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
const STS = { group: 'apps', version: 'v1', resource: 'statefulsets', namespaced: true };
const CRON = { group: 'batch', version: 'v1', resource: 'cronjobs', namespaced: true };
const PVC = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true };

type Obj = KubeObject & { spec?: Record<string, unknown> };

const podSpec = (image: string) => ({
  initContainers: [{ name: 'init', image: `registry.old/team/init:${image}` }],
  containers: [{ name: 'web', image: `registry.old/team/web:${image}` }],
});

const RULES = `version: v1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
    resourceNameRegex: "^web$"
    namespaces:
    - APP
  patches:
  - operation: replace
    path: "/spec/replicas"
    value: "3"
- conditions:
    groupResource: deployments.apps
    labelSelector:
      matchLabels:
        app: web
  strategicPatches:
  - patchData: |
      spec:
        template:
          spec:
            containers:
            - name: web
              image: example.com/web:2
- conditions:
    groupResource: configmaps
    resourceNameRegex: "^settings$"
  patches:
  - operation: replace
    path: "/data/missing"
    value: "x"
`;

describe('restore transforms', () => {
  const ns = uniqueName('stowage-tf');
  const app = uniqueName('tf-app');
  const loc = filesystemLocation();
  let client: DynamicClient;
  let server: RunningServer;
  let kubeconfig: string;

  beforeAll(async () => {
    kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureNamespace(client, app);
    await client.create(CORE.configMaps, app, { metadata: { name: 'settings' }, data: { color: 'blue' } });
    await client.create(DEPLOY, app, {
      metadata: { name: 'web', labels: { app: 'web' } },
      spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: podSpec('1') } },
    });
    await client.create(CRON, app, {
      metadata: { name: 'nightly' },
      spec: { schedule: '0 1 * * *', jobTemplate: { spec: { template: { spec: { ...podSpec('1'), restartPolicy: 'Never' } } } } },
    });
    await client.create(PVC, app, { metadata: { name: 'data' }, spec: { storageClassName: 'standard', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } });
    await client.create(STS, app, {
      metadata: { name: 'db' },
      spec: {
        serviceName: 'db', replicas: 1, selector: { matchLabels: { app: 'db' } },
        template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'docker.io/library/postgres:16' }] } },
        volumeClaimTemplates: [{ metadata: { name: 'pgdata' }, spec: { storageClassName: 'standard', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      },
    });
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc });
    // The mappings, configured the Velero way: labelled ConfigMaps in the server's namespace.
    await client.create(CORE.configMaps, ns, {
      metadata: { name: 'storage-classes', labels: { 'stowage.dev/plugin-config': '', 'stowage.dev/change-storage-class': 'RestoreItemAction' } },
      data: { standard: 'fast' },
    });
    await client.create(CORE.configMaps, ns, {
      metadata: { name: 'images', labels: { 'stowage.dev/plugin-config': '', 'stowage.dev/change-image-name': 'RestoreItemAction' } },
      data: { team: 'registry.old/team,registry.new/mirror', hub: 'docker.io/library,hub.mirror.local/library' },
    });
    await client.create(CORE.configMaps, ns, { metadata: { name: 'mods' }, data: { 'rules.yaml': RULES.replace('APP', app) } });
    await client.create(RESOURCES.Backup, ns, newBackup('src', ns, { includedNamespaces: [app] }));
    const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'src');
    expect(b.status?.phase, b.status?.failureReason).toBe('Completed');
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
  });

  async function restore(name: string, spec: Omit<RestoreSpec, 'backupName'>): Promise<Restore> {
    await client.create(RESOURCES.Restore, ns, newRestore(name, ns, { backupName: 'src', ...spec }));
    return waitFinished<Restore>(client, RESOURCES.Restore, ns, name);
  }

  function results(name: string): { outcomes: { groupResource: string; name: string; action: string; reason: string; transforms?: string[]; patched?: Obj }[] } {
    const file = path.join(loc.root, 'backups', 'restores', name, `restore-${name}-results.gz`);
    return JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString()) as ReturnType<typeof results>;
  }

  it('applies the rules and the mappings to what it creates; a rule that fails on one item fails that item only', async () => {
    const target = `${app}-mod`;
    const r = await restore('modified', { namespaceMapping: { [app]: target }, resourceModifier: { kind: 'ConfigMap', name: 'mods' } });
    expect(r.status?.phase, r.status?.failureReason).toBe('PartiallyFailed');
    expect(r.status?.summary?.failed).toBe(1);

    // A modifier changed the replicas and a container image (the rule has the last word over the image mapping).
    const web = await client.get<Obj>(DEPLOY, target, 'web');
    expect(web.spec?.replicas).toBe(3);
    const webPod = (web.spec?.template as { spec: { containers: { image: string }[]; initContainers: { image: string }[] } }).spec;
    expect(webPod.containers[0]?.image).toBe('example.com/web:2');
    expect(webPod.initContainers[0]?.image).toBe('registry.new/mirror/init:1');
    // Images remapped in a CronJob, containers and init containers.
    const cron = await client.get<Obj>(CRON, target, 'nightly');
    const cronPod = (cron.spec?.jobTemplate as { spec: { template: { spec: { containers: { image: string }[]; initContainers: { image: string }[] } } } }).spec.template.spec;
    expect(cronPod.containers[0]?.image).toBe('registry.new/mirror/web:1');
    expect(cronPod.initContainers[0]?.image).toBe('registry.new/mirror/init:1');
    // Storage class mapped on a PVC and a StatefulSet's claim template.
    expect((await client.get<Obj>(PVC, target, 'data')).spec?.storageClassName).toBe('fast');
    const sts = await client.get<Obj>(STS, target, 'db');
    const tpl = (sts.spec?.volumeClaimTemplates as { spec: { storageClassName: string } }[])[0];
    expect(tpl?.spec.storageClassName).toBe('fast');
    expect((sts.spec?.template as { spec: { containers: { image: string }[] } }).spec.containers[0]?.image).toBe('hub.mirror.local/library/postgres:16');

    // The failing rule failed its item, named; the ConfigMap was not created.
    const out = results('modified').outcomes;
    const settings = out.find((o) => o.groupResource === 'configmaps' && o.name === 'settings');
    expect(settings?.action).toBe('failed');
    expect(settings?.reason).toMatch(/^resource modifier rule 2 \(ConfigMap [^/]+\/mods, groupResource configmaps, JSON patch\) failed: operation 0 \(replace \/data\/missing\): /);
    await expect(client.get(CORE.configMaps, target, 'settings')).rejects.toThrow();
    // What transformed each item is in its outcome.
    const deployOutcome = out.find((o) => o.groupResource === 'deployments.apps' && o.name === 'web');
    expect(deployOutcome?.transforms).toEqual([
      `init container init: image registry.old/team/init:1 -> registry.new/mirror/init:1 (ConfigMap ${ns}/images)`,
      `container web: image registry.old/team/web:1 -> registry.new/mirror/web:1 (ConfigMap ${ns}/images)`,
      `resource modifier rule 0 (ConfigMap ${ns}/mods, groupResource deployments.apps, JSON patch)`,
      `resource modifier rule 1 (ConfigMap ${ns}/mods, groupResource deployments.apps, strategic merge patch)`,
    ]);
    expect(out.find((o) => o.groupResource === 'persistentvolumeclaims')?.transforms).toEqual([`storage class standard -> fast (ConfigMap ${ns}/storage-classes)`]);
    expect(deployOutcome?.patched).toBeUndefined();
  });

  it('a dry run shows the patched objects in restore describe --details, and writes nothing', async () => {
    const target = `${app}-dry`;
    const c = await runCli(['restore', 'create', 'preview', '--from-backup', 'src', '--dry-run', '--namespace-mappings', `${app}:${target}`,
      '--resource-modifier-configmap', 'mods', '--wait'], { kubeconfig, namespace: ns });
    expect(c.code, show(c)).toBe(0);
    const d = await runCli(['restore', 'describe', 'preview', '--details'], { kubeconfig, namespace: ns });
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^Resource modifier:\s+ConfigMap mods$/m);
    const lines = d.stdout.split('\n');
    const at = lines.findIndex((l) => l.startsWith(`    deployments.apps ${target}/web: would be created`));
    expect(at, d.stdout).toBeGreaterThan(0);
    const block = lines.slice(at + 1, lines.findIndex((l, i) => i > at && /^ {4}\S/.test(l))).join('\n');
    expect(block).toContain(`      transformed by resource modifier rule 0 (ConfigMap ${ns}/mods, groupResource deployments.apps, JSON patch)`);
    expect(block).toContain('      as it would be written:');
    expect(block).toMatch(/^ {10}replicas: 3$/m);
    expect(block).toContain('image: example.com/web:2');
    expect(block).toContain('image: registry.new/mirror/init:1');
    expect(d.stdout).toMatch(new RegExp(`^ {4}configmaps ${target}/settings: resource modifier rule 2 .* failed: `, 'm'));
    await expect(client.get(CORE.namespaces, undefined, target)).rejects.toThrow();
  });

  it('refuses a bad rule at validation, naming the rule and the error', async () => {
    await client.create(CORE.configMaps, ns, {
      metadata: { name: 'bad-mods' },
      data: { 'rules.yaml': 'version: v1\nresourceModifierRules:\n- conditions:\n    groupResource: pods\n  patches:\n  - operation: frob\n    path: /spec\n' },
    });
    const r = await restore('bad', { resourceModifier: { kind: 'ConfigMap', name: 'bad-mods' } });
    expect(r.status?.phase).toBe('FailedValidation');
    expect(r.status?.validationErrors).toEqual([
      `spec.resourceModifier: ConfigMap ${ns}/bad-mods, data "rules.yaml": resourceModifierRules[0].patches[0].operation: unsupported operation "frob" (use add, remove, replace, move, copy, test)`,
    ]);
    const missing = await restore('missing', { resourceModifier: { kind: 'ConfigMap', name: 'nope' } });
    expect(missing.status?.phase).toBe('FailedValidation');
    expect(missing.status?.validationErrors).toEqual([`spec.resourceModifier: ConfigMap ${ns}/nope does not exist`]);
  });
});
