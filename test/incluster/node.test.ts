// Stowage the way its users run it: a real node (containerd, runc, CNI, kubelet, kube-proxy,
// kube-scheduler) joined to its own node-mode control plane, the image built from the shipped
// Dockerfile, and the chart installed with helm itself. Nothing comes from a registry. Provisioning
// failures fail here with the reason; nothing is skipped.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';
import { ensureHelm, helm } from '../../scripts/helm/helm.js';
import { snapshotHost, type HostSnapshot } from '../../scripts/node/hostState.js';
import { ensureNodePackages } from '../../scripts/node/packages.js';
import { BUSYBOX_IMAGE, hostIp, kubectlPath, nodeBinaries, startNode, type RealNode } from '../../scripts/node/node.js';
import { uniqueName, waitUntil } from '../support/kube.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const CHART = path.join(REPO, 'charts', 'stowage');
const BUCKET = 'stowage-incluster';

let cp: ControlPlane;
let node: RealNode | undefined;
let s3: S3Server;
let helmBin: string;
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;
let before: HostSnapshot;
const log = (l: string): void => void process.stderr.write(`[incluster] ${l}\n`);

function kubectl(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(kubectlPath(), ['--kubeconfig', cp.kubeconfigPath, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function kubectlOk(args: string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (exit ${r.status}): ${r.stderr.trim()}`);
  return r.stdout;
}

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

async function podReady(ns: string, selector: string, count: number): Promise<k8s.V1Pod[]> {
  return waitUntil(`${count} Ready pod(s) ${selector} in ${ns}`, async () => {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items
      .filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return pods.length === count ? pods : undefined;
  }, 300_000, 500);
}

beforeAll(async () => {
  // nft (for the snapshot) is one of the node's packages: a fresh machine gets them first.
  ensureNodePackages(log);
  before = snapshotHost();
  const ip = hostIp();
  cp = await startControlPlane({ node: { ip, nodeName: 'stowage-node' } });
  kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  core = kc.makeApiClient(k8s.CoreV1Api);
  node = await startNode(cp, { binaries: nodeBinaries(), log });
  // The pods reach the S3 server at the machine's address, as they would an external store.
  s3 = await startS3Server({ address: ip, buckets: [BUCKET] });
  helmBin = await ensureHelm(log);
}, 45 * 60_000);

afterAll(async () => {
  await node?.stop();
  await s3?.close();
  await cp?.stop();
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
    await waitUntil('both pods answering through the Service', async () => {
      const r = await httpGet(`http://${svc.spec?.clusterIP}:8080/`);
      expect(r.status).toBe(200);
      seen.add(r.body.trim());
      return seen.size === 2 ? true : undefined;
    }, 120_000, 50);
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
const custom = (): k8s.CustomObjectsApi => kc.makeApiClient(k8s.CustomObjectsApi);

interface RunObject { metadata: { annotations?: Record<string, string> }; status?: { phase?: string; failureReason?: string; validationErrors?: string[] } }

async function getRun(namespace: string, name: string): Promise<RunObject | undefined> {
  try {
    return (await custom().getNamespacedCustomObject({ group: 'stowage.dev', version: 'v1', namespace, plural: 'backups', name })) as RunObject;
  } catch {
    return undefined;
  }
}

async function backupEnds(namespace: string, name: string): Promise<RunObject> {
  return waitUntil(`Backup ${name} finished`, async () => {
    const b = await getRun(namespace, name);
    return ['Completed', 'Failed', 'PartiallyFailed', 'FailedValidation', 'Canceled'].includes(b?.status?.phase ?? '') ? b : undefined;
  }, 300_000, 500);
}

function applyLocation(namespace: string, prefix: string): void {
  kubectlOk(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: BackupStorageLocation
metadata: {name: default, namespace: ${namespace}}
spec:
  provider: stowage.dev/aws
  objectStorage: {bucket: ${BUCKET}, prefix: ${prefix}}
  config: {region: ${s3.region}, s3Url: "${s3.endpoint}", s3ForcePathStyle: "true"}
  credential: {name: stowage-credentials, key: cloud}
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

function runLines(namespace: string, run: string): string[] {
  // Two replicas by default: `kubectl logs deploy/stowage` picks one pod, which may be the follower,
  // so operators (and NOTES.txt) read every replica's log.
  return kubectlOk(['-n', namespace, 'logs', '-l', 'app.kubernetes.io/name=stowage', '--prefix', '--tail=-1']).split('\n').filter((l) => l.includes(`backup=${namespace}/${run}`));
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

describe('the chart installed with helm', () => {
  it('installs with default values into a fresh namespace; a Backup applied with kubectl completes and kubectl logs shows its lines', async () => {
    ns = uniqueName('stowage');
    expect(node?.app?.sizeBytes).toBeGreaterThan(0);
    log(`app image ${node?.app?.image}: ${((node?.app?.sizeBytes ?? 0) / 1024 ** 2).toFixed(1)} MiB (uncompressed docker-archive)`);
    helm(helmBin, cp.kubeconfigPath, ['install', 'stowage', CHART, '--namespace', ns, '--create-namespace', '--wait', '--timeout', '10m']);
    const server = await serverPods(ns);
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
    kubectlOk(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: Backup
metadata: {name: b1, namespace: ${ns}}
spec:
  includedNamespaces: [${app}]
`);
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
    kubectlOk(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: Backup
metadata: {name: b2, namespace: ${ns}}
spec:
  includedNamespaces: [${app}]
`);
    expect((await backupEnds(ns, 'b2')).status?.phase).toBe('Completed');
    await waitUntil('b2\'s lines in the new pod\'s log', async () => (runLines(ns, 'b2').length > 1 ? true : undefined), 60_000, 500);
  }, 900_000);

  it('helm uninstall leaves the backups in the bucket, and a reinstall syncs them back', async () => {
    expect(ns).not.toBe('');
    const keys = bucketKeys(ns);
    helm(helmBin, cp.kubeconfigPath, ['uninstall', 'stowage', '--namespace', ns, '--wait', '--timeout', '5m']);
    await waitUntil('the server pods gone', async () => ((await core.listNamespacedPod({ namespace: ns, labelSelector: 'app.kubernetes.io/name=stowage' })).items.length === 0 ? true : undefined), 180_000, 500);
    expect(bucketKeys(ns)).toEqual(keys);

    // A fresh namespace knows nothing of them: the location's sync brings them back.
    const again = uniqueName('stowage');
    helm(helmBin, cp.kubeconfigPath, ['install', 'stowage', CHART, '--namespace', again, '--create-namespace', '--wait', '--timeout', '10m']);
    createCredentials(again);
    applyLocation(again, ns);
    for (const name of ['b1', 'b2']) {
      const synced = await waitUntil(`Backup ${name} synced into ${again}`, async () => getRun(again, name), 180_000, 500);
      expect(synced.status?.phase).toBe('Completed');
    }
    helm(helmBin, cp.kubeconfigPath, ['uninstall', 'stowage', '--namespace', again, '--wait', '--timeout', '5m']);
    kubectlOk(['delete', 'namespace', app, '--wait=false']);
  }, 900_000);
});

describe('teardown', () => {
  it('leaves the machine as found: sysctls, the nft ruleset, links, mounts and global paths', async () => {
    const n = node;
    node = undefined;
    await n?.stop();
    const after = snapshotHost();
    expect(after.sysctls).toEqual(before.sysctls);
    expect(after.ruleset).toBe(before.ruleset);
    expect([...after.links].sort()).toEqual([...before.links].sort());
    expect([...after.mounts].filter((m) => !before.mounts.has(m))).toEqual([]);
    expect([...after.existingPaths].sort()).toEqual([...before.existingPaths].sort());
  }, 180_000);
});
