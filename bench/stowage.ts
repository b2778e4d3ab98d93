// Stowage as the benchmark runs it: the server's namespace, credentials and locations; a fresh
// server process per phase, warmed up and sampled from /proc; the backups and restores timed on
// it. Shared by the full pass (harness.ts) and the memory pass (memory.ts), so both measure the
// same thing the same way.
import crypto from 'node:crypto';
import path from 'node:path';
import { prepareLocalWebhook, removeLocalWebhook, waitForLocalWebhook } from '../scripts/cluster/webhook.js';
import {
  RESOURCES, isBackupTerminal, isRestoreTerminal, newBackup, newBackupStorageLocation, newRestore,
  type Backup, type BackupSpec, type BackupStorageLocation, type Restore,
} from '../src/apis/v1/index.js';
import { DEFAULT_CONFIG } from '../src/config/index.js';
import { CORE, type DynamicClient } from '../src/kube/index.js';
import { sampleTree, type TreeFigures } from './procstat.js';
import { median, type StowageRun } from './report.js';
import { countSeeded, createObject } from './seed.js';
import { startBenchServer } from './server.js';
import { waitFor } from './watch.js';

export interface S3Endpoint {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export const LOCATION = 'default';
export const LOCATION_PREFIX = 'stowage';
/** The same bucket under another prefix, with client-side encryption (keys in a Secret). */
export const ENCRYPTED_LOCATION = 'encrypted';
export const ENCRYPTED_PREFIX = 'stowage-encrypted';
/** The same bucket under a third prefix, not signed (`spec.signing.disabled`): what signing costs. */
export const UNSIGNED_LOCATION = 'unsigned';
export const UNSIGNED_PREFIX = 'stowage-unsigned';
const KEY_SECRET = 'bench-kek';
/** The HMAC key the signed locations sign with: signing is the default, so the figures include it. */
const SIGNING_SECRET = 'bench-signing';
const SIGNING = { keySecretRef: { name: SIGNING_SECRET, key: 'hmac' } };
const CREDENTIAL_SECRET = 'bench-s3';

export type Measure = <T>(fn: () => Promise<T>) => Promise<{ value: T; tree: TreeFigures }>;

/** Samples the memory and CPU of a server and its plugin processes while the function it is given runs. */
export function measureTree(pid: number): Measure {
  return async (f) => {
    const sampler = sampleTree(pid);
    let tree: TreeFigures | undefined;
    try {
      const value = await f();
      tree = sampler.stop();
      return { value, tree };
    } finally {
      if (tree === undefined) sampler.stop();
    }
  };
}

/** Several measured runs on one server: the peaks are the highest, CPU times the medians. */
export function mergeTrees(trees: readonly TreeFigures[]): TreeFigures {
  const first = trees[0];
  if (first === undefined) throw new Error('nothing was measured');
  const byCommand = new Map<string, TreeFigures['children'][number][]>();
  for (const t of trees) for (const c of t.children) byCommand.set(c.command, [...(byCommand.get(c.command) ?? []), c]);
  const children = [...byCommand.values()].map((cs) => ({
    ...(cs[0] as TreeFigures['children'][number]),
    peakRssBytes: Math.max(...cs.map((c) => c.peakRssBytes)),
    cpuSeconds: median(cs.map((c) => c.cpuSeconds)),
  }));
  return {
    root: { ...first.root, peakRssBytes: Math.max(...trees.map((t) => t.root.peakRssBytes)), cpuSeconds: median(trees.map((t) => t.root.cpuSeconds)) },
    children,
    childrenPeakRssBytes: children.reduce((a, c) => a + c.peakRssBytes, 0),
    totalCpuSeconds: median(trees.map((t) => t.totalCpuSeconds)),
  };
}

function figuresOf(tree: TreeFigures): Pick<StowageRun, 'serverPeakRssBytes' | 'pluginsPeakRssBytes' | 'plugins' | 'serverCpuSeconds' | 'cpuSeconds'> {
  return {
    serverPeakRssBytes: tree.root.peakRssBytes,
    pluginsPeakRssBytes: tree.childrenPeakRssBytes,
    plugins: tree.children.map((c) => ({ command: c.command, peakRssBytes: c.peakRssBytes, cpuSeconds: c.cpuSeconds })),
    serverCpuSeconds: tree.root.cpuSeconds,
    cpuSeconds: tree.totalCpuSeconds,
  };
}

/** A row of the report from one run (or several merged): its times, counts and the sampled tree. */
export function stowageRun(
  name: string, phase: string, seconds: number, items: number, warnings: number, errors: number, m: { tree: TreeFigures; logFile: string },
): StowageRun {
  return { name, phase, seconds, items, warnings, errors, ...figuresOf(m.tree), logFile: m.logFile };
}

/**
 * The server's namespace with its S3 credentials, its signing and encryption keys, and three
 * locations on `bucket`: the default one (signed), an encrypted one and an unsigned one.
 */
export async function setupServerNamespace(client: DynamicClient, serverNs: string, s3ep: S3Endpoint, bucket: string): Promise<void> {
  await createObject(client, CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: serverNs } });
  await createObject(client, CORE.secrets, serverNs, {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: CREDENTIAL_SECRET },
    stringData: { cloud: `[default]\naws_access_key_id=${s3ep.accessKeyId}\naws_secret_access_key=${s3ep.secretAccessKey}\n` },
  });
  await createObject(client, CORE.secrets, serverNs, {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: SIGNING_SECRET }, data: { hmac: crypto.randomBytes(32).toString('base64') },
  });
  await createObject(client, CORE.secrets, serverNs, {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: KEY_SECRET }, data: { k1: crypto.randomBytes(32).toString('base64') },
  });
  const location = (name: string, prefix: string, extra: object): Promise<unknown> => createObject(client, RESOURCES.BackupStorageLocation, serverNs, newBackupStorageLocation(name, serverNs, {
    provider: 'stowage.dev/aws',
    objectStorage: { bucket, prefix },
    config: { region: s3ep.region, s3Url: s3ep.endpoint, s3ForcePathStyle: 'true' },
    credential: { name: CREDENTIAL_SECRET, key: 'cloud' },
    ...extra,
  }));
  await location(LOCATION, LOCATION_PREFIX, { default: true, signing: SIGNING });
  await location(ENCRYPTED_LOCATION, ENCRYPTED_PREFIX, { encryption: { keySecretRef: { name: KEY_SECRET, key: 'k1' } }, signing: SIGNING });
  await location(UNSIGNED_LOCATION, UNSIGNED_PREFIX, { signing: { disabled: true } });
}

export interface StowageServersOptions {
  /** The benchmark's admin client: creates the runs and watches them. */
  client: DynamicClient;
  kubeconfigPath: string;
  serverNs: string;
  /** Names the warm-up backups. */
  prefix: string;
  dist: string;
  workDir: string;
  /** The node flags of the server of a phase (heap flags, --cpu-prof, the caller's). */
  nodeArgs(phase: string): string[];
  /** Environment variables for the server of a phase, besides the benchmark's own. */
  env?(phase: string): Record<string, string>;
  /** What a backup takes by default (the seeded namespaces). */
  namespaces: readonly string[];
  /** Scales the timeouts. */
  objects: number;
  log(line: string): void;
}

export type RestoreRow = StowageRun & { created: number; skipped: number; failed: number; seededObjectsAfter: number };

export interface StowageServers {
  /**
   * Runs `fn` against a fresh server process, warmed up by a tiny backup; `measure` samples the
   * memory and CPU of the server and its plugin processes while the function it is given runs.
   */
  withServer<T>(phase: string, pluginDir: string | undefined, fn: (measure: Measure) => Promise<T>, trustMode?: 'requester' | 'cluster-admin'): Promise<{ value: T; logFile: string }>;
  /** Creates a Backup (as `creator`) and waits on a watch until it ends; fails unless it Completed. */
  runBackup(name: string, spec?: BackupSpec, location?: string, creator?: DynamicClient): Promise<{ backup: Backup; seconds: number }>;
  /** A Restore of `from` into the mapped namespaces on a fresh server; fails unless it Completed. */
  restore(restoreName: string, from: string, mapping: Record<string, string>, trustMode: 'requester' | 'cluster-admin', phase: string): Promise<RestoreRow>;
}

export function stowageServers(opts: StowageServersOptions): StowageServers {
  const { client, serverNs, log } = opts;
  const limits = { qps: DEFAULT_CONFIG.clientQps, burst: DEFAULT_CONFIG.clientBurst };
  const backupTimeout = 600_000 + opts.objects * 20;
  // The server's Kubernetes client has one token bucket (QPS, burst) for every run. A backup of
  // the benchmark's objects makes ~420 requests in ~2 s, which drains the burst: a backup created
  // right after it waits for those tokens at QPS (10 ms a request). That made the encrypted row,
  // created right after the plain one, 1.33x of it (bench/README.md, session 15). So every Stowage
  // backup starts once the bucket has refilled (burst / QPS) since the last one ended, as the floor
  // and the engine start with clients of their own: each row is measured from the same state. The
  // bucket is not observable from outside the server, so the wait is computed from its limits.
  const refillMs = Math.ceil((limits.burst / limits.qps) * 1000);
  let lastBackupEnd = -Infinity;
  const runBackup: StowageServers['runBackup'] = async (name, spec = { includedNamespaces: [...opts.namespaces] }, location = LOCATION, creator = client) => {
    const refilled = lastBackupEnd + refillMs - performance.now();
    if (refilled > 0) await new Promise((r) => setTimeout(r, refilled));
    const t = performance.now();
    const created = await creator.create<Backup>(RESOURCES.Backup, serverNs, newBackup(name, serverNs, { ...spec, storageLocation: location }));
    const backup = await waitFor<Backup>(client, RESOURCES.Backup, serverNs, name, created.metadata.resourceVersion, (b) => isBackupTerminal(b.status?.phase), backupTimeout,
      (b) => log(`backup ${name}: ${b.status?.phase ?? 'New'} ${JSON.stringify(b.status?.progress ?? {})}`));
    const seconds = (performance.now() - t) / 1000;
    lastBackupEnd = performance.now();
    if (backup.status?.phase !== 'Completed') {
      throw new Error(`backup ${name} ended ${backup.status?.phase ?? '?'}: ${backup.status?.failureReason ?? `${backup.status?.errors ?? 0} errors`}`);
    }
    return { backup, seconds };
  };
  const withServer: StowageServers['withServer'] = async (phase, pluginDir, fn, trustMode = 'requester') => {
    const logFile = path.join(opts.workDir, `server-${phase}.log`);
    // Trust mode requester, the default: the server's admission webhook stamps each run.
    const hook = trustMode === 'requester' ? await prepareLocalWebhook(client, serverNs) : undefined;
    // A cluster-admin server serves no webhook: the configuration the phases before it used would refuse every create.
    if (hook === undefined) await removeLocalWebhook(client, serverNs);
    const server = await startBenchServer({
      dist: opts.dist, kubeconfigPath: opts.kubeconfigPath, namespace: serverNs, logFile, scratchDir: path.join(opts.workDir, `scratch-${phase}`),
      nodeArgs: opts.nodeArgs(phase), env: opts.env?.(phase) ?? {}, ...(pluginDir !== undefined ? { pluginDir } : {}), args: hook?.args ?? ['--trust-mode', 'cluster-admin'],
    });
    try {
      if (hook !== undefined) await waitForLocalWebhook(client, serverNs);
      for (const l of [LOCATION, ENCRYPTED_LOCATION, UNSIGNED_LOCATION]) {
        await waitFor<BackupStorageLocation>(client, RESOURCES.BackupStorageLocation, serverNs, l, undefined,
          (x) => x.status?.phase === 'Available', 60_000, (x) => log(`location ${l}: ${JSON.stringify(x.status ?? {})}`));
      }
      // Measure a server in its steady state: a tiny warm-up backup starts the plugin processes
      // (the S3 store, the benchmark's action) and runs every code path once.
      await runBackup(`${opts.prefix}-warmup-${phase}`, { includedNamespaces: [serverNs], includedResources: ['configmaps'] });
      return { value: await fn(measureTree(server.pid)), logFile };
    } finally {
      await server.stop();
    }
  };
  const restore: StowageServers['restore'] = async (restoreName, from, mapping, trustMode, phase) => {
    log(`Stowage restore of ${from} (trust mode ${trustMode})`);
    const rraw = await withServer(phase, undefined, (measure) => measure(async () => {
      const t = performance.now();
      const created = await client.create<Restore>(RESOURCES.Restore, serverNs, newRestore(restoreName, serverNs, { backupName: from, namespaceMapping: mapping }));
      const restored = await waitFor<Restore>(client, RESOURCES.Restore, serverNs, restoreName, created.metadata.resourceVersion, (x) => isRestoreTerminal(x.status?.phase), 600_000 + opts.objects * 40,
        (x) => log(`restore: ${x.status?.phase ?? 'New'} ${JSON.stringify(x.status?.progress ?? {})}`));
      return { restore: restored, seconds: (performance.now() - t) / 1000 };
    }), trustMode);
    const r = { value: rraw.value.value, tree: rraw.value.tree, logFile: rraw.logFile };
    const rs = r.value.restore.status;
    if (rs?.phase !== 'Completed') throw new Error(`restore ${restoreName} ended ${rs?.phase ?? '?'}: ${rs?.failureReason ?? `${rs?.errors ?? 0} errors`} (server log: ${r.logFile})`);
    const after = await countSeeded(client, Object.values(mapping));
    const figures = {
      ...stowageRun(restoreName, rs.phase, r.value.seconds, rs.progress?.itemsRestored ?? 0, rs.warnings ?? 0, rs.errors ?? 0, r),
      created: rs.summary?.created ?? 0, skipped: rs.summary?.skipped ?? 0, failed: rs.summary?.failed ?? 0,
      seededObjectsAfter: Object.values(after).reduce((a, b) => a + b, 0),
    };
    log(`Stowage restore: ${figures.created} created in ${figures.seconds.toFixed(1)} s, trust mode ${trustMode}`);
    return figures;
  };
  return { withServer, runBackup, restore };
}
