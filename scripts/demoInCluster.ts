// `npm run demo -- --in-cluster`: the quick-start story the way users meet Stowage. A real node
// (containerd, kubelet, kube-proxy; scripts/node) runs the image built from the Dockerfile; helm
// installs the chart into a fresh namespace; a Backup and a Restore applied with kubectl take a
// sample namespace (with running pods) out and back; the server pods' log lines for both runs are
// shown as operators read them (`kubectl logs -l ... --prefix`). Everything it started is stopped
// and the machine is left as it was found (sysctls, nft ruleset, links, mounts, global paths).
// The story itself (inClusterStory) also runs inside test/incluster/node.test.ts on that test's node.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { S3Server } from './cluster/s3.js';
import { helm } from './helm/helm.js';
import { BUSYBOX_IMAGE, kubectlPath } from './node/node.js';
import { startRealCluster, type RealCluster } from './node/realCluster.js';

const ROOT = path.resolve(import.meta.dirname, '..');
export const DEMO_BUCKET = 'stowage-demo';

export interface Printer {
  step(title: string): void;
  note(text: string): void;
  /** A command as the user would type it, then (indented) what it printed. */
  command(cmd: string, output?: string): void;
}

export interface StoryEnv {
  kubeconfig: string;
  helmBin: string;
  s3: S3Server;
  bucket: string;
  /** The release's namespace (created by helm, fresh) and the sample namespace. */
  serverNs: string;
  appNs: string;
  out: Printer;
}

export interface StoryResult {
  backupPhase: string;
  restorePhase: string;
  /** Sample objects not back after the restore (empty when all are). */
  missing: string[];
  /** The server pods' log lines tagged with each run, with kubectl's [pod/...] prefix. */
  backupLines: string[];
  restoreLines: string[];
}

class StoryError extends Error {}

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

function kubectl(kubeconfig: string, args: string[], input?: string): string {
  const r = spawnSync(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', input, timeout: 180_000 });
  if (r.status !== 0) throw new StoryError(`kubectl ${args.join(' ')} failed (exit ${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').trim()}`);
  return r.stdout;
}

/** Polls `check` (about 4 times a second) until it returns a value; a status read is cheap and the API is local. */
async function waitFor<T>(what: string, timeoutMs: number, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const v = check();
      if (v !== undefined) return v;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new StoryError(`timed out after ${secs(timeoutMs)} waiting for ${what}${last !== '' ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function indent(text: string): string {
  return text.trimEnd().split('\n').map((l) => `    ${l}`).join('\n');
}

function sampleManifests(ns: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: ${ns}, labels: {app: web}}
data: {greeting: hello from stowage}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret, namespace: ${ns}, labels: {app: web}}
stringData: {password: s3cr3t-demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${ns}, labels: {app: web}}
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
        envFrom: [{configMapRef: {name: app-config}}]
        # httpd as PID 1 would ignore SIGTERM, and each pod would take its whole grace period to go.
        command: [sh, -c, 'trap "exit 0" TERM; mkdir -p /www && echo "$greeting" > /www/index.html && httpd -f -p 8080 -h /www & wait']
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${ns}, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{port: 8080, targetPort: 8080}]
`;
}

interface Json { [k: string]: unknown }

function getJson(kubeconfig: string, args: string[]): Json {
  return JSON.parse(kubectl(kubeconfig, [...args, '-o', 'json'])) as Json;
}

function field(obj: Json, ...keys: string[]): unknown {
  let v: unknown = obj;
  for (const k of keys) v = typeof v === 'object' && v !== null ? (v as Json)[k] : undefined;
  return v;
}

/** The sample's objects and what must hold of each after the restore. */
const CHECKS: { what: string; args: (ns: string) => string[]; ok: (o: Json) => boolean }[] = [
  { what: 'ConfigMap app-config', args: (ns) => ['-n', ns, 'get', 'configmap', 'app-config'], ok: (o) => field(o, 'data', 'greeting') === 'hello from stowage' },
  { what: 'Secret app-secret', args: (ns) => ['-n', ns, 'get', 'secret', 'app-secret'], ok: (o) => field(o, 'data', 'password') === Buffer.from('s3cr3t-demo').toString('base64') },
  { what: 'Deployment web (2 pods Ready)', args: (ns) => ['-n', ns, 'get', 'deployment', 'web'], ok: (o) => field(o, 'spec', 'replicas') === 2 && field(o, 'status', 'readyReplicas') === 2 },
  { what: 'Service web', args: (ns) => ['-n', ns, 'get', 'service', 'web'], ok: (o) => (field(o, 'spec', 'ports') as { port?: number }[] | undefined)?.[0]?.port === 8080 },
];

async function runEnds(env: StoryEnv, kind: 'backup' | 'restore', name: string): Promise<string> {
  return waitFor(`${kind} ${name} to finish`, 300_000, () => {
    const phase = String(field(getJson(env.kubeconfig, ['-n', env.serverNs, 'get', kind, name]), 'status', 'phase') ?? '');
    return ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation', 'Canceled'].includes(phase) ? phase : undefined;
  });
}

/** The server pods' log lines that carry `<kind>=<ns>/<name>`, prefixed with the pod they came from. */
function runLogLines(env: StoryEnv, kind: 'backup' | 'restore', name: string): string[] {
  return kubectl(env.kubeconfig, ['-n', env.serverNs, 'logs', '-l', 'app.kubernetes.io/name=stowage', '--prefix', '--tail=-1'])
    .split('\n').filter((l) => l.includes(`${kind}=${env.serverNs}/${name}`));
}

/** helm install → bucket → sample namespace → Backup → delete → Restore → check → the run's log lines → helm uninstall. */
export async function inClusterStory(env: StoryEnv): Promise<StoryResult> {
  const { out, kubeconfig, serverNs, appNs } = env;
  const k = (args: string[], input?: string): string => kubectl(kubeconfig, args, input);

  out.step(`Installing the chart with helm into the fresh namespace ${serverNs}`);
  const installArgs = ['install', 'stowage', path.relative(process.cwd(), path.join(ROOT, 'charts/stowage')) || '.', '--namespace', serverNs, '--create-namespace', '--wait', '--timeout', '10m'];
  const t = Date.now();
  const installed = helm(env.helmBin, kubeconfig, installArgs);
  out.command(`helm ${installArgs.join(' ')}`, installed.stdout);
  out.note(`installed and Ready in ${secs(Date.now() - t)}`);
  out.command(`kubectl -n ${serverNs} get pods`, k(['-n', serverNs, 'get', 'pods']));

  out.step('Giving it a bucket: a credentials Secret and a BackupStorageLocation');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-demo-creds-'));
  try {
    const creds = path.join(dir, 'credentials-stowage');
    fs.writeFileSync(creds, `[default]\naws_access_key_id = ${env.s3.accessKeyId}\naws_secret_access_key = ${env.s3.secretAccessKey}\n`, { mode: 0o600 });
    k(['-n', serverNs, 'create', 'secret', 'generic', 'stowage-credentials', `--from-file=cloud=${creds}`]);
    out.command(`kubectl -n ${serverNs} create secret generic stowage-credentials --from-file=cloud=credentials-stowage`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const bsl = `apiVersion: stowage.dev/v1
kind: BackupStorageLocation
metadata: {name: default, namespace: ${serverNs}}
spec:
  provider: stowage.dev/aws
  objectStorage: {bucket: ${env.bucket}, prefix: ${serverNs}}
  config: {region: ${env.s3.region}, s3Url: "${env.s3.endpoint}", s3ForcePathStyle: "true"}
  credential: {name: stowage-credentials, key: cloud}
  # Signed with the key the chart made at install (tamper-evident by default).
  signing: {keySecretRef: {name: stowage-signing, key: hmac}}
  default: true
`;
  k(['apply', '-f', '-'], bsl);
  out.command('kubectl apply -f location.yaml', bsl);
  await waitFor('the location to be Available', 180_000, () => (field(getJson(kubeconfig, ['-n', serverNs, 'get', 'backupstoragelocation', 'default']), 'status', 'phase') === 'Available' ? true : undefined));
  out.command(`kubectl -n ${serverNs} get backupstoragelocations`, k(['-n', serverNs, 'get', 'backupstoragelocations']));

  out.step(`Creating the sample namespace ${appNs}: a Deployment of 2 pods, a Service, a ConfigMap and a Secret`);
  k(['create', 'namespace', appNs]);
  k(['apply', '-f', '-'], sampleManifests(appNs));
  await waitFor('the sample Deployment to be Ready', 180_000, () => (field(getJson(kubeconfig, ['-n', appNs, 'get', 'deployment', 'web']), 'status', 'readyReplicas') === 2 ? true : undefined));
  out.command(`kubectl -n ${appNs} get pods`, k(['-n', appNs, 'get', 'pods']));

  out.step('Backing it up with a Backup applied by kubectl');
  const backup = `apiVersion: stowage.dev/v1
kind: Backup
metadata: {name: demo-backup, namespace: ${serverNs}}
spec:
  includedNamespaces: [${appNs}]
`;
  k(['apply', '-f', '-'], backup);
  out.command('kubectl apply -f backup.yaml', backup);
  const backupPhase = await runEnds(env, 'backup', 'demo-backup');
  out.command(`kubectl -n ${serverNs} get backup demo-backup`, k(['-n', serverNs, 'get', 'backup', 'demo-backup']));
  if (backupPhase !== 'Completed') {
    throw new StoryError(`backup demo-backup ended ${backupPhase}: ${String(field(getJson(kubeconfig, ['-n', serverNs, 'get', 'backup', 'demo-backup']), 'status', 'failureReason') ?? '')}`);
  }

  out.step(`Deleting namespace ${appNs}`);
  const del = Date.now();
  k(['delete', 'namespace', appNs, '--wait=true', '--timeout=180s']);
  out.command(`kubectl delete namespace ${appNs}`);
  out.note(`namespace ${appNs} is gone (${secs(Date.now() - del)})`);

  out.step('Restoring it with a Restore applied by kubectl');
  const restore = `apiVersion: stowage.dev/v1
kind: Restore
metadata: {name: demo-restore, namespace: ${serverNs}}
spec:
  backupName: demo-backup
`;
  k(['apply', '-f', '-'], restore);
  out.command('kubectl apply -f restore.yaml', restore);
  const restorePhase = await runEnds(env, 'restore', 'demo-restore');
  out.command(`kubectl -n ${serverNs} get restore demo-restore`, k(['-n', serverNs, 'get', 'restore', 'demo-restore']));

  out.step('Checking that every object is back (and the Deployment\'s pods run again)');
  const missing: string[] = [];
  for (const c of CHECKS) {
    let ok = false;
    try {
      ok = await waitFor(c.what, 120_000, () => (c.ok(getJson(kubeconfig, c.args(appNs))) ? true : undefined));
    } catch {
      ok = false;
    }
    out.note(`${ok ? 'ok     ' : 'MISSING'} ${c.what}`);
    if (!ok) missing.push(c.what);
  }

  out.step('The server pods\' log lines for the two runs, as operators read them');
  // Two replicas: the run's lines are in the leader's log, so every replica's log is read.
  const selector = `kubectl -n ${serverNs} logs -l app.kubernetes.io/name=stowage --prefix --tail=-1`;
  const backupLines = await waitFor('the backup\'s lines in the server log', 60_000, () => {
    const l = runLogLines(env, 'backup', 'demo-backup');
    return l.length > 0 ? l : undefined;
  });
  out.command(`${selector} | grep backup=${serverNs}/demo-backup`, abridge(backupLines));
  const restoreLines = await waitFor('the restore\'s lines in the server log', 60_000, () => {
    const l = runLogLines(env, 'restore', 'demo-restore');
    return l.length > 0 ? l : undefined;
  });
  out.command(`${selector} | grep restore=${serverNs}/demo-restore`, abridge(restoreLines));

  out.step('Uninstalling the chart (the backup stays in the bucket)');
  helm(env.helmBin, kubeconfig, ['uninstall', 'stowage', '--namespace', serverNs, '--wait', '--timeout', '5m']);
  out.command(`helm uninstall stowage --namespace ${serverNs}`);
  k(['delete', 'namespace', appNs, serverNs, '--wait=false']);
  return { backupPhase, restorePhase, missing, backupLines, restoreLines };
}

function abridge(lines: string[], n = 12): string {
  return lines.length <= n ? lines.join('\n') : `${lines.slice(0, n).join('\n')}\n... (${lines.length - n} more lines)`;
}

/** The terminal printer of scripts/demo.ts's style. */
export function terminalPrinter(t0: number): Printer {
  const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
  return {
    step: (title) => void process.stdout.write(`\n${bold(`==> ${title}`)}  [${secs(Date.now() - t0)}]\n`),
    note: (text) => void process.stdout.write(`    ${text}\n`),
    command: (cmd, output) => void process.stdout.write(`\n$ ${bold(cmd)}\n${output !== undefined && output.trim() !== '' ? `${indent(output)}\n` : ''}`),
  };
}

/** The whole `--in-cluster` demo: start the cluster, tell the story, stop everything, check the machine. */
export async function inClusterDemo(): Promise<number> {
  const t0 = Date.now();
  const out = terminalPrinter(t0);
  let cluster: RealCluster | undefined;
  let failed = false;
  try {
    out.step('Stowage demo in a cluster: a real node, the image built from the Dockerfile, the chart installed with helm');
    out.note('needs root: containerd, runc, the kubelet and kube-proxy change sysctls, iptables, mounts and cgroups, and all of it is put back at the end');
    out.note('the first run installs the node packages from Debian, builds the image with buildah (a few minutes) and helm from its Go module; later runs use the cache');
    if (process.getuid?.() !== 0) throw new StoryError('the in-cluster demo needs root (it runs a real node: containerd, runc, iptables, cgroups)');
    const start = Date.now();
    cluster = await startRealCluster({ buckets: [DEMO_BUCKET], log: (l) => out.note(l) });
    out.note(`control plane, node ${cluster.node.name} (${cluster.node.ip}), S3 server ${cluster.s3.endpoint} and helm ready in ${secs(Date.now() - start)}`);
    const r = await inClusterStory({
      kubeconfig: cluster.cp.kubeconfigPath, helmBin: cluster.helmBin, s3: cluster.s3, bucket: DEMO_BUCKET,
      serverNs: 'stowage', appNs: 'demo', out,
    });
    if (r.missing.length > 0) throw new StoryError(`${r.missing.length} object(s) did not come back: ${r.missing.join(', ')}`);
    out.step('Summary');
    out.note(`backup demo-backup: ${r.backupPhase}; restore demo-restore: ${r.restorePhase}; every sample object is back`);
    out.note(`the server pods logged ${r.backupLines.length} lines for the backup and ${r.restoreLines.length} for the restore`);
  } catch (err) {
    failed = true;
    process.stderr.write(`\ndemo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    if (!(err instanceof StoryError) && err instanceof Error && err.stack !== undefined) process.stderr.write(`${err.stack}\n`);
  }
  if (cluster !== undefined) {
    out.step('Stopping the node, the S3 server and the control plane, and putting the machine back');
    const left = await cluster.stop();
    if (left.length > 0) {
      process.stderr.write(`\nthe machine is not as it was found:\n${left.map((l) => `  ${l}`).join('\n')}\n`);
      failed = true;
    } else {
      out.note('sysctls, the nft ruleset, network links, mounts and global paths are as they were before the demo');
    }
  }
  if (failed) return 1;
  process.stdout.write(`\nDemo finished in ${secs(Date.now() - t0)}.\n`);
  return 0;
}
