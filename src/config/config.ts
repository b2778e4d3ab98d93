// Typed server configuration: defaults, Velero-style flag names, STOWAGE_* environment variables.

import path from 'node:path';
import { parseListenAddress } from '../util/address.js';
import { formatDuration, parseDuration } from '../util/duration.js';

export type LogFormat = 'text' | 'json';
const LOG_LEVEL_NAMES = ['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'] as const;
export type ConfigLogLevel = (typeof LOG_LEVEL_NAMES)[number];

/** Restore order: `high` first in list order, then everything else alphabetically, then `low`. */
export interface RestorePriorities {
  readonly high: readonly string[];
  readonly low: readonly string[];
}

/** Server configuration. Durations are milliseconds. */
export interface ServerConfig {
  /** Path to a kubeconfig; '' means in-cluster config or the default loading rules. */
  kubeconfig: string;
  /** Namespace of the server and its custom resources. */
  namespace: string;
  pluginDir: string;
  logLevel: ConfigLogLevel;
  logFormat: LogFormat;
  clientQps: number;
  clientBurst: number;
  /** LIST page size; 0 disables paging. */
  clientPageSize: number;
  defaultBackupTtl: number;
  backupSyncPeriod: number;
  storeValidationFrequency: number;
  garbageCollectionFrequency: number;
  restoreResourcePriorities: RestorePriorities;
  metricsAddress: string;
  /** Address of the download endpoint; '' means `:8086` in a pod, a free loopback port elsewhere. */
  downloadAddress: string;
  /** Base URL clients reach the download endpoint at (behind a Service or Ingress); '' derives it. */
  downloadUrl: string;
  /** Backups running at once (those whose scopes overlap queue whatever the limit). */
  concurrentBackups: number;
  /** Restores running at once (those writing to a shared namespace queue whatever the limit). */
  concurrentRestores: number;
  defaultBackupStorageLocation: string;
  pluginStartTimeout: number;
  pluginIdleTimeout: number;
  /** Where run logs wait when their upload fails; '' means `<scratchDir>/log-spool`. */
  logSpoolDir: string;
  /** Working directory for run logs and other transient files. */
  scratchDir: string;
  /** How long in-flight work may take to finish after SIGTERM. */
  terminationGracePeriod: number;
  /** How far V8's old generation may grow between full collections, in percent of what survived the last, while no backup runs; 0 keeps V8's own limit. */
  heapGrowthPercent: number;
  /** The same while at least one backup runs (cli/heap.ts says why they differ). */
  backupHeapGrowthPercent: number;
  /** How long runs pause, retrying with backoff, while the Kubernetes API is unreachable, before they fail naming the outage. */
  apiOutageTimeout: number;
  /** How long an object-store outage is ridden out (uploads retry with backoff and resume) before the call fails. */
  objectStoreOutageTimeout: number;
  /** LIST pages stop short of this many bytes of items (as well as clientPageSize items); 0 disables the byte budget. */
  clientPageBytes: number;
  /** Largest single item the archive reader accepts; a bigger one fails alone, named. */
  maxItemBytes: number;
  /** How long deleting a backup waits for each of its CSI snapshots to be deleted before it names the snapshot as not deleted. */
  csiSnapshotDeleteTimeout: number;
  /** `requester`: every run acts with the rights of the user who created it; `cluster-admin`: with the server's own. */
  trustMode: TrustMode;
  /** Address of the admission webhook (TLS); '' serves none (only valid in cluster-admin mode). */
  webhookAddress: string;
  /** URL the API server calls the webhook at, for a server outside the cluster; '' uses the Service in the configuration. */
  webhookUrl: string;
  /** Name of the MutatingWebhookConfiguration this server publishes its CA bundle into. */
  webhookConfigurationName: string;
  /** Lifetime of the webhook's self-signed certificate; it is renewed, while the server runs, once a third of it is left. */
  webhookCertificateLifetime: number;
  /** How often the server checks that its admission webhook is in effect for its namespace (webhook/health.ts). */
  webhookProbeInterval: number;
  /** How long a download link stays valid. */
  downloadUrlTtl: number;
}

export type TrustMode = 'requester' | 'cluster-admin';
export const TRUST_MODES: readonly TrustMode[] = ['requester', 'cluster-admin'];

// Facts from Velero's defaults (pkg/cmd/server/config), minus Velero-only kinds (datauploads):
// dependencies first (CRDs before their CRs, namespaces before namespaced objects, storage before
// claims, service accounts before the secrets that hold their tokens, config before pods, pods and
// replicasets before controllers adopt them, endpoints before services); cluster-api/tanzu/carvel
// objects that reference anything go last. Added to Velero's: the classes pods are admitted with
// (priorityclasses, runtimeclasses: a pod naming a missing one is refused), and ClusterRoles then
// their bindings, so a restored workload has its permissions when it starts.
export const DEFAULT_RESTORE_PRIORITIES: RestorePriorities = Object.freeze({
  high: Object.freeze([
    'customresourcedefinitions',
    'namespaces',
    'storageclasses',
    'volumesnapshotclass.snapshot.storage.k8s.io',
    'volumesnapshotcontents.snapshot.storage.k8s.io',
    'volumesnapshots.snapshot.storage.k8s.io',
    'persistentvolumes',
    'persistentvolumeclaims',
    'serviceaccounts',
    'secrets',
    'configmaps',
    'limitranges',
    'priorityclasses',
    'runtimeclasses',
    'clusterroles',
    'clusterrolebindings',
    'pods',
    'replicasets.apps',
    'clusterclasses.cluster.x-k8s.io',
    'endpoints',
    'services',
  ]),
  low: Object.freeze([
    'clusterbootstraps.run.tanzu.vmware.com',
    'clusters.cluster.x-k8s.io',
    'clusterresourcesets.addons.cluster.x-k8s.io',
    'apps.kappctrl.k14s.io',
    'packageinstalls.packaging.carvel.dev',
  ]),
});

export const DEFAULT_CONFIG: Readonly<ServerConfig> = Object.freeze({
  kubeconfig: '',
  namespace: 'stowage',
  pluginDir: '/plugins',
  logLevel: 'info',
  logFormat: 'text',
  clientQps: 100,
  clientBurst: 200,
  clientPageSize: 500,
  defaultBackupTtl: 720 * 3_600_000,
  backupSyncPeriod: 60_000,
  storeValidationFrequency: 60_000,
  garbageCollectionFrequency: 3_600_000,
  restoreResourcePriorities: DEFAULT_RESTORE_PRIORITIES,
  metricsAddress: ':8085',
  downloadAddress: '',
  downloadUrl: '',
  concurrentBackups: 1,
  concurrentRestores: 1,
  defaultBackupStorageLocation: 'default',
  pluginStartTimeout: 30_000,
  pluginIdleTimeout: 300_000,
  logSpoolDir: '',
  scratchDir: '/scratch',
  terminationGracePeriod: 25_000,
  heapGrowthPercent: 15,
  backupHeapGrowthPercent: 30,
  apiOutageTimeout: 300_000,
  objectStoreOutageTimeout: 120_000,
  // Every LIST page in flight is promoted while the backup works through it (cli/heap.ts): 1 MiB
  // pages keep a 50k-object backup's peak near a 5k one's, 2 MiB ones do not; 512 KiB ones made a
  // 10k-object backup 0.2-0.4 s slower (more LISTs under the client's QPS; bench/README.md, session 20).
  clientPageBytes: 1024 * 1024,
  maxItemBytes: 8 * 1024 * 1024,
  csiSnapshotDeleteTimeout: 120_000,
  trustMode: 'requester',
  webhookAddress: ':9443',
  webhookUrl: '',
  webhookConfigurationName: 'stowage',
  webhookCertificateLifetime: 365 * 86_400_000,
  webhookProbeInterval: 30_000,
  downloadUrlTtl: 300_000,
} satisfies ServerConfig);

export type ConfigKey = keyof ServerConfig;
type ValueKind = 'string' | 'path' | 'level' | 'format' | 'float' | 'int' | 'duration' | 'priorities' | 'address' | 'name' | 'trust-mode';

export interface ConfigFlag {
  key: ConfigKey;
  /** Command-line flag without dashes (`client-qps`). */
  flag: string;
  /** Environment variable (`STOWAGE_CLIENT_QPS`). */
  env: string;
  kind: ValueKind;
  /** Smallest number allowed (numbers and durations). */
  min?: number;
  description: string;
}

const flag = (key: ConfigKey, name: string, kind: ValueKind, description: string, min?: number): ConfigFlag => {
  const f: ConfigFlag = { key, flag: name, env: `STOWAGE_${name.toUpperCase().replace(/-/g, '_')}`, kind, description };
  if (min !== undefined) f.min = min;
  return f;
};

/** Every configuration field with its flag and environment variable. */
export const CONFIG_FLAGS: readonly ConfigFlag[] = [
  flag('kubeconfig', 'kubeconfig', 'path', 'Path to a kubeconfig file (default: in-cluster config)'),
  flag('namespace', 'namespace', 'name', 'Namespace the server runs in and watches for its resources'),
  flag('pluginDir', 'plugin-dir', 'path', 'Directory containing plugin executables'),
  flag('logLevel', 'log-level', 'level', 'Lowest level logged: error, warn, info, debug'),
  flag('logFormat', 'log-format', 'format', 'Server log format: text or json'),
  flag('clientQps', 'client-qps', 'float', 'Requests per second to the Kubernetes API once the burst is used', 0.001),
  flag('clientBurst', 'client-burst', 'int', 'Requests to the Kubernetes API allowed in a burst', 1),
  flag('clientPageSize', 'client-page-size', 'int', 'Page size of LIST requests during a backup; 0 disables paging', 0),
  flag('defaultBackupTtl', 'default-backup-ttl', 'duration', 'TTL of backups that do not set one', 0),
  flag('backupSyncPeriod', 'backup-sync-period', 'duration', 'How often backups in storage are synced into the cluster; 0s disables', 0),
  flag('storeValidationFrequency', 'store-validation-frequency', 'duration', 'Default interval for validating backup storage locations; 0s disables', 0),
  flag('garbageCollectionFrequency', 'garbage-collection-frequency', 'duration', 'How often expired backups are deleted', 1),
  flag('restoreResourcePriorities', 'restore-resource-priorities', 'priorities', 'Restore order: high-priority resources, "-", low-priority resources'),
  flag('metricsAddress', 'metrics-address', 'address', 'Address serving /metrics, /healthz and /readyz'),
  flag('downloadAddress', 'download-address', 'address', 'Address serving downloads the store cannot presign (default :8086 in a pod, else a free loopback port)'),
  flag('downloadUrl', 'download-url', 'string', 'Base URL clients reach the download address at (default derived from the pod IP and port)'),
  flag('concurrentBackups', 'concurrent-backups', 'int', 'Backups run at the same time; backups whose namespaces overlap (or both including cluster-scoped resources) queue whatever the limit', 1),
  flag('concurrentRestores', 'concurrent-restores', 'int', 'Restores run at the same time; restores writing to a shared target namespace (or both restoring cluster-scoped resources) queue whatever the limit', 1),
  flag('defaultBackupStorageLocation', 'default-backup-storage-location', 'name', 'Location used when a backup names none and no location is marked default'),
  flag('pluginStartTimeout', 'plugin-start-timeout', 'duration', 'How long a plugin may take to start and hand-shake', 1),
  flag('pluginIdleTimeout', 'plugin-idle-timeout', 'duration', 'How long an unused plugin process is kept running', 1),
  flag('logSpoolDir', 'log-spool-dir', 'path', 'Directory keeping run logs whose upload failed (default <scratch-dir>/log-spool)'),
  flag('scratchDir', 'scratch-dir', 'path', 'Directory for run logs and other transient files'),
  flag('terminationGracePeriod', 'termination-grace-period', 'duration', 'How long in-flight work may take to finish after SIGTERM', 0),
  flag('heapGrowthPercent', 'heap-growth-percent', 'int', 'Growth of the old generation between full garbage collections, in percent of what survived the last (like Go\'s GOGC), while no backup runs; 0 keeps V8\'s own', 0),
  flag('backupHeapGrowthPercent', 'backup-heap-growth-percent', 'int', 'The same growth while at least one backup runs (a backup is CPU-bound: fewer collections); 0 keeps V8\'s own', 0),
  flag('apiOutageTimeout', 'api-outage-timeout', 'duration', 'How long runs wait out an unreachable Kubernetes API (retrying with backoff) before failing', 1),
  flag('objectStoreOutageTimeout', 'object-store-outage-timeout', 'duration', 'How long uploads and downloads ride out an unreachable object store (retrying with backoff) before failing', 0),
  flag('clientPageBytes', 'client-page-bytes', 'int', 'Byte budget of one LIST page during a backup: pages stop short of it as well as of --client-page-size items; 0 disables', 0),
  flag('maxItemBytes', 'max-item-bytes', 'int', 'Largest single item read from a backup archive; a bigger item fails alone, named', 1024),
  flag('csiSnapshotDeleteTimeout', 'csi-snapshot-delete-timeout', 'duration', 'How long deleting a backup waits for each of its CSI snapshots to go before naming it in the request\'s errors', 1000),
  flag('trustMode', 'trust-mode', 'trust-mode', 'Whose rights runs use: requester (the user who created the Backup/Restore, recorded by the admission webhook) or cluster-admin (the server\'s own, for single-operator clusters)'),
  flag('webhookAddress', 'webhook-address', 'string', 'Address of the admission webhook that records who created each run (TLS); empty serves none (cluster-admin mode only)'),
  flag('webhookUrl', 'webhook-url', 'string', 'URL the API server reaches the webhook at, for a server running outside the cluster (default: the Service in the webhook configuration)'),
  flag('webhookConfigurationName', 'webhook-configuration-name', 'name', 'MutatingWebhookConfiguration the server publishes its CA bundle into'),
  // At least 30 s: renewal and the CA bundle reaching the API server need some of the last third.
  flag('webhookCertificateLifetime', 'webhook-certificate-lifetime', 'duration', 'Lifetime of the admission webhook\'s certificate; renewed while the server runs once a third of it is left', 30_000),
  flag('webhookProbeInterval', 'webhook-probe-interval', 'duration', 'How often the server checks (by a dry-run create) that its admission webhook configuration exists, selects its namespace and points at it; no backup or restore starts while not', 1),
  flag('downloadUrlTtl', 'download-url-ttl', 'duration', 'How long a download link stays valid', 1000),
];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the `--restore-resource-priorities` value: a comma list, optionally split by one "-"
 * into high and low priorities. Throws with every problem found.
 */
export function parseRestorePriorities(text: string, what = 'restore-resource-priorities'): RestorePriorities {
  const problems: string[] = [];
  const entries = text.split(',').map((s) => s.trim().toLowerCase());
  const high: string[] = [];
  const low: string[] = [];
  let seenSeparator = false;
  const seen = new Set<string>();
  if (text.trim() === '') return { high, low };
  entries.forEach((e, i) => {
    if (e === '') {
      problems.push(`${what}: entry ${i + 1} is empty`);
      return;
    }
    if (e === '-') {
      if (seenSeparator) problems.push(`${what}: "-" may appear only once (entry ${i + 1})`);
      seenSeparator = true;
      return;
    }
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(e)) {
      problems.push(`${what}: "${e}" is not a resource name like "deployments.apps"`);
      return;
    }
    if (seen.has(e)) {
      problems.push(`${what}: "${e}" is listed twice`);
      return;
    }
    seen.add(e);
    (seenSeparator ? low : high).push(e);
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { high, low };
}

/** The flag form of priorities: `a,b,-,c` (no "-" when there are no low priorities). */
export function formatRestorePriorities(p: RestorePriorities): string {
  return p.low.length > 0 ? [...p.high, '-', ...p.low].join(',') : p.high.join(',');
}

function parseValue(f: ConfigFlag, raw: string, source: string): { value: ServerConfig[ConfigKey] } | { error: string } {
  const v = raw.trim();
  const where = `${source} "${raw}"`;
  try {
    switch (f.kind) {
      case 'string':
      case 'path':
        return { value: v };
      case 'name':
        if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(v) || v.length > 253)
          return { error: `${where} is not a valid Kubernetes name` };
        return { value: v };
      case 'level':
        if (!(LOG_LEVEL_NAMES as readonly string[]).includes(v))
          return { error: `${where} is not a log level (use ${LOG_LEVEL_NAMES.join(', ')})` };
        return { value: v as ConfigLogLevel };
      case 'format':
        if (v !== 'text' && v !== 'json') return { error: `${where} is not a log format (use text or json)` };
        return { value: v };
      case 'float':
      case 'int': {
        const n = Number(v);
        if (v === '' || !Number.isFinite(n)) return { error: `${where} is not a number` };
        if (f.kind === 'int' && !Number.isInteger(n)) return { error: `${where} is not a whole number` };
        if (f.min !== undefined && n < f.min) return { error: `${where} must be at least ${f.min}` };
        return { value: n };
      }
      case 'duration': {
        const ms = parseDuration(v, `${source}`);
        if (f.min !== undefined && ms < f.min)
          return { error: `${where} must be ${f.min === 0 ? 'zero or more' : f.min <= 1000 ? 'more than zero' : `at least ${formatDuration(f.min)}`}` };
        return { value: ms };
      }
      case 'priorities':
        return { value: parseRestorePriorities(v, source) };
      case 'address':
        parseListenAddress(v, source);
        return { value: v };
      case 'trust-mode':
        if (!(TRUST_MODES as readonly string[]).includes(v)) return { error: `${where} is not a trust mode (use ${TRUST_MODES.join(' or ')})` };
        return { value: v as TrustMode };
    }
  } catch (err) {
    if (err instanceof ConfigError) return { error: err.problems.join('; ') };
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Applies string overrides (from flags or the environment) on top of `base`. Keys are config
 * keys; `describe` names each value's source in messages. Throws ConfigError listing every problem.
 */
export function applyConfigOverrides(
  base: ServerConfig,
  overrides: Partial<Record<ConfigKey, string>>,
  describe: (f: ConfigFlag) => string = (f) => `--${f.flag}`,
): ServerConfig {
  const out: ServerConfig = { ...base };
  const problems: string[] = [];
  for (const f of CONFIG_FLAGS) {
    const raw = overrides[f.key];
    if (raw === undefined) continue;
    const r = parseValue(f, raw, describe(f));
    if ('error' in r) problems.push(r.error);
    else (out as unknown as Record<ConfigKey, unknown>)[f.key] = r.value;
  }
  problems.push(...webhookProblems(out, describe));
  if (problems.length > 0) throw new ConfigError(problems);
  return resolveConfig(out);
}

/** The webhook flags checked together: requester mode cannot run without the webhook that records requesters. */
function webhookProblems(c: ServerConfig, describe: (f: ConfigFlag) => string): string[] {
  const named = (key: ConfigKey): string => {
    const f = CONFIG_FLAGS.find((x) => x.key === key);
    return f !== undefined ? describe(f) : key;
  };
  const problems: string[] = [];
  if (c.webhookAddress.trim() === '') {
    if (c.trustMode === 'requester') problems.push(`${named('webhookAddress')} is empty, but trust mode requester needs the admission webhook to record who created each run (give an address like ":9443", or use --trust-mode cluster-admin)`);
  } else {
    try {
      parseListenAddress(c.webhookAddress, named('webhookAddress'));
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  if (c.webhookUrl !== '' && !/^https:\/\/[^/\s]+/.test(c.webhookUrl)) problems.push(`${named('webhookUrl')} "${c.webhookUrl}" is not an https:// URL (the API server calls webhooks over TLS only)`);
  return problems;
}

/** Reads every STOWAGE_* variable that is set (empty counts as unset) over the defaults. */
export function configFromEnv(env: Readonly<Record<string, string | undefined>>, base: ServerConfig = DEFAULT_CONFIG): ServerConfig {
  const overrides: Partial<Record<ConfigKey, string>> = {};
  for (const f of CONFIG_FLAGS) {
    const v = env[f.env];
    if (v !== undefined && v !== '') overrides[f.key] = v;
  }
  return applyConfigOverrides(base, overrides, (f) => f.env);
}

/** Fills derived defaults (the spool directory under the scratch directory). */
export function resolveConfig(c: ServerConfig): ServerConfig {
  return c.logSpoolDir === '' ? { ...c, logSpoolDir: path.join(c.scratchDir, 'log-spool') } : c;
}
