// Stowage the way its users run it: a real node (containerd, runc, CNI, kubelet, kube-proxy,
// kube-scheduler) joined to its own node-mode control plane, the image built from the shipped
// Dockerfile, and the chart installed with helm itself. Nothing comes from a registry. Provisioning
// failures fail here with the reason; nothing is skipped.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../scripts/cluster/controlPlane.js';
import type { S3Server } from '../../scripts/cluster/s3.js';
import { DEMO_BUCKET, inClusterStory, type Printer } from '../../scripts/demoInCluster.js';
import { helm } from '../../scripts/helm/helm.js';
import { BUSYBOX_IMAGE, kubectlPath, type RealNode } from '../../scripts/node/node.js';
import { EXAMPLE_PLUGIN, HOLD_PLUGIN, pluginImage } from '../../scripts/node/pluginImages.js';
import { startRealCluster, type RealCluster } from '../../scripts/node/realCluster.js';
import { podOfIdentity } from '../../src/runtime/leaderElection.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { kubectlOk, log, podReady, setInCluster, timed, timings } from './context.js';
import { backupHooksSuite } from './hooks.suite.js';
import { restoreHooksSuite } from './restoreHooks.suite.js';
import { csiStackSuite } from './csi.suite.js';
import { volumeSnapshotsSuite } from './volumes.suite.js';
import { freezeSuite } from './freeze.suite.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const CHART = path.join(REPO, 'charts', 'stowage');
const BUCKET = 'stowage-incluster';

let cluster: RealCluster | undefined;
let cp: ControlPlane;
let node: RealNode | undefined;
let s3: S3Server;
let helmBin: string;
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;
function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, { timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject).on('timeout', function (this: http.ClientRequest) { this.destroy(new Error(`GET ${url} timed out`)); });
  });
}

/** The server's Ready pods, as many as its Deployment asks for (the chart's replicaCount). */
async function serverPods(namespace: string): Promise<k8s.V1Pod[]> {
  const d = await kc.makeApiClient(k8s.AppsV1Api).readNamespacedDeployment({ namespace, name: 'stowage' });
  return podReady(namespace, 'app.kubernetes.io/name=stowage', d.spec?.replicas ?? 1);
}

beforeAll(async () => {
  // The same start as `npm run demo -- --in-cluster`: control plane, node, S3 on the machine's address, helm.
  cluster = await timed('cluster start (control plane, node, S3, helm, CSI stack; image and binaries built when missing)', () => startRealCluster({ buckets: [BUCKET, DEMO_BUCKET], log, csi: true }));
  ({ cp, node, s3, helmBin } = cluster);
  kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  core = kc.makeApiClient(k8s.CoreV1Api);
  setInCluster({ cluster, kc, core });
  // Third-party plugin images, made locally as a plugin vendor would ship them for initContainers.
  await timed('plugin images (bundle, pack, import)', async () => {
    for (const spec of [EXAMPLE_PLUGIN, HOLD_PLUGIN]) node?.importImage(await pluginImage(spec, log));
  });
}, 45 * 60_000);

afterAll(async () => {
  const c = cluster;
  cluster = undefined;
  setInCluster(undefined);
  const left = await c?.stop();
  if (left !== undefined && left.length > 0) log(`after stopping: ${left.join('; ')}`);
  log(`timings:\n  ${timings.join('\n  ')}`);
}, 180_000);

describe('a real node', () => {
  it('schedules and runs pods that log, exec and restart, and a Service routes to them', async () => {
    const ns = uniqueName('node');
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['apply', '-n', ns, '-f', '-'], `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: ${BUSYBOX_IMAGE}
        imagePullPolicy: Never
        command: [sh, -c, 'mkdir -p /www && hostname > /www/index.html && echo "serving as $(hostname)" && exec httpd -f -p 8080 -h /www']
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  # Not port 80: on this VM the machine's connections to a ClusterIP on port 80 were answered by the
  # sandbox's own HTTP proxy (404) in spite of kube-proxy's rule; on 8080 they reach the pods.
  ports: [{port: 8080, targetPort: 8080}]
`);
    const pods = await podReady(ns, 'app=web', 2);
    const names = pods.map((p) => p.metadata?.name ?? '').sort();
    expect(new Set(pods.map((p) => p.spec?.nodeName))).toEqual(new Set(['stowage-node']));

    const pod = names[0] ?? '';
    expect(kubectlOk(['logs', '-n', ns, pod])).toContain(`serving as ${pod}`);
    expect(kubectlOk(['exec', '-n', ns, pod, '--', 'cat', '/www/index.html']).trim()).toBe(pod);

    // Through the Service's ClusterIP from the machine: kube-proxy's rules pick a pod.
    const svc = await core.readNamespacedService({ namespace: ns, name: 'web' });
    const seen = new Set<string>();
    const ip = svc.spec?.clusterIP ?? '';
    await waitUntil('both pods answering through the Service', async () => {
      const r = await httpGet(`http://${ip}:8080/`);
      expect(r.status).toBe(200);
      seen.add(r.body.trim());
      return seen.size === 2 ? true : undefined;
    }, 120_000, 50).catch((err: Error) => {
      // Seen once under load: 404s for 120 s, i.e. the connection left the machine (the sandbox's
      // proxy answers) instead of meeting kube-proxy's DNAT. Say whether the rule was there.
      const rules = spawnSync('nft', ['list', 'ruleset'], { encoding: 'utf8' }).stdout.split('\n').filter((l) => l.includes(ip));
      let proxyLog: string;
      try {
        proxyLog = fs.readFileSync(path.join(node?.workDir ?? '', 'kube-proxy.log'), 'utf8').split('\n').slice(-15).join('\n');
      } catch (e) {
        proxyLog = `(unreadable: ${(e as Error).message})`;
      }
      throw new Error(`${err.message}\nnft rules naming ${ip}:\n${rules.join('\n') || '(none)'}\nkube-proxy.log (last lines):\n${proxyLog}`);
    });
    expect([...seen].sort()).toEqual(names);

    // The kubelet restarts a container whose process is killed from outside.
    const pid = Number(node?.ctr(['tasks', 'ls']).split('\n').map((l) => l.split(/\s+/))
      .find((cols) => cols[0] === containerIdOf(pods[0]))?.[1]);
    expect(pid).toBeGreaterThan(1);
    process.kill(pid, 'SIGKILL');
    const restarted = await waitUntil('the killed container restarted and Ready', async () => {
      const p = await core.readNamespacedPod({ namespace: ns, name: pod });
      const st = p.status?.containerStatuses?.[0];
      return st !== undefined && st.restartCount >= 1 && st.ready ? st : undefined;
    }, 120_000, 250);
    expect(restarted.lastState?.terminated?.exitCode).toBe(137);
    kubectlOk(['delete', 'namespace', ns, '--wait=false']);
  }, 600_000);
});

function containerIdOf(pod: k8s.V1Pod | undefined): string {
  const id = pod?.status?.containerStatuses?.[0]?.containerID ?? '';
  return id.replace(/^containerd:\/\//, '');
}

/** The release's namespace and the namespace it backs up, shared by the chart tests in order. */
let ns = '';
let app = '';
/** The namespace whose ConfigMap the hold plugin holds, shared by the two failover tests. */
let heldNs = '';
const custom = (): k8s.CustomObjectsApi => kc.makeApiClient(k8s.CustomObjectsApi);

interface RunObject { metadata: { annotations?: Record<string, string> }; status?: { phase?: string; failureReason?: string; validationErrors?: string[] } }

async function getRun(namespace: string, name: string, plural: 'backups' | 'restores' = 'backups'): Promise<RunObject | undefined> {
  try {
    return (await custom().getNamespacedCustomObject({ group: 'stowage.dev', version: 'v1', namespace, plural, name })) as RunObject;
  } catch {
    return undefined;
  }
}

async function backupEnds(namespace: string, name: string, plural: 'backups' | 'restores' = 'backups'): Promise<RunObject> {
  return waitUntil(`${plural === 'backups' ? 'Backup' : 'Restore'} ${name} finished`, async () => {
    const b = await getRun(namespace, name, plural);
    return ['Completed', 'Failed', 'PartiallyFailed', 'FailedValidation', 'Canceled'].includes(b?.status?.phase ?? '') ? b : undefined;
  }, 300_000, 500);
}

/** The chart's default location shape; it signs with the install's key (the chart's signing Secret, key hmac) unless given another. */
function applyLocation(namespace: string, prefix: string, signingSecret = 'stowage-signing'): void {
  kubectlOk(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: BackupStorageLocation
metadata: {name: default, namespace: ${namespace}}
spec:
  provider: stowage.dev/aws
  objectStorage: {bucket: ${BUCKET}, prefix: ${prefix}}
  config: {region: ${s3.region}, s3Url: "${s3.endpoint}", s3ForcePathStyle: "true"}
  credential: {name: stowage-credentials, key: cloud}
  signing: {keySecretRef: {name: ${signingSecret}, key: hmac}}
  backupSyncPeriod: 2s
  default: true
`);
}

function createCredentials(namespace: string): void {
  // As docs/install.md tells a user: an AWS credentials file in a Secret.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-creds-'));
  const creds = path.join(dir, 'credentials-stowage');
  fs.writeFileSync(creds, `[default]\naws_access_key_id = ${s3.accessKeyId}\naws_secret_access_key = ${s3.secretAccessKey}\n`, { mode: 0o600 });
  try {
    kubectlOk(['-n', namespace, 'create', 'secret', 'generic', 'stowage-credentials', `--from-file=cloud=${creds}`]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function serverLog(namespace: string): string[] {
  // Two replicas by default: `kubectl logs deploy/stowage` picks one pod, which may be the follower,
  // so operators (and NOTES.txt) read every replica's log.
  return kubectlOk(['-n', namespace, 'logs', '-l', 'app.kubernetes.io/name=stowage', '--prefix', '--tail=-1']).split('\n');
}

function runLines(namespace: string, run: string, kind: 'backup' | 'restore' = 'backup'): string[] {
  return serverLog(namespace).filter((l) => l.includes(`${kind}=${namespace}/${run}`));
}

/** `kubectl logs -f` of a pod: resolves its whole log once the pod's container has ended. */
function followLog(namespace: string, pod: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectlPath(), ['--kubeconfig', cp.kubeconfigPath, '-n', namespace, 'logs', '-f', pod], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill(), 120_000);
    child.once('error', reject);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

/** The pod holding the server's leader Lease (its identity is <pod>_<random>). */
async function leaderPod(namespace: string): Promise<string> {
  const lease = await kc.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ namespace, name: 'stowage-server' });
  return podOfIdentity(lease.spec?.holderIdentity ?? '');
}

/** The release's values for third-party plugins, as docs/install.md shows them: one init container per plugin image. */
function pluginValues(): string {
  const init = (name: string, image: string): string => `
  - name: ${name}
    image: ${image}
    imagePullPolicy: Never
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      runAsNonRoot: true
      capabilities: {drop: [ALL]}
    volumeMounts:
      - {mountPath: /target, name: plugins}`;
  // The server's shutdown grace is cut from 25 s to 10 s so the failover tests wait less: still far
  // above the 1 s pod grace of the test that has the kubelet kill the leader before its runs end.
  return `initContainers:${init('stowage-plugin-example', EXAMPLE_PLUGIN.image)}${init('stowage-plugin-hold', HOLD_PLUGIN.image)}
configuration:
  terminationGracePeriod: 10s
`;
}

function bucketKeys(prefix: string): string[] {
  const root = path.join(s3.directory, BUCKET);
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(root, p));
    }
  };
  if (fs.existsSync(path.join(root, prefix))) walk(path.join(root, prefix));
  return out;
}

/** `kubectl apply` of a Backup of namespace `of` in the release's namespace, as a user writes one. */
function applyBackup(name: string, of: string): void {
  kubectlOk(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: Backup
metadata: {name: ${name}, namespace: ${ns}}
spec:
  includedNamespaces: [${of}]
`);
}

/** Waits until backup `name` is InProgress with the hold plugin holding ConfigMap `held`/hold: mid-flight, for as long as the test likes. */
async function heldByPlugin(name: string, held: string): Promise<void> {
  await waitUntil(`backup ${name} held by the plugin`, async () => (
    (await getRun(ns, name))?.status?.phase === 'InProgress' && runLines(ns, name).some((l) => l.includes(`holding ConfigMap ${held}/hold`)) ? true : undefined
  ), 120_000, 500);
}

describe('the chart installed with helm', () => {
  it('installs with default values into a fresh namespace; a Backup applied with kubectl completes and kubectl logs shows its lines', async () => {
    ns = uniqueName('stowage');
    expect(node?.app?.sizeBytes).toBeGreaterThan(0);
    log(`app image ${node?.app?.image}: ${((node?.app?.sizeBytes ?? 0) / 1024 ** 2).toFixed(1)} MiB (uncompressed docker-archive)`);
    helm(helmBin, cp.kubeconfigPath, ['install', 'stowage', CHART, '--namespace', ns, '--create-namespace', '--wait', '--timeout', '10m']);
    const server = await serverPods(ns);
    // Two replicas are the default: one leads, the other stands by (the failover tests below).
    expect(server.length).toBe(2);
    expect(server[0]?.spec?.containers[0]?.image).toBe('stowage:0.1.0');

    createCredentials(ns);
    applyLocation(ns, ns);
    await waitUntil('the location Available', async () => {
      const bsl = (await custom().getNamespacedCustomObject({ group: 'stowage.dev', version: 'v1', namespace: ns, plural: 'backupstoragelocations', name: 'default' })) as { status?: { phase?: string } };
      return bsl.status?.phase === 'Available' ? true : undefined;
    }, 180_000, 500);

    // Something to back up.
    app = uniqueName('app');
    kubectlOk(['create', 'namespace', app]);
    kubectlOk(['-n', app, 'create', 'configmap', 'settings', '--from-literal=color=blue']);

    // Created through the API server, which calls the webhook through its Service.
    applyBackup('b1', app);
    const done = await backupEnds(ns, 'b1');
    expect(done.status?.phase, `${done.status?.failureReason ?? ''} ${(done.status?.validationErrors ?? []).join('; ')}`).toBe('Completed');
    // The webhook (reached through its Service) stamped who created it.
    expect(done.metadata.annotations?.['stowage.dev/requester']).toContain('admin');
    expect(bucketKeys(ns).some((k) => k.includes('b1'))).toBe(true);

    // How operators follow a run: the server Deployment's log, each line tagged with the run.
    const lines = await waitUntil('the run\'s lines in kubectl logs', async () => {
      const out = runLines(ns, 'b1');
      return out.length > 1 ? out : undefined;
    }, 60_000, 500);
    expect(lines.length).toBeGreaterThan(1);
  }, 1_200_000);

  it('helm upgrade to a new image tag rolls the pods and keeps every run\'s record', async () => {
    expect(ns).not.toBe('');
    // The same build under the next tag: the Deployment's pod template changes, so its pods roll.
    node?.ctr(['images', 'tag', '--force', 'local.invalid/stowage:0.1.0', 'docker.io/library/stowage:0.1.1']);
    const old = new Set((await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/name=stowage' })).items.map((p) => p.metadata?.name));
    helm(helmBin, cp.kubeconfigPath, ['upgrade', 'stowage', CHART, '--namespace', ns, '--reuse-values', '--set', 'image.tag=0.1.1', '--wait', '--timeout', '10m']);
    const rolled = await waitUntil('only pods of the new image', async () => {
      const pods = await serverPods(ns);
      const all = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/name=stowage' })).items;
      return all.length === pods.length && pods.every((p) => !old.has(p.metadata?.name) && p.spec?.containers[0]?.image === 'stowage:0.1.1') ? pods : undefined;
    }, 300_000, 500);
    expect(rolled.length).toBeGreaterThan(0);
    expect((await getRun(ns, 'b1'))?.status?.phase).toBe('Completed');
    applyBackup('b2', app);
    expect((await backupEnds(ns, 'b2')).status?.phase).toBe('Completed');
    await waitUntil('b2\'s lines in the new pod\'s log', async () => (runLines(ns, 'b2').length > 1 ? true : undefined), 60_000, 500);
  }, 900_000);

  it('plugins added as init containers (Velero\'s way) are discovered and used by backups and restores', async () => {
    expect(ns).not.toBe('');
    const values = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-values-')), 'plugins.yaml');
    fs.writeFileSync(values, pluginValues());
    const old = new Set((await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/name=stowage' })).items.map((p) => p.metadata?.name));
    helm(helmBin, cp.kubeconfigPath, ['upgrade', 'stowage', CHART, '--namespace', ns, '--reuse-values', '-f', values, '--wait', '--timeout', '10m']);
    fs.rmSync(path.dirname(values), { recursive: true, force: true });
    const pods = await waitUntil('only pods with the plugin init containers', async () => {
      const ready = await serverPods(ns);
      const all = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/name=stowage' })).items;
      return all.length === ready.length && ready.every((p) => !old.has(p.metadata?.name) && (p.spec?.initContainers ?? []).length === 2) ? ready : undefined;
    }, 300_000, 500);
    for (const p of pods) {
      // Each init container copied its plugin and exited 0; the server (read-only /plugins) found both.
      expect(p.status?.initContainerStatuses?.map((c) => [c.name, c.state?.terminated?.exitCode])).toEqual([['stowage-plugin-example', 0], ['stowage-plugin-hold', 0]]);
      const listed = kubectlOk(['-n', ns, 'exec', p.metadata?.name ?? '', '--', 'ls', '-ln', '/plugins']);
      expect(listed).toMatch(/-rwxr-xr-x +1 65532 +65532 .* stowage-plugin-example\.mjs/);
      const startup = kubectlOk(['-n', ns, 'logs', p.metadata?.name ?? '']);
      expect(startup).toMatch(/plugins registered.*BackupItemAction example\.com\/annotate-configmaps/);
      expect(startup).toMatch(/plugins registered.*RestoreItemAction example\.com\/mark-restored-configmaps/);
      expect(startup).toMatch(/plugins registered.*BackupItemAction test\.stowage\.dev\/hold/);
    }

    applyBackup('b3', app);
    const b3 = await backupEnds(ns, 'b3');
    expect(b3.status?.phase, b3.status?.failureReason).toBe('Completed');
    // The plugin's own log line, routed into the run's log and from there into the server pod's.
    const lines = await waitUntil('the plugin\'s line in b3\'s server log', async () => {
      const l = runLines(ns, 'b3').filter((x) => x.includes('annotating ConfigMap'));
      return l.length > 0 ? l : undefined;
    }, 60_000, 500);
    expect(lines[0]).toMatch(/^\[pod\/stowage-[^\]]+\] .*plugin=example\.com\/annotate-configmaps/);

    // Restored under another name: the backup action's annotations came through the tarball, the restore action added its own.
    const target = `${app}-r3`;
    kubectlOk(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: Restore
metadata: {name: r3, namespace: ${ns}}
spec:
  backupName: b3
  namespaceMapping: {${app}: ${target}}
`);
    const r3 = await backupEnds(ns, 'r3', 'restores');
    expect(r3.status?.phase, r3.status?.failureReason).toBe('Completed');
    const cm = await core.readNamespacedConfigMap({ namespace: target, name: 'settings' });
    expect(cm.data).toEqual({ color: 'blue' });
    expect(cm.metadata?.annotations).toMatchObject({ 'example.com/backed-up-by': 'b3', 'example.com/data-keys': '1', 'example.com/restored-by': 'r3' });
    kubectlOk(['delete', 'namespace', target, '--wait=false']);
  }, 900_000);

  it('deleting the leader pod mid-backup: another pod takes the released lease, and the run ends Failed with no stowage-backup.json, recorded once', async () => {
    expect(ns).not.toBe('');
    const held = uniqueName('held');
    kubectlOk(['create', 'namespace', held]);
    kubectlOk(['-n', held, 'create', 'configmap', 'hold', '--from-literal=x=1']);
    kubectlOk(['-n', held, 'label', 'configmap', 'hold', 'stowage-test/hold=true']);
    const [a, b] = (await serverPods(ns)).map((p) => p.metadata?.name ?? '');
    const leader = await leaderPod(ns);
    expect([a, b]).toContain(leader);
    const follower = leader === a ? b ?? '' : a ?? '';

    applyBackup('cut', held);
    // Mid-flight: the hold plugin has the ConfigMap, and will not give it back.
    await heldByPlugin('cut', held);

    const starting = new RegExp(`starting backup ${ns}/cut\\b`);
    expect(kubectlOk(['-n', ns, 'logs', leader])).toMatch(starting);

    // The old leader's log to its end, as `kubectl logs -f` shows it while the pod stops.
    const oldLog = followLog(ns, leader);
    const deleted = Date.now();
    kubectlOk(['-n', ns, 'delete', 'pod', leader, '--wait=false']);
    const holders: string[] = [];
    const next = await waitUntil('the lease taken by another pod', async () => {
      const h = await leaderPod(ns);
      if (holders.at(-1) !== h) holders.push(h);
      return h !== leader && h !== '' ? h : undefined;
    }, 120_000, 250);
    const takeover = (Date.now() - deleted) / 1000;
    const cut = await backupEnds(ns, 'cut');
    const oldLines = await oldLog;
    // Released, not expired: the old leader let go as it stopped, so nobody waited out the 15 s lease.
    // Which live pod wins it is a race: the surviving replica retries every 2 s, and the Deployment's
    // replacement pod (started at once, from a local image) campaigns as soon as it is up.
    log(`leader ${leader} deleted: lease holders ${holders.join(' -> ')}; ${next} (${next === follower ? 'the other replica' : 'the replacement pod'}) leads after ${takeover.toFixed(1)}s; backup cut ${cut.status?.phase} after ${((Date.now() - deleted) / 1000).toFixed(1)}s`);
    expect(oldLines).toContain('shutting down: waiting up to 10s for 1 running backup(s)/restore(s)');
    expect(oldLines).toMatch(/stopped leading/);
    expect(oldLines).not.toContain('could not release');
    expect(oldLines).toContain('stowage server stopped');

    // The commit-point rule: no stowage-backup.json was written, so the run is Failed, with the reason.
    expect(cut.status?.phase).toBe('Failed');
    expect(cut.status?.failureReason).toBe('the backup was stopped: the server shut down before the backup finished');
    const keys = bucketKeys(path.join(ns, 'backups', 'cut'));
    expect(keys.some((k) => k.includes('stowage-backup.json'))).toBe(false);
    expect(keys.some((k) => /log/.test(k)), keys.join(', ')).toBe(true);

    // The new leader neither ran it again nor settled it a second time.
    const live = (await serverPods(ns)).map((p) => p.metadata?.name);
    expect(live).toContain(next);
    expect(live).not.toContain(leader);
    const nextLog = kubectlOk(['-n', ns, 'logs', next]);
    expect(nextLog).toContain('became the leader');
    expect(nextLog).not.toMatch(starting);
    expect(nextLog).not.toMatch(new RegExp(`backup ${ns}/cut marked Failed`));
    expect((await getRun(ns, 'cut'))?.status?.phase).toBe('Failed');

    // Every run is recorded once, with the phase it ended in, and the new leader runs the next one.
    applyBackup('b4', app);
    expect((await backupEnds(ns, 'b4')).status?.phase).toBe('Completed');
    const b4 = runLines(ns, 'b4');
    expect(b4.length).toBeGreaterThan(1);
    expect(b4.every((l) => l.startsWith(`[pod/${next}/`))).toBe(true);
    const all = (await custom().listNamespacedCustomObject({ group: 'stowage.dev', version: 'v1', namespace: ns, plural: 'backups' })) as { items: (RunObject & { metadata: { name: string } })[] };
    expect(all.items.map((x) => `${x.metadata.name} ${x.status?.phase}`).sort()).toEqual(['b1 Completed', 'b2 Completed', 'b3 Completed', 'b4 Completed', 'cut Failed']);
    heldNs = held;
  }, 900_000);

  it('a leader killed before its runs end (pod grace 1 s): the next leader waits out the lease and settles the run by the commit point: Failed, no stowage-backup.json', async () => {
    expect(heldNs).not.toBe('');
    await serverPods(ns);
    const leader = await leaderPod(ns);
    applyBackup('killed', heldNs);
    await heldByPlugin('killed', heldNs);
    const oldLog = followLog(ns, leader);
    const deleted = Date.now();
    // The kubelet SIGKILLs the server 1 s after SIGTERM, well inside its 10 s grace for runs: the run
    // is left InProgress and the lease unreleased, as when a node dies.
    kubectlOk(['-n', ns, 'delete', 'pod', leader, '--grace-period=1', '--wait=false']);
    const next = await waitUntil('the lease taken by another pod', async () => {
      const h = await leaderPod(ns);
      return h !== leader && h !== '' ? h : undefined;
    }, 120_000, 250);
    const takeover = (Date.now() - deleted) / 1000;
    const killed = await backupEnds(ns, 'killed');
    const oldLines = await oldLog;
    log(`leader ${leader} killed: ${next} leads after ${takeover.toFixed(1)}s; backup killed ${killed.status?.phase} after ${((Date.now() - deleted) / 1000).toFixed(1)}s: ${killed.status?.failureReason}`);
    expect(oldLines).toContain('shutting down: waiting up to 10s for 1 running backup(s)/restore(s)');
    expect(oldLines).not.toContain('stowage server stopped');

    // Settled by the new leader from the bucket: no stowage-backup.json, so Failed, saying why.
    expect(killed.status?.phase).toBe('Failed');
    expect(killed.status?.failureReason).toMatch(/^the Stowage server running this backup stopped before it finished \(found InProgress at start-up or failover\); location default holds no stowage-backup\.json for it, so the backup is incomplete/);
    expect(bucketKeys(path.join(ns, 'backups', 'killed')).some((k) => k.includes('stowage-backup.json'))).toBe(false);
    const nextLog = kubectlOk(['-n', ns, 'logs', next]);
    expect(nextLog).toMatch(new RegExp(`held by ${leader}_\\S+; \\S+ takes it once it goes 15 s unrenewed`));
    expect(nextLog.match(new RegExp(`backup ${ns}/killed marked Failed`, 'g'))?.length).toBe(1);
    expect(nextLog).not.toMatch(new RegExp(`starting backup ${ns}/killed\\b`));
    const all = (await custom().listNamespacedCustomObject({ group: 'stowage.dev', version: 'v1', namespace: ns, plural: 'backups' })) as { items: (RunObject & { metadata: { name: string } })[] };
    expect(all.items.map((x) => `${x.metadata.name} ${x.status?.phase}`).sort()).toEqual(['b1 Completed', 'b2 Completed', 'b3 Completed', 'b4 Completed', 'cut Failed', 'killed Failed']);
    await serverPods(ns);
    kubectlOk(['delete', 'namespace', heldNs, '--wait=false']);
  }, 900_000);

  it('helm uninstall leaves the backups in the bucket, and a reinstall syncs them back', async () => {
    expect(ns).not.toBe('');
    const keys = bucketKeys(ns);
    helm(helmBin, cp.kubeconfigPath, ['uninstall', 'stowage', '--namespace', ns, '--wait', '--timeout', '5m']);
    await waitUntil('the server pods gone', async () => ((await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/name=stowage' })).items.length === 0 ? true : undefined), 180_000, 500);
    expect(bucketKeys(ns)).toEqual(keys);

    // The install's signing key outlives the uninstall (helm.sh/resource-policy: keep): the backups it signed stay verifiable.
    const key = kubectlOk(['-n', ns, 'get', 'secret', 'stowage-signing', '-o', 'jsonpath={.data.hmac}']);
    expect(key).not.toBe('');

    // A fresh namespace knows nothing of them: the location's sync brings them back, verified with
    // the old key copied over as docs/install.md says (the new install's own key signed none of them).
    const again = uniqueName('stowage');
    helm(helmBin, cp.kubeconfigPath, ['install', 'stowage', CHART, '--namespace', again, '--create-namespace', '--wait', '--timeout', '10m']);
    createCredentials(again);
    kubectlOk(['-n', again, 'create', 'secret', 'generic', 'stowage-signing-before', `--from-literal=hmac=${Buffer.from(key, 'base64').toString('utf8')}`]);
    applyLocation(again, ns, 'stowage-signing-before');
    for (const name of ['b1', 'b2']) {
      const synced = await waitUntil(`Backup ${name} synced into ${again}`, async () => getRun(again, name), 180_000, 500);
      expect(synced.status?.phase).toBe('Completed');
    }
    helm(helmBin, cp.kubeconfigPath, ['uninstall', 'stowage', '--namespace', again, '--wait', '--timeout', '5m']);
    kubectlOk(['delete', 'namespace', app, '--wait=false']);
  }, 900_000);
});

describe('npm run demo -- --in-cluster', () => {
  it('tells the quick-start story through the chart on this node and shows the server pods\' lines for the run', async () => {
    let printed = '';
    const out: Printer = {
      step: (t) => void (printed += `==> ${t}\n`),
      note: (t) => void (printed += `    ${t}\n`),
      command: (c, o) => void (printed += `$ ${c}\n${o ?? ''}\n`),
    };
    const serverNs = uniqueName('demo-stowage');
    const appNs = uniqueName('demo');
    const r = await inClusterStory({ kubeconfig: cp.kubeconfigPath, helmBin, s3, bucket: DEMO_BUCKET, serverNs, appNs, out });
    expect(r.backupPhase).toBe('Completed');
    expect(r.restorePhase).toBe('Completed');
    expect(r.missing).toEqual([]);
    for (const marker of [
      `$ helm install stowage charts/stowage --namespace ${serverNs} --create-namespace --wait`,
      '$ kubectl apply -f backup.yaml',
      `namespace ${appNs} is gone`,
      '$ kubectl apply -f restore.yaml',
      `$ kubectl -n ${serverNs} logs -l app.kubernetes.io/name=stowage --prefix --tail=-1 | grep backup=${serverNs}/demo-backup`,
      `$ helm uninstall stowage --namespace ${serverNs}`,
    ]) expect(printed, marker).toContain(marker);
    for (const obj of ['ConfigMap app-config', 'Secret app-secret', 'Deployment web (2 pods Ready)', 'Service web']) expect(printed).toContain(`ok      ${obj}`);
    // The run's lines as kubectl prints them: each prefixed with the server pod it came from.
    expect(r.backupLines.length).toBeGreaterThan(1);
    for (const l of [...r.backupLines, ...r.restoreLines]) expect(l).toMatch(/^\[pod\/stowage-[^\]]+\] /);
    expect(r.backupLines.some((l) => l.includes('backup completed'))).toBe(true);
    expect(printed).not.toContain('s3cr3t-demo');
    log(`in-cluster demo story:\n${printed}`);
  }, 900_000);
});

// Feature suites that need pods (see context.ts): each registers its describe blocks here, before the teardown.
backupHooksSuite();
restoreHooksSuite();
csiStackSuite();
volumeSnapshotsSuite();
freezeSuite();

describe('teardown', () => {
  it('leaves the machine as found: sysctls, the nft ruleset, links, mounts, loop devices and global paths', async () => {
    const c = cluster;
    cluster = undefined;
    setInCluster(undefined);
    expect(c).toBeDefined();
    expect(await c?.stop()).toEqual([]);
  }, 180_000);
});
