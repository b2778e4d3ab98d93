// Starts `stowage server` (the built CLI) as a child process against the test control plane,
// with its own namespace and, optionally, a BackupStorageLocation. Output is captured for assertions.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  RESOURCES, newBackupStorageLocation, type Backup, type BackupStorageLocationSigning, type BackupStorageLocationSpec, type Restore,
} from '../../src/apis/v1/index.js';
import type { S3Server } from '../../scripts/cluster/s3.js';
import { CORE, createDynamicClient, ensureCrds, isAlreadyExists, loadKubeConfig, type DynamicClient } from '../../src/kube/index.js';
import { waitUntil } from './kube.js';
import { serviceAccountKubeconfig } from './serverIdentity.js';
import { prepareWebhook, removeWebhook, waitForWebhook, webhookConfigurationNameFor } from './webhook.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(ROOT, 'dist/cli/bin.js');

export interface ServerOptions {
  kubeconfigPath: string;
  /** Identity for installing CRDs, the namespace and the location; default kubeconfigPath. */
  adminKubeconfigPath?: string;
  namespace: string;
  /** A location to create before the server starts. */
  location?: { name: string; spec: BackupStorageLocationSpec };
  args?: string[];
  env?: Record<string, string>;
  /** Wait until this server leads (default); false waits only until it serves metrics (a follower). */
  waitForLeader?: boolean;
  /** Reuse this scratch directory (a restarted server finding what the previous one left); default a fresh one. */
  scratchDir?: string;
  /**
   * requester (default): the server serves the admission webhook (test/support/webhook.ts) and
   * startServer returns once the API server calls it; cluster-admin: `--trust-mode cluster-admin`, no webhook.
   */
  trustMode?: 'requester' | 'cluster-admin';
  /** The MutatingWebhookConfiguration to use (default `stowage-<namespace>`, created by the harness when missing). */
  webhookConfigurationName?: string;
  /**
   * Whom the server runs as: `service-account` (the default unless adminKubeconfigPath is given) is
   * the namespace's deployed ServiceAccount with the generated RBAC of its trust mode, with a real
   * token (support/serverIdentity.ts); `kubeconfig` is kubeconfigPath as it is.
   */
  identity?: 'service-account' | 'kubeconfig';
}

export interface RunningServer {
  proc: ChildProcess;
  scratchDir: string;
  output(): string;
  /** Port of /metrics, /healthz and /readyz. */
  metricsPort: number;
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends `signal` and resolves the exit code. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export function testClient(kubeconfigPath: string): DynamicClient {
  return createDynamicClient(loadKubeConfig(kubeconfigPath), { qps: 200, burst: 400 });
}

export async function ensureNamespace(client: DynamicClient, name: string): Promise<void> {
  try {
    await client.create({ group: '', version: 'v1', resource: 'namespaces', namespaced: false }, undefined, { metadata: { name } });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** Namespace `name` (created if missing) holding ConfigMaps cm-0 … cm-<count-1>, each with data `{ i }`: a small app to back up. */
export async function ensureAppNamespace(client: DynamicClient, name: string, configMaps: number): Promise<void> {
  await ensureNamespace(client, name);
  for (let i = 0; i < configMaps; i++) await client.create(CORE.configMaps, name, { metadata: { name: `cm-${i}` }, data: { i: String(i) } });
}

/**
 * The Secret (entry `hmac`) holding the HMAC key that SIGNED test locations sign with: prepareServer
 * makes it for a location that names it, createTestSigningSecret for any other. One fixed key, so
 * servers of different namespaces reading one bucket verify each other's backups.
 */
export const TEST_SIGNING_SECRET = 'stowage-test-signing';
const TEST_SIGNING_KEY = crypto.createHash('sha256').update('stowage test signing key').digest();
/** Signing with the test key. */
export const SIGNED: BackupStorageLocationSigning = { keySecretRef: { name: TEST_SIGNING_SECRET, key: 'hmac' } };
/** The explicit opt-out (a location must sign or say it does not): for tests about something else, where signing is noise. */
export const UNSIGNED: BackupStorageLocationSigning = { disabled: true };

export async function createTestSigningSecret(client: DynamicClient, namespace: string): Promise<void> {
  try {
    await client.create(CORE.secrets, namespace, { metadata: { name: TEST_SIGNING_SECRET }, data: { hmac: TEST_SIGNING_KEY.toString('base64') } });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** A stowage.dev/aws location on a test S3 server, reading its credentials from `secret` (key `cloud`); unsigned unless `signing` says otherwise. */
export function s3LocationSpec(
  s3: Pick<S3Server, 'region' | 'endpoint'>,
  o: { bucket: string; prefix: string; secret: string; validationFrequency?: string; signing?: BackupStorageLocationSigning },
): BackupStorageLocationSpec {
  return {
    provider: 'stowage.dev/aws', objectStorage: { bucket: o.bucket, prefix: o.prefix }, default: true,
    ...(o.validationFrequency !== undefined ? { validationFrequency: o.validationFrequency } : {}),
    config: { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true' },
    credential: { name: o.secret, key: 'cloud' },
    signing: o.signing ?? UNSIGNED,
  };
}

/** The Secret an s3LocationSpec reads: the test S3 server's keys as a shared-credentials file. */
export async function createS3CredentialsSecret(client: DynamicClient, namespace: string, name: string, s3: Pick<S3Server, 'accessKeyId' | 'secretAccessKey'>): Promise<void> {
  await client.create({ group: '', version: 'v1', resource: 'secrets', namespaced: true }, namespace, {
    metadata: { name },
    stringData: { cloud: `[default]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n` },
  });
}

/** A Backup or Restore once it reaches a final phase. */
export async function waitFinished<T extends Backup | Restore>(
  client: DynamicClient, res: typeof RESOURCES.Backup | typeof RESOURCES.Restore, namespace: string, name: string, timeoutMs = 120_000,
): Promise<T> {
  return waitUntil(`${name} finished`, async () => {
    const o = await client.get<T>(res, namespace, name);
    return ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation', 'Canceled'].includes(o.status?.phase ?? '') ? o : undefined;
  }, timeoutMs, 200);
}

/** A filesystem location rooted at a fresh temp dir (the bucket is a directory below it); unsigned unless `signing` says otherwise. */
export function filesystemLocation(name = 'default', signing: BackupStorageLocationSigning = UNSIGNED): { name: string; spec: BackupStorageLocationSpec; root: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-fs-'));
  return { name, root, spec: { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'backups' }, config: { root }, default: true, validationFrequency: '10s', signing } };
}

/** What a server of the test control plane starts from: its own client, scratch directory and command-line arguments. */
export interface PreparedServer {
  client: DynamicClient;
  scratchDir: string;
  trustMode: 'requester' | 'cluster-admin';
  /** The arguments of `stowage server` (identity, namespace, scratch directory, trust mode, the test's own). */
  args: string[];
}

/**
 * The CRDs, the namespace, the location, the server's identity and its webhook: everything a
 * server needs before it starts, whether as a process (startServer) or in process (inProcessServer.ts).
 */
export async function prepareServer(opts: ServerOptions): Promise<PreparedServer> {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first (npm test does)`);
  const client = testClient(opts.adminKubeconfigPath ?? opts.kubeconfigPath);
  await ensureCrds(client);
  await ensureNamespace(client, opts.namespace);
  if (opts.location !== undefined) {
    if (opts.location.spec.signing?.keySecretRef?.name === TEST_SIGNING_SECRET) await createTestSigningSecret(client, opts.namespace);
    await client.create(RESOURCES.BackupStorageLocation, opts.namespace, newBackupStorageLocation(opts.location.name, opts.namespace, opts.location.spec));
  }
  const scratchDir = opts.scratchDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-scratch-'));
  const args = opts.args ?? [];
  const trustArg = args.indexOf('--trust-mode');
  const trustMode = opts.trustMode ?? (trustArg >= 0 && args[trustArg + 1] === 'cluster-admin' ? 'cluster-admin' : 'requester');
  const identity = opts.identity ?? (opts.adminKubeconfigPath === undefined ? 'service-account' : 'kubeconfig');
  const serverKubeconfig = identity === 'service-account'
    ? (await serviceAccountKubeconfig(client, opts.kubeconfigPath, opts.namespace, trustMode, scratchDir,
      opts.webhookConfigurationName ?? webhookConfigurationNameFor(opts.namespace))) ?? opts.kubeconfigPath
    : opts.kubeconfigPath;
  // A cluster-admin server serves no webhook: one left by a requester-mode server of the namespace would refuse every create.
  if (trustMode === 'cluster-admin') await removeWebhook(client, opts.namespace);
  const modeArgs = trustMode === 'requester'
    ? await prepareWebhook(client, opts.namespace, opts.webhookConfigurationName)
    : trustArg >= 0 ? [] : ['--trust-mode', 'cluster-admin'];
  return {
    client, scratchDir, trustMode,
    args: [
      '--kubeconfig', serverKubeconfig, '--namespace', opts.namespace,
      '--metrics-address', '127.0.0.1:0', '--scratch-dir', scratchDir, '--plugin-idle-timeout', '10m',
      ...modeArgs,
      ...args,
    ],
  };
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { client, scratchDir, trustMode, args } = await prepareServer(opts);
  // Every test server is a pod of its own (they share one host name): a new process of the same
  // pod takes its lease at once, so only a test that means to restart a pod passes its POD_NAME.
  const proc = spawn(process.execPath, [BIN, 'server', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, POD_NAME: `test-pod-${path.basename(scratchDir)}`, ...opts.env } });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const server: RunningServer = {
    proc,
    metricsPort: 0,
    scratchDir,
    output: () => out,
    waitForOutput: async (re, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = re.exec(out);
        if (m !== null) return m[0];
        if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}) before printing ${re}:\n${out.slice(-3000)}`);
        if (Date.now() > deadline) throw new Error(`server did not print ${re} within ${timeoutMs} ms:\n${out.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop: async (signal = 'SIGTERM', timeoutMs = 60_000) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  if (trustMode === 'requester') {
    await server.waitForOutput(/CA bundle published to MutatingWebhookConfiguration/, 60_000);
    await waitForWebhook(client, opts.namespace);
  }
  const line = await server.waitForOutput(/readyz on [^\s]+:\d+/, 60_000);
  server.metricsPort = Number(/:(\d+)$/.exec(line)?.[1]);
  if (opts.waitForLeader !== false) await server.waitForOutput(/became the leader/, 60_000);
  return server;
}
