// `npm run demo [-- --s3] [-- --keep-cluster] [-- --in-cluster]`: the whole job on a machine with no cluster.
// Starts the local control plane (built and cached on the first run), `stowage server` with a
// filesystem location (or, with --s3, a local S3-protocol server and the stowage.dev/aws store),
// backs up a sample namespace, deletes it, restores it, checks every object is back, prints where
// the tarball and logs live, stops everything it started and exits 0. --in-cluster tells the same
// story through the chart on a real node instead (demoInCluster.ts).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  RESOURCES,
  newBackupStorageLocation,
  type Backup,
  type BackupStorageLocation,
  type BackupStorageLocationSpec,
  type Restore,
} from '../src/apis/v1/index.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, createDynamicClient, ensureCrds, isAlreadyExists, isNotFound, loadKubeConfig, type DynamicClient, type KubeObject } from '../src/kube/index.js';
import { startControlPlane, type ControlPlane } from './cluster/controlPlane.js';
import { K8S_VERSION } from './cluster/paths.js';
import { spawnTracked, type Spawned } from './cluster/procs.js';
import { prepareLocalWebhook, waitForLocalWebhook } from './cluster/webhook.js';
import { startS3Server, type S3Server } from './cluster/s3.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const BIN = path.join(ROOT, 'dist/cli/bin.js');
const SERVER_NS = 'stowage';
const SIGNING_SECRET = 'stowage-signing';
const DEMO_NS = 'demo';
const BACKUP = 'demo-backup';
const DEPLOYMENTS = { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true };
const WIDGETS = { group: 'demo.stowage.dev', version: 'v1', resource: 'widgets', namespaced: true };

const args = new Set(process.argv.slice(2));
for (const a of args) {
  if (!['--s3', '--keep-cluster', '--in-cluster', '--help', '-h'].includes(a)) {
    process.stderr.write(`demo: unknown flag ${a} (use --s3 to store backups in a local S3 server, --in-cluster to run the chart on a real node)\n`);
    process.exit(2);
  }
}
if (args.has('--help') || args.has('-h')) {
  process.stdout.write([
    'usage: npm run demo [-- --s3 | --in-cluster]',
    '  --s3          store backups in a local S3-protocol server through the stowage.dev/aws plugin',
    '  --in-cluster  install the chart with helm on a real node (root; the image is built from the Dockerfile)',
    '',
  ].join('\n'));
  process.exit(0);
}
if (args.has('--in-cluster')) {
  if (args.size > 1) {
    process.stderr.write('demo: --in-cluster takes no other flag\n');
    process.exit(2);
  }
  // Loaded only here: plain `npm run demo` starts no node code at all.
  const { inClusterDemo } = await import('./demoInCluster.js');
  process.exit(await inClusterDemo());
}
const useS3 = args.has('--s3');
const t0 = Date.now();
const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const secs = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

function step(title: string): void {
  process.stdout.write(`\n${bold(`==> ${title}`)}  [${secs(Date.now() - t0)}]\n`);
}

function note(text: string): void {
  process.stdout.write(`    ${text}\n`);
}

class DemoError extends Error {}

/** Runs `stowage ...` the way a user would, output straight to this terminal (so --wait draws its bar). */
async function stowage(kubeconfig: string, cliArgs: string[], opts: { capture?: boolean } = {}): Promise<{ code: number; stdout: string }> {
  process.stdout.write(`\n$ ${bold(`stowage ${cliArgs.join(' ')}`)}\n`);
  const child = spawn(process.execPath, [BIN, ...cliArgs], {
    env: { ...process.env, KUBECONFIG: kubeconfig, STOWAGE_NAMESPACE: SERVER_NS },
    stdio: ['ignore', opts.capture === true ? 'pipe' : 'inherit', 'inherit'],
  });
  let stdout = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  const code = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c, signal) => resolve(c ?? (signal !== null ? 128 : 1)));
  });
  return { code, stdout };
}

async function mustStowage(kubeconfig: string, cliArgs: string[]): Promise<void> {
  const r = await stowage(kubeconfig, cliArgs);
  if (r.code !== 0) throw new DemoError(`\`stowage ${cliArgs.join(' ')}\` exited with code ${r.code}`);
}

async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new DemoError(`timed out after ${secs(timeoutMs)} waiting for ${what}${last !== undefined ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function createOrKeep(client: DynamicClient, res: Parameters<DynamicClient['create']>[0], ns: string | undefined, obj: object): Promise<void> {
  try {
    await client.create(res, ns, obj);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** Builds dist/ when it is missing or older than any source file. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

async function buildIfStale(): Promise<void> {
  const stale = !fs.existsSync(BIN) || newestSource(path.join(ROOT, 'src')) > fs.statSync(BIN).mtimeMs;
  if (!stale) {
    note('dist/ is up to date');
    return;
  }
  note('dist/ is missing or stale: npm run build');
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
    child.once('exit', resolve);
  });
  if (code !== 0 || !fs.existsSync(BIN)) throw new DemoError(`npm run build failed (exit ${code})`);
  const now = new Date();
  fs.utimesSync(BIN, now, now);
}

interface Sample {
  kind: string;
  res: Parameters<DynamicClient['get']>[0];
  name: string;
  /** What must survive the round trip. */
  check: (obj: KubeObject) => boolean;
}

const SAMPLES: Sample[] = [
  { kind: 'ConfigMap', res: CORE.configMaps, name: 'app-config', check: (o) => (o.data as Record<string, string> | undefined)?.greeting === 'hello from stowage' },
  { kind: 'Secret', res: CORE.secrets, name: 'app-secret', check: (o) => (o.data as Record<string, string> | undefined)?.password === Buffer.from('s3cr3t-demo').toString('base64') },
  { kind: 'Deployment', res: DEPLOYMENTS, name: 'web', check: (o) => (o.spec as { replicas?: number } | undefined)?.replicas === 2 },
  { kind: 'Service', res: CORE.services, name: 'web', check: (o) => (o.spec as { ports?: { port: number }[] } | undefined)?.ports?.[0]?.port === 80 },
  { kind: 'Widget', res: WIDGETS, name: 'gizmo', check: (o) => (o.spec as { size?: string } | undefined)?.size === 'large' },
];

async function createSampleNamespace(client: DynamicClient): Promise<void> {
  await createOrKeep(client, CORE.namespaces, undefined, { metadata: { name: DEMO_NS } });
  await createOrKeep(client, CORE.configMaps, DEMO_NS, { metadata: { name: 'app-config', labels: { app: 'web' } }, data: { greeting: 'hello from stowage' } });
  await createOrKeep(client, CORE.secrets, DEMO_NS, { metadata: { name: 'app-secret', labels: { app: 'web' } }, stringData: { password: 's3cr3t-demo' } });
  await createOrKeep(client, DEPLOYMENTS, DEMO_NS, {
    metadata: { name: 'web', labels: { app: 'web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'nginx:1.27', envFrom: [{ configMapRef: { name: 'app-config' } }], ports: [{ containerPort: 80 }] }] },
      },
    },
  });
  await createOrKeep(client, CORE.services, DEMO_NS, { metadata: { name: 'web', labels: { app: 'web' } }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 80 }] } });
  await createOrKeep(client, CUSTOM_RESOURCE_DEFINITIONS, undefined, {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.demo.stowage.dev' },
    spec: {
      group: 'demo.stowage.dev',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'string' } } } } } } }],
    },
  });
  await waitFor('the Widget CRD to be served', 30_000, async () => {
    await client.list(WIDGETS, { namespace: DEMO_NS, limit: 1 });
    return true;
  });
  await createOrKeep(client, WIDGETS, DEMO_NS, { apiVersion: 'demo.stowage.dev/v1', kind: 'Widget', metadata: { name: 'gizmo', labels: { app: 'web' } }, spec: { size: 'large' } });
  note(`namespace ${DEMO_NS}: Deployment web, Service web, ConfigMap app-config, Secret app-secret, Widget gizmo (custom resource of CRD widgets.demo.stowage.dev)`);
}

async function main(): Promise<number> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-demo-'));
  let cp: ControlPlane | undefined;
  let s3: S3Server | undefined;
  let server: Spawned | undefined;
  let client: DynamicClient | undefined;
  const serverLog = path.join(workDir, 'server.log');
  const stopAll = async (): Promise<void> => {
    client?.close();
    if (server !== undefined) {
      step('Stopping the server, the control plane' + (s3 !== undefined ? ' and the S3 server' : ''));
      await server.stop(30_000);
      const code = await server.exited;
      note(`stowage server exited with code ${code}`);
    }
    await s3?.close();
    if (cp !== undefined && !args.has('--keep-cluster')) await cp.stop();
  };
  try {
    step(`Stowage demo (${useS3 ? 'S3 storage through stowage.dev/aws' : 'filesystem storage'})`);
    await buildIfStale();

    step('Starting the local control plane (etcd, kube-apiserver, kube-controller-manager)');
    note(`the first run builds etcd and Kubernetes v${K8S_VERSION} from the Go module proxy (about 25 minutes on 2 cores); later runs use the cache`);
    const cpStart = Date.now();
    cp = await startControlPlane();
    note(`API server at ${cp.server}, ready in ${secs(Date.now() - cpStart)}`);
    const kubeconfig = cp.kubeconfigPath;
    client = createDynamicClient(loadKubeConfig(kubeconfig), { qps: 100, burst: 200 });

    step('Installing the Stowage CRDs and a signed BackupStorageLocation');
    await ensureCrds(client);
    await createOrKeep(client, CORE.namespaces, undefined, { metadata: { name: SERVER_NS } });
    // Tamper-evident by default: the location signs every backup with an HMAC key kept in a Secret.
    await createOrKeep(client, CORE.secrets, SERVER_NS, {
      metadata: { name: SIGNING_SECRET },
      stringData: { hmac: crypto.randomBytes(32).toString('base64') },
    });
    const signing = { keySecretRef: { name: SIGNING_SECRET, key: 'hmac' } };
    note(`signing key in Secret ${SERVER_NS}/${SIGNING_SECRET} (an HMAC key, entry "hmac"): every backup is signed, and verified before it is restored`);
    let spec: BackupStorageLocationSpec;
    let where: (key: string) => string;
    if (useS3) {
      s3 = await startS3Server({ directory: path.join(workDir, 's3'), buckets: ['stowage'] });
      await createOrKeep(client, CORE.secrets, SERVER_NS, {
        metadata: { name: 'cloud-credentials' },
        stringData: { cloud: `[default]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n` },
      });
      spec = {
        provider: 'stowage.dev/aws',
        objectStorage: { bucket: 'stowage' },
        config: { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true' },
        credential: { name: 'cloud-credentials', key: 'cloud' },
        default: true,
        validationFrequency: '10s',
        signing,
      };
      where = (key) => `s3://stowage/${key}`;
      note(`S3-protocol server at ${s3.endpoint}, bucket "stowage", credentials in Secret ${SERVER_NS}/cloud-credentials`);
    } else {
      const root = path.join(workDir, 'storage');
      spec = { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'backups' }, config: { root }, default: true, validationFrequency: '10s', signing };
      where = (key) => path.join(root, 'backups', key);
      note(`filesystem location rooted at ${root}`);
    }
    await createOrKeep(client, RESOURCES.BackupStorageLocation, SERVER_NS, newBackupStorageLocation('default', SERVER_NS, spec));

    step('Starting `stowage server`');
    const scratch = path.join(workDir, 'scratch');
    fs.mkdirSync(scratch);
    // Trust mode requester (the default): the API server calls the server's admission webhook,
    // which records who created each Backup and Restore, on a loopback port.
    const hook = await prepareLocalWebhook(client, SERVER_NS);
    const serverArgs = [BIN, 'server', '--kubeconfig', kubeconfig, '--namespace', SERVER_NS, '--scratch-dir', scratch, '--metrics-address', '127.0.0.1:0', '--log-level', 'info', ...hook.args];
    server = spawnTracked(process.execPath, serverArgs, serverLog);
    const srv = server;
    await waitFor('the server to become the leader', 60_000, async () => {
      if (srv.child.exitCode !== null) throw new DemoError(`stowage server exited (${srv.child.exitCode}):\n${tail(serverLog)}`);
      return fs.readFileSync(serverLog, 'utf8').includes('became the leader') ? true : undefined;
    });
    await waitForLocalWebhook(client, SERVER_NS);
    const c = client;
    await waitFor('the location to be Available', 60_000, async () => {
      const bsl = await c.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, SERVER_NS, 'default');
      if (bsl.status?.phase === 'Unavailable') throw new DemoError(`the location is Unavailable: ${bsl.status.message ?? ''}`);
      return bsl.status?.phase === 'Available' ? true : undefined;
    });
    note(`server running (log: ${serverLog}); location "default" is Available`);
    await mustStowage(kubeconfig, ['version']);

    step('Creating a sample namespace');
    await createSampleNamespace(client);

    step('Backing it up');
    await mustStowage(kubeconfig, ['backup', 'create', BACKUP, '--include-namespaces', DEMO_NS, '--wait']);
    await mustStowage(kubeconfig, ['backup', 'describe', BACKUP]);
    const logs = await stowage(kubeconfig, ['backup', 'logs', BACKUP], { capture: true });
    if (logs.code !== 0) throw new DemoError(`stowage backup logs exited with code ${logs.code}`);
    const logLines = logs.stdout.trim().split('\n');
    process.stdout.write(`${logLines.slice(0, 8).join('\n')}\n${logLines.length > 8 ? `... (${logLines.length - 8} more lines)\n` : ''}`);
    await mustStowage(kubeconfig, ['backup', 'verify', BACKUP]);

    step(`Deleting namespace ${DEMO_NS}`);
    await client.delete(CORE.namespaces, undefined, DEMO_NS);
    const delStart = Date.now();
    await waitFor(`namespace ${DEMO_NS} to be gone`, 180_000, async () => {
      try {
        await c.get(CORE.namespaces, undefined, DEMO_NS);
        return undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    });
    note(`namespace ${DEMO_NS} is gone (${secs(Date.now() - delStart)})`);

    step('Restoring it');
    await mustStowage(kubeconfig, ['restore', 'create', '--from-backup', BACKUP, '--wait']);
    const restores = await client.list<Restore>(RESOURCES.Restore, { namespace: SERVER_NS });
    const restore = restores.items.find((r) => r.spec.backupName === BACKUP);
    if (restore === undefined) throw new DemoError('the restore is not in the cluster');
    await mustStowage(kubeconfig, ['restore', 'describe', restore.metadata.name]);

    step('Checking that every object is back');
    let missing = 0;
    for (const s of SAMPLES) {
      let ok = false;
      try {
        ok = s.check(await client.get<KubeObject>(s.res, DEMO_NS, s.name));
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      note(`${ok ? 'ok     ' : 'MISSING'} ${s.kind} ${DEMO_NS}/${s.name}`);
      if (!ok) missing++;
    }
    if (missing > 0) throw new DemoError(`${missing} object(s) did not come back`);

    const backup = await client.get<Backup>(RESOURCES.Backup, SERVER_NS, BACKUP);
    const r = restore.metadata.name;
    step('Summary');
    process.stdout.write(
      [
        `    backup ${BACKUP}: ${backup.status?.phase}, ${backup.status?.progress?.itemsBackedUp ?? 0} items, expires ${backup.status?.expiration ?? '?'}`,
        `    restore ${r}: every sample object is back in namespace ${DEMO_NS}`,
        `    tarball:      ${where(`backups/${BACKUP}/${BACKUP}.tar.gz`)}`,
        `    backup log:   ${where(`backups/${BACKUP}/${BACKUP}-logs.gz`)}`,
        `    manifest:     ${where(`backups/${BACKUP}/${BACKUP}-manifest.json.gz`)}`,
        `    signature:    ${where(`backups/${BACKUP}/${BACKUP}-signature.json`)} (${backup.status?.signature?.algorithm ?? 'none'}, key "${backup.status?.signature?.keyId ?? ''}")`,
        `    restore log:  ${where(`restores/${r}/restore-${r}-logs.gz`)}`,
        `    server log:   ${serverLog}`,
        ...(s3 !== undefined ? [`    (S3 server ${s3.endpoint} stops with the demo; its files stay under ${s3.directory})`] : []),
        `    (the demo directory ${workDir} is kept; remove it with rm -rf ${workDir})`,
        '',
      ].join('\n'),
    );
    await stopAll();
    process.stdout.write(`\n${bold(`Demo finished in ${secs(Date.now() - t0)}.`)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`\ndemo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    if (!(err instanceof DemoError) && err instanceof Error && err.stack !== undefined) process.stderr.write(`${err.stack}\n`);
    if (fs.existsSync(serverLog)) process.stderr.write(`last lines of the server log (${serverLog}):\n${tail(serverLog)}\n`);
    await stopAll().catch((e: unknown) => process.stderr.write(`cleanup failed: ${String(e)}\n`));
    return 1;
  }
}

function tail(file: string, n = 20): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

process.exitCode = await main();
