// The benchmark's peer: Velero, run as users run it outside a cluster (`velero server` with a
// kubeconfig, docs/run-locally), against the benchmark's own control plane and S3 server, in a
// namespace of its own with its CRDs and one BackupStorageLocation. Only the object-store plugin
// is installed: no node agent, no volume snapshots, so it does the same job as Stowage's rows.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../../scripts/cluster/controlPlane.js';
import { spawnTracked, type Spawned } from '../../scripts/cluster/procs.js';
import type { VeleroBinaries } from '../../scripts/velero/velero.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, type DynamicClient, type KubeObject, type ResourceRef } from '../../src/kube/index.js';
import { createObject } from '../seed.js';
import { waitFor } from '../watch.js';

const VELERO_GROUP = 'velero.io';
export const VELERO_BACKUPS: ResourceRef = { group: VELERO_GROUP, version: 'v1', resource: 'backups', namespaced: true };
export const VELERO_RESTORES: ResourceRef = { group: VELERO_GROUP, version: 'v1', resource: 'restores', namespaced: true };
const VELERO_LOCATIONS: ResourceRef = { group: VELERO_GROUP, version: 'v1', resource: 'backupstoragelocations', namespaced: true };

/** The location's name: `velero server`'s --default-backup-storage-location default. */
export const VELERO_LOCATION = 'default';
/** The bucket prefix of Velero's location (Stowage's locations use others in the same bucket). */
export const VELERO_PREFIX = 'velero';

/** Phases after which Velero does nothing more with a Backup or Restore (pkg/apis/velero/v1). */
const TERMINAL = new Set(['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation']);

interface VeleroStatus {
  phase?: string;
  warnings?: number;
  errors?: number;
  failureReason?: string;
  validationErrors?: string[];
}
export interface VeleroBackup extends KubeObject {
  status?: VeleroStatus & { progress?: { totalItems?: number; itemsBackedUp?: number } };
}
export interface VeleroRestore extends KubeObject {
  status?: VeleroStatus & { progress?: { totalItems?: number; itemsRestored?: number } };
}

/** The Kubernetes client limits and parallelism the Velero server gets: the same as Stowage's server. */
export interface VeleroSpeed {
  clientQps: number;
  clientBurst: number;
  pageSize: number;
  /** Goroutines backing up item blocks at once (`--item-block-worker-count`, Velero ≥ 1.16; default 1). */
  itemBlockWorkers: number;
}

/**
 * `velero server`'s flags for speed. Velero's defaults are QPS 100, burst 100, page size 500 and
 * one item-block worker; its docs name these flags as the knobs for large clusters (backup-reference:
 * "Kubernetes API Pagination"; the ItemBlock worker design). The benchmark gives it Stowage's own
 * client limits and page size, and as many item-block workers as Stowage lists resources at once.
 */
export function veleroServerFlags(speed: VeleroSpeed): string[] {
  return [
    '--client-qps', String(speed.clientQps),
    '--client-burst', String(speed.clientBurst),
    '--client-page-size', String(speed.pageSize),
    '--item-block-worker-count', String(speed.itemBlockWorkers),
  ];
}

/** The resource of each kind `velero install` prints (no node agent, no snapshot location, no Secret). */
const INSTALL_KINDS: Record<string, ResourceRef> = {
  CustomResourceDefinition: CUSTOM_RESOURCE_DEFINITIONS,
  Namespace: CORE.namespaces,
  ServiceAccount: CORE.serviceAccounts,
  ClusterRoleBinding: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', namespaced: false },
  BackupStorageLocation: VELERO_LOCATIONS,
  Deployment: { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true },
};

export interface InstallOptions {
  namespace: string;
  kubeconfigPath: string;
  bucket: string;
  s3: { endpoint: string; region: string };
}

/**
 * `velero install`'s arguments for the AWS plugin on an S3-compatible server (path-style URLs at its
 * endpoint, as Velero's docs set MinIO up), credentials from a file rather than a Secret, no volume
 * snapshots, no node agent.
 */
export function veleroInstallArgs(o: InstallOptions, awsPluginVersion: string): string[] {
  return [
    'install', '--kubeconfig', o.kubeconfigPath, '--namespace', o.namespace,
    '--provider', 'aws', '--plugins', `velero/velero-plugin-for-aws:${awsPluginVersion}`,
    '--bucket', o.bucket, '--prefix', VELERO_PREFIX,
    '--backup-location-config', `region=${o.s3.region},s3ForcePathStyle=true,s3Url=${o.s3.endpoint}`,
    '--no-secret', '--use-volume-snapshots=false',
    '--dry-run', '-o', 'json',
  ];
}

/** What `velero install` would create, as its dry run prints it. */
export function veleroInstallManifest(bin: VeleroBinaries, o: InstallOptions): KubeObject[] {
  const r = spawnSync(bin.velero, veleroInstallArgs(o, bin.awsPluginVersion), { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 60_000 });
  if (r.status !== 0) throw new Error(`velero install --dry-run failed (exit ${r.status ?? r.signal}): ${r.stderr.trim().slice(-1000)}`);
  const items = (JSON.parse(r.stdout) as { items?: KubeObject[] }).items ?? [];
  if (!items.some((o) => o.kind === 'CustomResourceDefinition')) throw new Error('velero install --dry-run -o json printed no CustomResourceDefinition');
  return items;
}

/** Waits until the API server serves every CRD (the server checks for them at start). */
async function waitEstablished(client: DynamicClient, crds: readonly KubeObject[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    const name = crd.metadata?.name;
    if (name === undefined) throw new Error('velero install printed a CustomResourceDefinition without a name');
    for (;;) {
      const got = await client.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(CUSTOM_RESOURCE_DEFINITIONS, undefined, name);
      if ((got.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`Velero's CRD ${name} is not established 60 s after it was created`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export interface VeleroSetup {
  bin: VeleroBinaries;
  namespace: string;
  kubeconfigPath: string;
  /** The AWS credentials file the object-store plugin reads (AWS_SHARED_CREDENTIALS_FILE). */
  credentialsFile: string;
  serverFlags: string[];
  workDir: string;
}

/**
 * Installs Velero as its "Run Velero locally" page describes: everything `velero install` creates
 * (CRDs, namespace, BackupStorageLocation on the benchmark's bucket, its Deployment), with the
 * Deployment scaled to zero, because the server runs here as a process. Velero's pod-volume restore
 * action reads that Deployment for its image when it starts, so it must exist.
 */
export async function installVelero(client: DynamicClient, opts: InstallOptions & {
  bin: VeleroBinaries; workDir: string; speed: VeleroSpeed; s3: InstallOptions['s3'] & { accessKeyId: string; secretAccessKey: string };
}): Promise<VeleroSetup> {
  const items = veleroInstallManifest(opts.bin, opts);
  const crds = items.filter((o) => o.kind === 'CustomResourceDefinition');
  for (const crd of crds) await createObject(client, CUSTOM_RESOURCE_DEFINITIONS, undefined, crd);
  await waitEstablished(client, crds);
  for (const item of items.filter((o) => o.kind !== 'CustomResourceDefinition')) {
    const res = INSTALL_KINDS[item.kind ?? ''];
    if (res === undefined) throw new Error(`velero install printed a ${item.kind ?? '(no kind)'} the benchmark does not know how to create`);
    const body = item.kind === 'Deployment' ? { ...item, spec: { ...(item.spec as object), replicas: 0 } } : item;
    await createObject(client, res, res.namespaced ? opts.namespace : undefined, body);
  }
  const credentialsFile = path.join(opts.workDir, 'velero-credentials');
  fs.writeFileSync(credentialsFile, `[default]\naws_access_key_id=${opts.s3.accessKeyId}\naws_secret_access_key=${opts.s3.secretAccessKey}\n`, { mode: 0o600 });
  return { bin: opts.bin, namespace: opts.namespace, kubeconfigPath: opts.kubeconfigPath, credentialsFile, serverFlags: veleroServerFlags(opts.speed), workDir: opts.workDir };
}

/** controller-runtime's metrics server, which `velero server` cannot move, listens on :8080. */
const CONTROLLER_RUNTIME_METRICS_PORT = 8080;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, () => srv.close(() => resolve(true)));
  });
}

export interface VeleroServer {
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

function tail(file: string, bytes = 3000): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(-bytes);
  } catch {
    return '(no output)';
  }
}

interface VeleroLocation extends KubeObject {
  status?: { phase?: string; message?: string; lastValidationTime?: string };
}

/**
 * Starts `velero server` and resolves once it has found its location Available: Velero refuses a
 * backup (FailedValidation) while the location has not been validated yet. A server that exits
 * first, or a location found Unavailable, throws with the reason.
 */
export async function startVeleroServer(client: DynamicClient, setup: VeleroSetup, logFile: string, log: (line: string) => void): Promise<VeleroServer> {
  if (!(await portFree(CONTROLLER_RUNTIME_METRICS_PORT))) {
    throw new Error(`port ${CONTROLLER_RUNTIME_METRICS_PORT} is in use: velero server's controller-runtime metrics listener needs it (it has no flag to move it); stop what listens there and run again`);
  }
  const metrics = await freePort();
  fs.writeFileSync(logFile, '');
  const args = [
    'server',
    '--kubeconfig', setup.kubeconfigPath,
    '--namespace', setup.namespace,
    '--plugin-dir', setup.bin.pluginDir,
    '--metrics-address', `127.0.0.1:${metrics}`,
    '--profiler-address', '',
    ...setup.serverFlags,
  ];
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: setup.workDir, AWS_SHARED_CREDENTIALS_FILE: setup.credentialsFile };
  const proc: Spawned = spawnTracked(setup.bin.velero, args, logFile, env);
  const pid = proc.child.pid;
  if (pid === undefined) throw new Error('velero server did not start');
  const server: VeleroServer = { pid, logFile, stop: () => proc.stop(30_000) };
  const deadline = Date.now() + 120_000;
  try {
    for (;;) {
      if (fs.readFileSync(logFile, 'utf8').includes('Server starting...')) break;
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`velero server exited at start (log ${logFile}):\n${tail(logFile)}`);
      if (Date.now() > deadline) throw new Error(`velero server did not start its controllers within 120 s (log ${logFile}):\n${tail(logFile)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The location's phase as this server found it: a phase left by an earlier server does not count.
    const started = Date.now();
    const found = await waitFor<VeleroLocation>(client, VELERO_LOCATIONS, setup.namespace, VELERO_LOCATION, undefined,
      (l) => ['Available', 'Unavailable'].includes(l.status?.phase ?? '') && Date.parse(l.status?.lastValidationTime ?? '') >= started - 1000,
      120_000, (l) => log(`Velero location ${VELERO_LOCATION}: ${JSON.stringify(l.status ?? {})}`));
    if (found.status?.phase !== 'Available') throw new Error(`Velero's location ${VELERO_LOCATION} is ${found.status?.phase ?? '?'}: ${found.status?.message ?? 'no message'} (log ${logFile})`);
    return server;
  } catch (err) {
    await proc.stop(5000);
    throw err;
  }
}

function describeFailure(kind: string, name: string, st: VeleroStatus | undefined, logFile: string): string {
  const why = [st?.failureReason, ...(st?.validationErrors ?? [])].filter((x) => x !== undefined && x !== '').join('; ');
  return `Velero ${kind} ${name} ended ${st?.phase ?? '?'}: ${why || `${st?.errors ?? 0} errors, ${st?.warnings ?? 0} warnings`} (server log: ${logFile})`;
}

/**
 * A Velero backup of these namespaces, timed from the create to a terminal phase seen on a watch
 * (as the Stowage rows are). Anything but Completed throws with Velero's reason.
 */
export async function runVeleroBackup(
  client: DynamicClient, setup: VeleroSetup, name: string, scope: { includedNamespaces: string[]; includedResources?: string[] },
  timeoutMs: number, logFile: string, log: (line: string) => void,
): Promise<{ backup: VeleroBackup; seconds: number }> {
  const t = performance.now();
  const created = await client.create<VeleroBackup>(VELERO_BACKUPS, setup.namespace, {
    apiVersion: `${VELERO_GROUP}/v1`, kind: 'Backup', metadata: { name, namespace: setup.namespace },
    spec: { ...scope, storageLocation: VELERO_LOCATION, snapshotVolumes: false, defaultVolumesToFsBackup: false },
  });
  const backup = await waitFor<VeleroBackup>(client, VELERO_BACKUPS, setup.namespace, name, created.metadata?.resourceVersion, (b) => TERMINAL.has(b.status?.phase ?? ''), timeoutMs,
    (b) => log(`Velero backup ${name}: ${b.status?.phase ?? 'New'} ${JSON.stringify(b.status?.progress ?? {})}`));
  const seconds = (performance.now() - t) / 1000;
  if (backup.status?.phase !== 'Completed') throw new Error(describeFailure('backup', name, backup.status, logFile));
  return { backup, seconds };
}

/** A Velero restore of `backupName` with this namespace mapping, timed like runVeleroBackup. */
export async function runVeleroRestore(
  client: DynamicClient, setup: VeleroSetup, name: string, backupName: string, namespaceMapping: Record<string, string>,
  timeoutMs: number, logFile: string, log: (line: string) => void,
): Promise<{ restore: VeleroRestore; seconds: number }> {
  const t = performance.now();
  const created = await client.create<VeleroRestore>(VELERO_RESTORES, setup.namespace, {
    apiVersion: `${VELERO_GROUP}/v1`, kind: 'Restore', metadata: { name, namespace: setup.namespace },
    spec: { backupName, namespaceMapping, restorePVs: false },
  });
  const restore = await waitFor<VeleroRestore>(client, VELERO_RESTORES, setup.namespace, name, created.metadata?.resourceVersion, (x) => TERMINAL.has(x.status?.phase ?? ''), timeoutMs,
    (x) => log(`Velero restore ${name}: ${x.status?.phase ?? 'New'} ${JSON.stringify(x.status?.progress ?? {})}`));
  const seconds = (performance.now() - t) / 1000;
  if (restore.status?.phase !== 'Completed') throw new Error(describeFailure('restore', name, restore.status, logFile));
  return { restore, seconds };
}
