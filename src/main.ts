// Composition root of `stowage server`: configuration -> logger -> kube client -> plugin pool ->
// informers -> controllers, started only while this replica holds the leader Lease.
// SIGTERM: stop taking work, let running backups/restores finish within the grace period (what
// does not finish is marked Failed by its controller), stop plugins, release the lease, exit 0.
import fs from 'node:fs';
import path from 'node:path';
import { GROUP, KINDS, RESOURCES, crdName, type StowageKind } from './apis/v1/index.js';
import { DEFAULT_CONFIG, type ServerConfig } from './config/index.js';
import { backupController } from './controller/backup.js';
import { backupStorageLocationController } from './controller/backupStorageLocation.js';
import { backupSyncController } from './controller/backupSync.js';
import { deleteBackupRequestController } from './controller/deleteBackupRequest.js';
import { downloadRequestController } from './controller/downloadRequest.js';
import { gcController } from './controller/gc.js';
import { serverStatusRequestController } from './controller/serverStatusRequest.js';
import { volumeSnapshotLocationController } from './controller/volumeSnapshotLocation.js';
import { restoreController } from './controller/restore.js';
import { restoreArtifactsController } from './controller/restoreArtifacts.js';
import { scheduleController } from './controller/schedule.js';
import { createRunRegistry, type ControllerContext, type ControllerDefinition, type RunCounts } from './controller/run/context.js';
import { CUSTOM_RESOURCE_DEFINITIONS, createDynamicClient, createEventRecorder, isNotFound, loadKubeConfig, type DynamicClient, type KubeObject } from './kube/index.js';
import { LogSpool, createLogTail, createServerLogger, type LogTail } from './logging/index.js';
import { createMetrics, startMetricsServer, type MetricsServer, type StowageMetrics } from './metrics/index.js';
import { PROVIDER_ALIASES } from './plugin/builtin/providers.js';
import { createPluginPool, removeAllCredentialFiles, type PluginPool } from './plugin/host/index.js';
import { createInformer, startController, startLeaderElection, type Controller, type Informer, type LeaderElector } from './runtime/index.js';
import { systemClock, type TimerClock } from './util/clock.js';
import { errorMessage } from './util/errors.js';
import { authorityFor } from './auth/index.js';
import { startAdmissionWebhook, startWebhookHealth, type AdmissionWebhook, type WebhookHealth } from './webhook/index.js';
import type { Writable } from 'node:stream';
import type winston from 'winston';


export const SERVER_VERSION = '0.1.0';

/** Controllers beyond the core ones register here (one file each under controller/). */
export type ControllerFactory = (ctx: ControllerContext) => ControllerDefinition;

export interface ServerOptions {
  config: ServerConfig;
  /** Command line that serves the built-in plugins (`stowage run-plugins`). */
  selfCommand: string[];
  controllers?: ControllerFactory[];
  /** Told how many backups and restores run each time one starts or ends (the CLI's heap policy). */
  onRunsChanged?: (runs: RunCounts) => void;
}

/** What composeServer builds the server from besides its configuration. */
export interface ServerDeps {
  /** Times the API outage window, the leader lease, retries and TTLs (runServer: the system clock). */
  clock: TimerClock;
  /** Command line that serves the built-in plugins (`stowage run-plugins`). */
  selfCommand: string[];
  controllers?: ControllerFactory[];
  /** Where the server log goes; default stdout. */
  logStream?: Writable;
  /** ServerOptions.onRunsChanged; in-process servers (tests) leave it out and never touch V8's flags. */
  onRunsChanged?: (runs: RunCounts) => void;
}

export interface ComposedServer {
  /** Resolves with the exit code once the server has stopped (or failed to start: then at once). */
  readonly exited: Promise<number>;
  /** Stops taking work, lets runs finish within the grace period and shuts down; resolves the exit code. */
  stop(): Promise<number>;
}

/** `stowage server`: the server composed with the system clock, stopped by SIGTERM or SIGINT. */
export async function runServer(opts: ServerOptions): Promise<number> {
  const server = await composeServer(opts.config, {
    clock: systemClock, selfCommand: opts.selfCommand, controllers: opts.controllers ?? [], ...(opts.onRunsChanged !== undefined ? { onRunsChanged: opts.onRunsChanged } : {}),
  });
  const stop = (): void => void server.stop();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return server.exited;
}

/** The controllers every server runs; ServerDeps.controllers come after them. */
const CORE_CONTROLLERS: readonly ControllerFactory[] = [
  backupStorageLocationController, backupController, restoreController,
  scheduleController, gcController, deleteBackupRequestController, backupSyncController,
  downloadRequestController, serverStatusRequestController, restoreArtifactsController, volumeSnapshotLocationController,
];

/**
 * Builds and starts the server from its parts; a start-up failure is logged and ends `exited` at once.
 * The parts come up in order: the API and its CRDs, admission, stores and plugins, the controllers'
 * context, the metrics endpoint, then leader election, which starts the controllers.
 */
export async function composeServer(config: ServerConfig, deps: ServerDeps): Promise<ComposedServer> {
  const failed = (code: number): ComposedServer => ({ exited: Promise.resolve(code), stop: () => Promise.resolve(code) });
  const { clock } = deps;
  const logTail = createLogTail();
  const logger = createServerLogger({ level: config.logLevel, format: config.logFormat, tail: logTail, ...(deps.logStream !== undefined ? { stream: deps.logStream } : {}) });
  const kc = loadKubeConfig(config.kubeconfig === '' ? undefined : config.kubeconfig);
  // Every request of the controllers and their runs waits out an unreachable API for up to
  // apiOutageTimeout (kube/outage.ts) rather than failing the run, and status writes of our own
  // resources as long as it takes; list pages keep to clientPageBytes.
  const client = createDynamicClient(kc, {
    qps: config.clientQps, burst: config.clientBurst, userAgent: `stowage/${SERVER_VERSION}`,
    outageTimeoutMs: config.apiOutageTimeout, pageBytes: config.clientPageBytes, recordGroups: [GROUP], clock,
  });
  const crdsFailure = await checkCrds(client, logger);
  if (crdsFailure !== undefined) return failed(crdsFailure);
  logTrustMode(config, logger);

  // Its own client: admission has 10 s, and must not queue behind a backup's rate-limited LISTs
  // nor wait out an API outage.
  const webhookClient = createDynamicClient(kc, { qps: 20, burst: 40, userAgent: `stowage/${SERVER_VERSION} webhook` }).withOutageTimeout(0);
  const webhook = await startAdmission(config, webhookClient, logger, clock);
  if (typeof webhook === 'number') return failed(webhook);
  const stores = await startStores(config, deps, logger, webhookClient, webhook);

  const shutdown = new AbortController();
  const { ctx, informers } = controllerContext({ config, client, logger, clock, logTail, webhook, stores, shutdown: shutdown.signal, onRunsChanged: deps.onRunsChanged });
  const definitions = [...CORE_CONTROLLERS, ...(deps.controllers ?? [])].map((f) => f(ctx));
  const leader = { leading: false };
  const metricsServer = await serveMetrics(config, stores.metrics, shutdown.signal, informers, leader, logger);
  // The Lease has its own client: renewals must not queue behind a backup's rate-limited LISTs.
  const leaseClient = createDynamicClient(kc, { qps: 5, burst: 10, userAgent: `stowage/${SERVER_VERSION} leader-election`, clock });
  return lead({
    config, logger, clock, client, leaseClient, webhookClient, webhook, ...stores, informers, metricsServer, ctx, definitions, shutdown, leader,
  });
}

/**
 * Fails at once, with the fix, when the CRDs are missing (rather than informers retrying forever);
 * an API that does not answer at start-up fails at once too, so the pod restarts with backoff.
 * Returns the exit code of a failure, undefined when every CRD is there.
 */
async function checkCrds(client: DynamicClient, logger: winston.Logger): Promise<number | undefined> {
  for (const def of KINDS) {
    try {
      await client.withOutageTimeout(0).get(CUSTOM_RESOURCE_DEFINITIONS, undefined, crdName(def));
    } catch (err) {
      if (isNotFound(err)) {
        logger.error(`the CustomResourceDefinition ${crdName(def)} is not installed; install the CRDs first: kubectl apply -f deploy/crds/`);
        return 1;
      }
      logger.error(`cannot reach the Kubernetes API: ${errorMessage(err)}`);
      return 1;
    }
  }
  return undefined;
}

function logTrustMode(config: ServerConfig, logger: winston.Logger): void {
  if (config.trustMode === 'cluster-admin') {
    logger.warn('trust mode cluster-admin: every backup and restore runs with the server\'s own rights, whoever created it; anyone who may create Backups, Restores or DownloadRequests in this namespace can read and write whatever the server can (use --trust-mode requester to give each run its creator\'s rights)');
  } else {
    logger.info('trust mode requester: each backup, restore and download acts with the rights of the user who created it (recorded by the admission webhook)');
  }
}

/**
 * Every replica serves admission (followers too: the API server calls whichever the Service
 * picks), before leader election, so creates do not fail while a leader is being chosen.
 * Returns the webhook (undefined in trust mode cluster-admin) or the exit code of a failure.
 */
async function startAdmission(config: ServerConfig, webhookClient: DynamicClient, logger: winston.Logger, clock: TimerClock): Promise<AdmissionWebhook | undefined | number> {
  if (config.trustMode !== 'requester') return undefined;
  if (config.webhookAddress === '') {
    logger.error('--webhook-address is empty, but trust mode requester needs the admission webhook to record who created each run');
    return 2;
  }
  try {
    return await startAdmissionWebhook({
      client: webhookClient, namespace: config.namespace, address: config.webhookAddress, url: config.webhookUrl,
      configurationName: config.webhookConfigurationName, certificateLifetimeMs: config.webhookCertificateLifetime, logger, clock,
    });
  } catch (err) {
    logger.error(`cannot start the admission webhook: ${errorMessage(err)}`);
    webhookClient.close();
    return 1;
  }
}

/** Where runs keep their files and logs, the metrics, the webhook's health and the plugin pool. */
interface Stores {
  scratchDir: string;
  runLogDir: string;
  metrics: StowageMetrics;
  webhookHealth: WebhookHealth | undefined;
  spool: LogSpool;
  plugins: PluginPool;
  /** Counts plugin restarts into the metrics; cleared at shutdown. */
  pluginMetrics: NodeJS.Timeout;
}

async function startStores(
  config: ServerConfig, deps: ServerDeps, logger: winston.Logger, webhookClient: DynamicClient, webhook: AdmissionWebhook | undefined,
): Promise<Stores> {
  const scratchDir = config.scratchDir;
  const runLogDir = path.join(scratchDir, 'run-logs');
  fs.mkdirSync(runLogDir, { recursive: true });
  // Credential files a killed server left for its plugins; each location writes its own again.
  removeAllCredentialFiles(scratchDir);
  const metrics = createMetrics();
  let webhookHealth: WebhookHealth | undefined;
  if (webhook !== undefined) {
    metrics.setWebhookCertificateExpiry(() => webhook.certificateExpiry(), () => deps.clock.now().getTime());
    // Checked before the controllers start and while the server runs; runs are held while it fails.
    webhookHealth = startWebhookHealth({
      client: webhookClient, namespace: config.namespace, configurationName: config.webhookConfigurationName, sealKey: webhook.sealKey,
      intervalMs: config.webhookProbeInterval, logger, report: (ok) => metrics.setWebhookConfigurationOk(ok),
    });
    await webhookHealth.probe();
  }
  const spool = new LogSpool(config.logSpoolDir, logger);
  // The default plugin directory is optional (only images with third-party plugins have it); a
  // directory given explicitly must exist.
  const pluginDirs = config.pluginDir === '' || (config.pluginDir === DEFAULT_CONFIG.pluginDir && !fs.existsSync(config.pluginDir)) ? [] : [config.pluginDir];
  const plugins = await createPluginPool({
    pluginDirs,
    selfCommand: deps.selfCommand,
    logger,
    logLevel: config.logLevel,
    startupTimeoutMs: config.pluginStartTimeout,
    idleTimeoutMs: config.pluginIdleTimeout,
    objectStoreOutageMs: config.objectStoreOutageTimeout,
    providerAliases: PROVIDER_ALIASES,
  });
  const pluginMetrics = countPluginRestarts(plugins, metrics);
  logger.info(`stowage server ${SERVER_VERSION} starting in namespace ${config.namespace} with plugins: ${plugins.plugins.map((p) => `${p.name} (${p.kind})`).join(', ')}`);
  return { scratchDir, runLogDir, metrics, webhookHealth, spool, plugins, pluginMetrics };
}

/** Plugin restarts after a crash, per plugin, as a counter (the pool keeps running totals). */
function countPluginRestarts(plugins: PluginPool, metrics: StowageMetrics): NodeJS.Timeout {
  const seenCrashes = new Map<string, number>();
  const timer = setInterval(() => {
    for (const st of plugins.status()) {
      const delta = st.crashes - (seenCrashes.get(st.executable) ?? 0);
      if (delta <= 0) continue;
      seenCrashes.set(st.executable, st.crashes);
      for (const plugin of st.plugins) metrics.pluginRestartsTotal.inc({ plugin }, delta);
    }
  }, 2000);
  timer.unref();
  return timer;
}

interface ContextParts {
  config: ServerConfig;
  client: DynamicClient;
  logger: winston.Logger;
  clock: TimerClock;
  logTail: LogTail;
  webhook: AdmissionWebhook | undefined;
  stores: Stores;
  shutdown: AbortSignal;
  onRunsChanged?: ((runs: RunCounts) => void) | undefined;
}

/** What every controller is handed, and the informers it creates on demand (one per kind). */
function controllerContext(p: ContextParts): { ctx: ControllerContext; informers: Map<StowageKind, Informer<KubeObject>> } {
  const { config, client, logger, clock, stores } = p;
  const namespace = config.namespace;
  const informers = new Map<StowageKind, Informer<KubeObject>>();
  const informer = <T extends KubeObject>(kind: StowageKind): Informer<T> => {
    let inf = informers.get(kind);
    if (inf === undefined) {
      inf = createInformer(client, RESOURCES[kind], { namespace, logger, name: RESOURCES[kind].resource });
      informers.set(kind, inf);
    }
    return inf as Informer<T>;
  };
  const ctx: ControllerContext = {
    config, namespace, client, logger, metrics: stores.metrics, plugins: stores.plugins, spool: stores.spool, clock, timer: clock,
    runLogDir: stores.runLogDir, scratchDir: stores.scratchDir, logTail: p.logTail,
    serverVersion: SERVER_VERSION,
    // Events are best effort: one that cannot be sent now is dropped, not held through an outage.
    events: createEventRecorder(client.withOutageTimeout(0), { onError: (err) => logger.debug(`could not record an event: ${errorMessage(err)}`) }),
    informer, shutdown: p.shutdown, runs: createRunRegistry(p.onRunsChanged),
    // Impersonate-Uid (Kubernetes 1.22+) always: the documented minimum is 1.37.
    authority: (obj) => authorityFor(config.trustMode, client, obj, { impersonateUid: true, sealKey: p.webhook?.sealKey }),
    ...(stores.webhookHealth !== undefined ? { webhookGate: stores.webhookHealth } : {}),
  };
  return { ctx, informers };
}

async function serveMetrics(
  config: ServerConfig, metrics: StowageMetrics, shutdown: AbortSignal, informers: ReadonlyMap<StowageKind, Informer<KubeObject>>,
  leader: { readonly leading: boolean }, logger: winston.Logger,
): Promise<MetricsServer> {
  const metricsServer = await startMetricsServer({
    address: config.metricsAddress,
    registry: metrics.registry,
    ready: () => {
      if (shutdown.aborted) return { ready: false, reason: 'shutting down' };
      const unsynced = [...informers.entries()].filter(([, i]) => !i.hasSynced()).map(([k]) => k);
      // A follower is ready too: it serves metrics and takes over when the leader goes.
      return unsynced.length === 0 || !leader.leading ? { ready: true } : { ready: false, reason: `caches not synced: ${unsynced.join(', ')}` };
    },
  });
  logger.info(`metrics, /healthz and /readyz on ${metricsServer.host}:${metricsServer.port}`);
  return metricsServer;
}

/** Everything the composed server runs with, and shuts down in order. */
interface ServerParts extends Stores {
  config: ServerConfig;
  logger: winston.Logger;
  clock: TimerClock;
  client: DynamicClient;
  leaseClient: DynamicClient;
  webhookClient: DynamicClient;
  webhook: AdmissionWebhook | undefined;
  informers: Map<StowageKind, Informer<KubeObject>>;
  metricsServer: MetricsServer;
  ctx: ControllerContext;
  definitions: readonly ControllerDefinition[];
  shutdown: AbortController;
  /** Whether this replica holds the lease now (read by /readyz). */
  leader: { leading: boolean };
}

/** Campaigns for the lease and runs the controllers while this replica leads; stop() and a lost lease shut it down. */
function lead(p: ServerParts): ComposedServer {
  const { logger, ctx, shutdown } = p;
  let running: Controller[] = [];
  let exitCode = 0;
  let lostLeadership = false;
  let terminating = false;
  let stopped = (): void => undefined;
  const done = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const stopControllers = async (graceMs: number): Promise<void> => {
    const cs = running;
    running = [];
    await Promise.all(cs.map((c) => c.stop(graceMs)));
  };
  const elector = startLeaderElection({
    client: p.leaseClient, namespace: p.config.namespace, name: 'stowage-server', logger, clock: p.clock,
    onStartedLeading: async (signal) => {
      p.leader.leading = true;
      logger.info('became the leader: starting controllers');
      await startControllers(p.definitions, logger, (c) => running.push(c));
      signal.addEventListener('abort', () => {
        if (shutdown.signal.aborted) return;
        // A leader that lost its lease (another holder took it: an outage alone does not end
        // leadership, see runtime/leaderElection.ts) stops at once; a new process starts as a follower.
        lostLeadership = true;
        const why = errorMessage(signal.reason).replace(/^leadership of .*? lost: /, '');
        logger.error(`lost the leader lease (${why}): stopping all work now`);
        for (const r of ctx.runs.list()) r.abort(`this server lost its leadership lease: ${why}`);
        void stopControllers(0).then(() => terminate(1));
      }, { once: true });
    },
    onStoppedLeading: () => {
      p.leader.leading = false;
    },
  });
  const terminate = async (code: number): Promise<void> => {
    if (terminating) return;
    terminating = true;
    exitCode = code;
    shutdown.abort();
    const grace = p.config.terminationGracePeriod;
    if (!lostLeadership) {
      logger.info(`shutting down: waiting up to ${grace / 1000}s for ${ctx.runs.list().length} running backup(s)/restore(s)`);
      await stopControllers(grace);
    }
    await closeServer(p, elector);
    stopped();
  };
  const exited = done.then(() => (lostLeadership ? 1 : exitCode));
  return {
    exited,
    stop: async () => {
      await terminate(0);
      return exited;
    },
  };
}

/** Starts each controller in order (after its onStart), handing each to `started` as soon as it runs. */
async function startControllers(definitions: readonly ControllerDefinition[], logger: winston.Logger, started: (c: Controller) => void): Promise<void> {
  for (const d of definitions) {
    if (d.onStart !== undefined) await d.onStart();
    const c = startController({ name: d.name, reconciler: d.reconciler, informers: d.watches, workers: d.workers ?? 1, logger });
    d.bind?.((key) => c.enqueue(key));
    started(c);
  }
}

/** What is left once the controllers stopped: plugins, the lease, informers, endpoints, clients. */
async function closeServer(p: ServerParts, elector: LeaderElector): Promise<void> {
  clearInterval(p.pluginMetrics);
  await p.plugins.shutdown();
  removeAllCredentialFiles(p.scratchDir);
  await elector.stop();
  await Promise.all([...p.informers.values()].map((i) => i.stop()));
  await p.metricsServer.close();
  // Admission is served to the end: creates fail closed once it stops.
  p.webhookHealth?.stop();
  await p.webhook?.close();
  p.webhookClient.close();
  p.client.close();
  p.leaseClient.close();
  p.logger.info('stowage server stopped');
}
