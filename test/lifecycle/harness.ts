// The Stowage controllers in-process, against the real test control plane and real storage
// (built-in object-store plugins served by `stowage run-plugins` through the plugin pool), with a
// clock the test moves. Only the clock is not the real one: the lifecycle is about time (cron
// ticks, TTLs, a month of backups) and tests must not sleep for it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import {
  RESOURCES,
  newBackupStorageLocation,
  type Backup,
  type BackupStorageLocation,
  type BackupStorageLocationSpec,
  type StowageKind,
} from '../../src/apis/v1/index.js';
import { DEFAULT_CONFIG, type ServerConfig } from '../../src/config/index.js';
import { createRunRegistry, type ControllerContext, type ControllerDefinition } from '../../src/controller/run/context.js';
import { createEventRecorder, ensureCrds, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { LogSpool, createServerLogger } from '../../src/logging/index.js';
import { createMetrics } from '../../src/metrics/index.js';
import { createPluginPool, type PluginPool } from '../../src/plugin/host/index.js';
import { createInformer, startController, type Controller, type Informer } from '../../src/runtime/index.js';
import { fixedClock } from '../../src/util/clock.js';
import { authorityFor } from '../../src/auth/index.js';
import { waitUntil } from '../support/kube.js';
import { BIN, TEST_SIGNING_SECRET, createTestSigningSecret, ensureNamespace, testClient } from '../support/server.js';

export type ControllerFactory = (ctx: ControllerContext) => ControllerDefinition;

export interface LifecycleOptions {
  kubeconfigPath: string;
  namespace: string;
  /** Where the test clock starts. */
  start: Date;
  controllers: ControllerFactory[];
  location?: { name: string; spec: BackupStorageLocationSpec };
  config?: Partial<ServerConfig>;
  /** Directories of third-party plugin executables. */
  pluginDirs?: string[];
}

export interface Lifecycle {
  ctx: ControllerContext;
  client: DynamicClient;
  namespace: string;
  clock: ReturnType<typeof fixedClock>;
  /** Server log lines (JSON) so far. */
  lines: string[];
  controller(name: string): Controller;
  /** Re-runs a controller's reconcile for `key` (a cron tick or GC sweep "now", after moving the clock). */
  poke(controllerName: string, key: string): void;
  /**
   * Resolves once `count` reconciles of `key` by the controller have run that started after this
   * call (after a poke or a clock move: "it has looked again", so a check that nothing happened means it).
   */
  reconciled(controllerName: string, key: string, count?: number): Promise<void>;
  waitForBackup(name: string, done?: (b: Backup) => boolean, timeoutMs?: number): Promise<Backup>;
  waitForLocation(name: string): Promise<BackupStorageLocation>;
  stop(): Promise<void>;
}

const finished = (b: Backup): boolean => !['New', 'InProgress', undefined].includes(b.status?.phase);

export async function startLifecycle(opts: LifecycleOptions): Promise<Lifecycle> {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first (npm test does)`);
  const client = testClient(opts.kubeconfigPath);
  await ensureCrds(client);
  await ensureNamespace(client, opts.namespace);
  if (opts.location !== undefined) {
    if (opts.location.spec.signing?.keySecretRef?.name === TEST_SIGNING_SECRET) await createTestSigningSecret(client, opts.namespace);
    await client.create(RESOURCES.BackupStorageLocation, opts.namespace, newBackupStorageLocation(opts.location.name, opts.namespace, opts.location.spec));
  }
  const scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-lifecycle-'));
  const runLogDir = path.join(scratchDir, 'run-logs');
  fs.mkdirSync(runLogDir, { recursive: true });
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => lines.push(...c.toString('utf8').split('\n').filter((l) => l !== '')));
  const logger = createServerLogger({ level: 'debug', format: 'json', stream });
  // In-process controllers have no admission webhook in front of them unless a test adds one, so
  // they keep the server's own rights unless the test asks for requester mode.
  const config: ServerConfig = { ...DEFAULT_CONFIG, trustMode: 'cluster-admin', namespace: opts.namespace, scratchDir, logSpoolDir: path.join(scratchDir, 'spool'), ...opts.config };
  const plugins: PluginPool = await createPluginPool({ pluginDirs: opts.pluginDirs ?? [], selfCommand: [process.execPath, BIN, 'run-plugins'], logger, idleTimeoutMs: 600_000, startupTimeoutMs: 60_000 });
  const informers = new Map<StowageKind, Informer<KubeObject>>();
  const informer = <T extends KubeObject>(kind: StowageKind): Informer<T> => {
    let inf = informers.get(kind);
    if (inf === undefined) {
      inf = createInformer(client, RESOURCES[kind], { namespace: opts.namespace, logger, name: RESOURCES[kind].resource });
      informers.set(kind, inf);
    }
    return inf as Informer<T>;
  };
  const shutdown = new AbortController();
  const clock = fixedClock(opts.start);
  const ctx: ControllerContext = {
    config,
    namespace: opts.namespace,
    client,
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
    plugins,
    events: createEventRecorder(client, { now: () => clock.now() }),
    spool: new LogSpool(config.logSpoolDir, logger),
    clock,
    runLogDir,
    scratchDir,
    serverVersion: 'test',
    authority: (obj) => authorityFor(config.trustMode, client, obj, { impersonateUid: false, sealKey: undefined }),
    informer,
    shutdown: shutdown.signal,
    runs: createRunRegistry(),
  };

  // Reconciles as they end, with when they started, for reconciled().
  const ends: { controller: string; key: string; startedAt: number }[] = [];
  const onEnd = new Set<() => void>();
  const onReconcile = (info: { controller: string; key: string; durationMs: number }): void => {
    ends.push({ controller: info.controller, key: info.key, startedAt: performance.now() - info.durationMs });
    for (const f of [...onEnd]) f();
  };
  const reconciled = (name: string, key: string, count = 1): Promise<void> => {
    const from = performance.now();
    return new Promise((resolve) => {
      const check = (): void => {
        if (ends.filter((e) => e.controller === name && e.key === key && e.startedAt >= from).length < count) return;
        onEnd.delete(check);
        resolve();
      };
      onEnd.add(check);
    });
  };

  const controllers = new Map<string, Controller>();
  for (const factory of opts.controllers) {
    const def = factory(ctx);
    await def.onStart?.();
    const c = startController({ name: def.name, reconciler: def.reconciler, informers: def.watches, workers: def.workers ?? 1, logger, onReconcile });
    controllers.set(def.name, c);
  }
  await Promise.all([...controllers.values()].map((c) => c.ready));

  const controller = (name: string): Controller => {
    const c = controllers.get(name);
    if (c === undefined) throw new Error(`controller ${name} is not running (have ${[...controllers.keys()].join(', ')})`);
    return c;
  };

  return {
    ctx,
    client,
    namespace: opts.namespace,
    clock,
    lines,
    controller,
    poke: (name, key) => controller(name).enqueue(key),
    reconciled,
    waitForBackup: (name, done = finished, timeoutMs = 90_000) =>
      waitUntil(`backup ${name}`, async () => {
        const b = await client.get<Backup>(RESOURCES.Backup, opts.namespace, name);
        return done(b) ? b : undefined;
      }, timeoutMs, 100),
    waitForLocation: (name) =>
      waitUntil(`location ${name} to be Available`, async () => {
        const l = await client.get<BackupStorageLocation>(RESOURCES.BackupStorageLocation, opts.namespace, name);
        return l.status?.phase === 'Available' ? l : undefined;
      }, 60_000, 100),
    async stop() {
      shutdown.abort();
      await Promise.all([...controllers.values()].map((c) => c.stop(10_000)));
      await Promise.all([...informers.values()].map((i) => i.stop()));
      await plugins.shutdown();
      client.close();
      fs.rmSync(scratchDir, { recursive: true, force: true });
    },
  };
}

/**
 * A plugin directory with one executable launcher per fixture under test/lifecycle/fixtures/
 * (the launcher's directory is where the fixture writes what it records).
 */
export function pluginDir(fixtures: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-lc-plugins-'));
  for (const f of fixtures) {
    const url = pathToFileURL(path.join(import.meta.dirname, 'fixtures', f)).href;
    const file = path.join(dir, f.replace(/\.mjs$/, ''));
    fs.writeFileSync(file, `#!${process.execPath}\nimport(${JSON.stringify(url)}).catch((e) => { console.error(e); process.exit(1); });\n`);
    fs.chmodSync(file, 0o755);
  }
  return dir;
}

/** Every file under `dir`, relative to it (a filesystem location's bucket is a directory). */
export function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}
