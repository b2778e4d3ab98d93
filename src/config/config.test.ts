import { describe, expect, it } from 'vitest';
import {
  CONFIG_FLAGS,
  ConfigError,
  DEFAULT_CONFIG,
  DEFAULT_RESTORE_PRIORITIES,
  applyConfigOverrides,
  configFromEnv,
  formatRestorePriorities,
  parseRestorePriorities,
  resolveConfig,
  type ServerConfig,
} from './config.js';

describe('defaults', () => {
  it('match the documented values', () => {
    expect(DEFAULT_CONFIG).toMatchObject({
      kubeconfig: '',
      namespace: 'stowage',
      logLevel: 'info',
      logFormat: 'text',
      clientQps: 100,
      clientBurst: 200,
      clientPageSize: 500,
      clientPageBytes: 1024 * 1024,
      heapGrowthPercent: 15,
      backupHeapGrowthPercent: 30,
      defaultBackupTtl: 720 * 3600 * 1000,
      backupSyncPeriod: 60_000,
      garbageCollectionFrequency: 3_600_000,
      metricsAddress: ':8085',
      concurrentBackups: 1,
      defaultBackupStorageLocation: 'default',
    });
  });

  it('restore priorities put dependencies first and the cluster-api tail last', () => {
    const { high, low } = DEFAULT_RESTORE_PRIORITIES;
    const before = (a: string, b: string) => expect(high.indexOf(a)).toBeLessThan(high.indexOf(b));
    expect(high[0]).toBe('customresourcedefinitions');
    expect(high[1]).toBe('namespaces');
    before('storageclasses', 'persistentvolumes');
    before('persistentvolumes', 'persistentvolumeclaims');
    before('persistentvolumeclaims', 'pods');
    before('serviceaccounts', 'secrets');
    before('secrets', 'pods');
    before('configmaps', 'pods');
    before('limitranges', 'pods');
    before('priorityclasses', 'pods');
    before('runtimeclasses', 'pods');
    before('clusterroles', 'clusterrolebindings');
    before('clusterrolebindings', 'pods');
    before('pods', 'replicasets.apps');
    before('endpoints', 'services');
    expect(low.slice(0, 3)).toEqual([
      'clusterbootstraps.run.tanzu.vmware.com',
      'clusters.cluster.x-k8s.io',
      'clusterresourcesets.addons.cluster.x-k8s.io',
    ]);
    expect(Object.isFrozen(high)).toBe(true);
  });

  it('every flag has a STOWAGE_ variable derived from its name, and every field a flag', () => {
    for (const f of CONFIG_FLAGS) expect(f.env).toBe(`STOWAGE_${f.flag.toUpperCase().replaceAll('-', '_')}`);
    expect(CONFIG_FLAGS.map((f) => f.key).sort()).toEqual(Object.keys(DEFAULT_CONFIG).sort());
    expect(CONFIG_FLAGS.find((f) => f.key === 'clientQps')).toMatchObject({ flag: 'client-qps', env: 'STOWAGE_CLIENT_QPS' });
  });
});

describe('parseRestorePriorities', () => {
  it('splits high and low priorities at "-"', () => {
    expect(parseRestorePriorities('namespaces, Pods ,-,clusters.cluster.x-k8s.io')).toEqual({
      high: ['namespaces', 'pods'],
      low: ['clusters.cluster.x-k8s.io'],
    });
    expect(parseRestorePriorities('a,b')).toEqual({ high: ['a', 'b'], low: [] });
    expect(parseRestorePriorities('-,z')).toEqual({ high: [], low: ['z'] });
    expect(parseRestorePriorities('')).toEqual({ high: [], low: [] });
  });

  it('reports every problem', () => {
    let err: unknown;
    try {
      parseRestorePriorities('a,,b,-,c,-,a,bad/name');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'restore-resource-priorities: entry 2 is empty',
      'restore-resource-priorities: "-" may appear only once (entry 6)',
      'restore-resource-priorities: "a" is listed twice',
      'restore-resource-priorities: "bad/name" is not a resource name like "deployments.apps"',
    ]);
  });

  it('round-trips with formatRestorePriorities', () => {
    const text = formatRestorePriorities(DEFAULT_RESTORE_PRIORITIES);
    expect(text).toContain(',services,-,clusterbootstraps.run.tanzu.vmware.com,');
    expect(parseRestorePriorities(text)).toEqual(DEFAULT_RESTORE_PRIORITIES);
    expect(formatRestorePriorities({ high: ['a'], low: [] })).toBe('a');
  });
});

describe('configFromEnv', () => {
  it('returns the resolved defaults for an empty environment', () => {
    const c = configFromEnv({});
    expect(c).toEqual({ ...DEFAULT_CONFIG, logSpoolDir: '/scratch/log-spool' });
  });

  it('maps every STOWAGE_ variable to its field', () => {
    const env = {
      STOWAGE_KUBECONFIG: '/home/me/.kube/config',
      STOWAGE_NAMESPACE: 'backup-system',
      STOWAGE_PLUGIN_DIR: '/opt/plugins',
      STOWAGE_LOG_LEVEL: 'debug',
      STOWAGE_LOG_FORMAT: 'json',
      STOWAGE_CLIENT_QPS: '12.5',
      STOWAGE_CLIENT_BURST: '30',
      STOWAGE_CLIENT_PAGE_SIZE: '0',
      STOWAGE_DEFAULT_BACKUP_TTL: '24h',
      STOWAGE_BACKUP_SYNC_PERIOD: '0s',
      STOWAGE_STORE_VALIDATION_FREQUENCY: '30s',
      STOWAGE_GARBAGE_COLLECTION_FREQUENCY: '30m',
      STOWAGE_RESTORE_RESOURCE_PRIORITIES: 'namespaces,pods,-,widgets.example.com',
      STOWAGE_METRICS_ADDRESS: '127.0.0.1:9100',
      STOWAGE_DOWNLOAD_ADDRESS: ':9000',
      STOWAGE_DOWNLOAD_URL: 'https://stowage.example',
      STOWAGE_CONCURRENT_BACKUPS: '3',
      STOWAGE_CONCURRENT_RESTORES: '2',
      STOWAGE_DEFAULT_BACKUP_STORAGE_LOCATION: 'primary',
      STOWAGE_PLUGIN_START_TIMEOUT: '10s',
      STOWAGE_PLUGIN_IDLE_TIMEOUT: '1m',
      STOWAGE_LOG_SPOOL_DIR: '/var/spool/stowage',
      STOWAGE_SCRATCH_DIR: '/tmp/scratch',
      STOWAGE_TERMINATION_GRACE_PERIOD: '1m30s',
      STOWAGE_HEAP_GROWTH_PERCENT: '0',
      STOWAGE_BACKUP_HEAP_GROWTH_PERCENT: '100',
      STOWAGE_API_OUTAGE_TIMEOUT: '90s',
      STOWAGE_OBJECT_STORE_OUTAGE_TIMEOUT: '0s',
      STOWAGE_CLIENT_PAGE_BYTES: '1048576',
      STOWAGE_MAX_ITEM_BYTES: '67108864',
      STOWAGE_CSI_SNAPSHOT_DELETE_TIMEOUT: '30s',
      STOWAGE_TRUST_MODE: 'cluster-admin',
      STOWAGE_WEBHOOK_ADDRESS: '127.0.0.1:0',
      STOWAGE_WEBHOOK_URL: 'https://127.0.0.1:9443',
      STOWAGE_WEBHOOK_CONFIGURATION_NAME: 'stowage-test',
      STOWAGE_WEBHOOK_CERTIFICATE_LIFETIME: '2160h',
      STOWAGE_WEBHOOK_PROBE_INTERVAL: '45s',
      STOWAGE_DOWNLOAD_URL_TTL: '2m',
      UNRELATED: 'x',
    };
    const expected: ServerConfig = {
      kubeconfig: '/home/me/.kube/config',
      namespace: 'backup-system',
      pluginDir: '/opt/plugins',
      logLevel: 'debug',
      logFormat: 'json',
      clientQps: 12.5,
      clientBurst: 30,
      clientPageSize: 0,
      defaultBackupTtl: 86_400_000,
      backupSyncPeriod: 0,
      storeValidationFrequency: 30_000,
      garbageCollectionFrequency: 1_800_000,
      restoreResourcePriorities: { high: ['namespaces', 'pods'], low: ['widgets.example.com'] },
      metricsAddress: '127.0.0.1:9100',
      downloadAddress: ':9000',
      downloadUrl: 'https://stowage.example',
      concurrentBackups: 3,
      concurrentRestores: 2,
      defaultBackupStorageLocation: 'primary',
      pluginStartTimeout: 10_000,
      pluginIdleTimeout: 60_000,
      logSpoolDir: '/var/spool/stowage',
      scratchDir: '/tmp/scratch',
      terminationGracePeriod: 90_000,
      heapGrowthPercent: 0,
      backupHeapGrowthPercent: 100,
      apiOutageTimeout: 90_000,
      objectStoreOutageTimeout: 0,
      clientPageBytes: 1_048_576,
      maxItemBytes: 67_108_864,
      csiSnapshotDeleteTimeout: 30_000,
      trustMode: 'cluster-admin',
      webhookAddress: '127.0.0.1:0',
      webhookUrl: 'https://127.0.0.1:9443',
      webhookConfigurationName: 'stowage-test',
      webhookCertificateLifetime: 90 * 86_400_000,
      webhookProbeInterval: 45_000,
      downloadUrlTtl: 120_000,
    };
    expect(configFromEnv(env)).toEqual(expected);
    // The test above covers every flag.
    expect(CONFIG_FLAGS.every((f) => f.env in env)).toBe(true);
  });

  it('puts the spool under the scratch directory unless set', () => {
    expect(configFromEnv({ STOWAGE_SCRATCH_DIR: '/data' }).logSpoolDir).toBe('/data/log-spool');
    expect(resolveConfig({ ...DEFAULT_CONFIG, logSpoolDir: '/x' }).logSpoolDir).toBe('/x');
  });

  it('treats empty variables as unset', () => {
    expect(configFromEnv({ STOWAGE_CLIENT_QPS: '' }).clientQps).toBe(100);
  });

  it('lists every bad value, naming the variable', () => {
    let err: unknown;
    try {
      configFromEnv({
        STOWAGE_LOG_LEVEL: 'loud',
        STOWAGE_LOG_FORMAT: 'xml',
        STOWAGE_CLIENT_QPS: 'fast',
        STOWAGE_CLIENT_BURST: '2.5',
        STOWAGE_CLIENT_PAGE_SIZE: '-1',
        STOWAGE_DEFAULT_BACKUP_TTL: '30d',
        STOWAGE_GARBAGE_COLLECTION_FREQUENCY: '0s',
        STOWAGE_METRICS_ADDRESS: '8085',
        STOWAGE_NAMESPACE: 'Bad_NS',
        STOWAGE_RESTORE_RESOURCE_PRIORITIES: 'a,-,b,-',
        STOWAGE_CONCURRENT_BACKUPS: '0',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'STOWAGE_NAMESPACE "Bad_NS" is not a valid Kubernetes name',
      'STOWAGE_LOG_LEVEL "loud" is not a log level (use error, warn, info, http, verbose, debug, silly)',
      'STOWAGE_LOG_FORMAT "xml" is not a log format (use text or json)',
      'STOWAGE_CLIENT_QPS "fast" is not a number',
      'STOWAGE_CLIENT_BURST "2.5" is not a whole number',
      'STOWAGE_CLIENT_PAGE_SIZE "-1" must be at least 0',
      'STOWAGE_DEFAULT_BACKUP_TTL "30d" is not a duration like 720h0m0s: unknown unit "d" (use h, m, s, ms, us or ns)',
      'STOWAGE_GARBAGE_COLLECTION_FREQUENCY "0s" must be more than zero',
      'STOWAGE_RESTORE_RESOURCE_PRIORITIES: "-" may appear only once (entry 4)',
      'STOWAGE_METRICS_ADDRESS "8085" is not an address like ":8085" or "127.0.0.1:8085"',
      'STOWAGE_CONCURRENT_BACKUPS "0" must be at least 1',
    ]);
    expect((err as Error).message).toMatch(/^invalid configuration: STOWAGE_NAMESPACE "Bad_NS" is not a valid Kubernetes name; /);
  });
});

describe('applyConfigOverrides', () => {
  it('names flags in messages by default and leaves the base untouched', () => {
    const base = configFromEnv({});
    expect(() => applyConfigOverrides(base, { clientBurst: 'x' })).toThrow('--client-burst "x" is not a number');
    const c = applyConfigOverrides(base, { logLevel: 'warn', defaultBackupTtl: '1h' });
    expect(c.logLevel).toBe('warn');
    expect(c.defaultBackupTtl).toBe(3_600_000);
    expect(base.logLevel).toBe('info');
  });

  it('takes a webhook certificate lifetime of 30 s or more, and defaults to a year', () => {
    expect(DEFAULT_CONFIG.webhookCertificateLifetime).toBe(365 * 86_400_000);
    expect(configFromEnv({ STOWAGE_WEBHOOK_CERTIFICATE_LIFETIME: '30s' }).webhookCertificateLifetime).toBe(30_000);
    expect(() => configFromEnv({ STOWAGE_WEBHOOK_CERTIFICATE_LIFETIME: '29s' })).toThrow('STOWAGE_WEBHOOK_CERTIFICATE_LIFETIME "29s" must be at least 30s');
  });

  it('probes the webhook every 30 s by default, and takes no interval of zero', () => {
    expect(DEFAULT_CONFIG.webhookProbeInterval).toBe(30_000);
    expect(configFromEnv({ STOWAGE_WEBHOOK_PROBE_INTERVAL: '200ms' }).webhookProbeInterval).toBe(200);
    expect(() => configFromEnv({ STOWAGE_WEBHOOK_PROBE_INTERVAL: '0s' })).toThrow('STOWAGE_WEBHOOK_PROBE_INTERVAL "0s" must be more than zero');
  });

  it('checks the webhook flags together with the trust mode', () => {
    const base = configFromEnv({});
    expect(() => applyConfigOverrides(base, { webhookAddress: '' })).toThrow('--webhook-address is empty, but trust mode requester needs the admission webhook to record who created each run (give an address like ":9443", or use --trust-mode cluster-admin)');
    expect(applyConfigOverrides(base, { webhookAddress: '', trustMode: 'cluster-admin' }).webhookAddress).toBe('');
    expect(() => applyConfigOverrides(base, { webhookAddress: '9443' })).toThrow('--webhook-address "9443" is not an address like ":8085" or "127.0.0.1:8085"');
    expect(() => applyConfigOverrides(base, { webhookUrl: 'http://127.0.0.1:9443/mutate' })).toThrow('--webhook-url "http://127.0.0.1:9443/mutate" is not an https:// URL (the API server calls webhooks over TLS only)');
    expect(applyConfigOverrides(base, { webhookAddress: '127.0.0.1:0', webhookUrl: 'https://127.0.0.1:9443/mutate' }).webhookUrl).toBe('https://127.0.0.1:9443/mutate');
  });
});
