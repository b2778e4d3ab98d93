// The server-wide plugin pool: at most one restartable process per plugin executable, shared by
// every backup, restore and controller. Each run takes a lightweight handle, which records what it
// used and is released in `finally`; releasing never stops a shared process (idle ones stop on
// their own and start again on the next call).
import winston, { type Logger } from 'winston';
import type { PluginConfig, PluginKind, RunIdentity } from '../api/index.js';
import { keyManagerInit, listPlugins, objectStoreInit, PLUGIN_PROTOCOL_VERSIONS, runMetadata, snapshotterInit } from '../grpc/index.js';
import type { CallPolicy, CallSite, RunCallOptions } from './call.js';
import { pluginEnv } from './env.js';
import { PluginRegistryError } from './errors.js';
import { createHandle, type HandlePool, type PluginHandle } from './handle.js';
import { instanceKey, PluginInstance, type InitCall, type StatefulKind } from './instances.js';
import { LogRouter, runKey } from './logRouter.js';
import { mergeRegistrations, scanPluginDirs, validateListing, type RegisteredPlugin } from './registry.js';
import type { ObjectStorePolicies } from './remoteObjectStore.js';
import { RestartableProcess, type Live, type ProcessStatus, type RestartPolicy } from './restartable.js';
import { describeExit, type PluginCommand } from './spawn.js';

export interface PluginPoolOptions {
  /** Directories scanned recursively for plugin executables. */
  pluginDirs?: string[];
  /** Command line serving the built-in plugins, e.g. [process.execPath, 'dist/cli/bin.js', 'run-plugins']. */
  selfCommand?: string[];
  /** Server logger: plugin lines that belong to no run, and process lifecycle messages. */
  logger?: Logger;
  /** Passed to plugins so they do not emit lines the server drops. Default: the logger's level. */
  logLevel?: string;
  /** How long a plugin may take to print its handshake. Default 10 s. */
  startupTimeoutMs?: number;
  /** Deadline of every unary call, and the longest stall of a stream. Default 60 s. */
  callTimeoutMs?: number;
  /** Deadline of a whole PutObject/GetObject stream. Default 6 h. */
  streamTimeoutMs?: number;
  /** A process with no call in flight for this long is stopped. Default 5 min. */
  idleTimeoutMs?: number;
  /** Consecutive failed restarts before calls fail with a crash-loop error. Default 10. */
  maxRestarts?: number;
  /** Restart backoff: base and cap (ms). Default 100 ms, 5 s. */
  restartBackoffMs?: { base: number; max: number };
  /** After a crash loop, calls fail at once for this long. Default 30 s. */
  crashLoopCooldownMs?: number;
  /** Retries of a call whose process died mid-call. Default 1. */
  maxCallRetries?: number;
  /** Bytes of a one-shot PutObject body kept for replay. Default 8 MiB. */
  replayBufferBytes?: number;
  /** Controller.Shutdown, then SIGKILL after this long. Default 2 s. */
  shutdownGraceMs?: number;
  /**
   * How long object stores ride out an unreachable backend (--object-store-outage-timeout), passed
   * to plugin processes. ObjectStore calls and stream stalls get this much longer than
   * callTimeoutMs, so the host does not cancel a call its plugin is still retrying. Default 2 min
   * (the server's default).
   */
  objectStoreOutageMs?: number;
  /**
   * Other names for plugins, e.g. Velero's provider names for the built-ins (`aws` ->
   * `stowage.dev/aws`). A name some plugin registers itself is never taken as an alias.
   */
  providerAliases?: Readonly<Record<string, string>>;
}

export interface PluginPoolStatus extends ProcessStatus {
  plugins: string[];
  /** Calls retried on a new process after a death. */
  retries: number;
  /** Successful Init calls (first Init plus replays) of this executable's instances. */
  inits: number;
  instances: number;
}

export interface PluginPool {
  readonly plugins: readonly RegisteredPlugin[];
  /** `options`: the run's cancel signal and outage window, read at each call (RunCallOptions). */
  handle(run: RunIdentity, logger?: Logger, options?: () => RunCallOptions): PluginHandle;
  status(): PluginPoolStatus[];
  shutdown(): Promise<void>;
}

const INIT_CALLS: Record<StatefulKind, InitCall> = {
  ObjectStore: objectStoreInit,
  VolumeSnapshotter: snapshotterInit,
  KeyManager: keyManagerInit,
};

/** The executable identity of the built-in plugins' command. */
export const BUILTIN_EXECUTABLE = 'stowage run-plugins';

interface Executable {
  proc: RestartableProcess;
  plugins: RegisteredPlugin[];
  instances: Map<string, PluginInstance>;
  retries: number;
}

function defaultLogger(): Logger {
  return winston.createLogger({
    level: 'warn',
    format: winston.format.json(),
    transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] })],
  });
}

class Pool implements PluginPool, HandlePool {
  plugins: RegisteredPlugin[] = [];
  private readonly executables = new Map<string, Executable>();
  private readonly router: LogRouter;
  private readonly logger: Logger;
  private readonly restart: RestartPolicy;
  readonly unary: CallPolicy;
  readonly objectStore: ObjectStorePolicies;
  private readonly env: Record<string, string>;
  private closed = false;
  private readonly killOnExit = (): void => {
    for (const e of this.executables.values()) e.proc.killNow();
  };

  constructor(private readonly opts: PluginPoolOptions) {
    this.logger = opts.logger ?? defaultLogger();
    this.router = new LogRouter(this.logger);
    this.restart = {
      startupTimeoutMs: opts.startupTimeoutMs ?? 10_000,
      maxRestarts: opts.maxRestarts ?? 10,
      backoffBaseMs: opts.restartBackoffMs?.base ?? 100,
      backoffMaxMs: opts.restartBackoffMs?.max ?? 5000,
      crashLoopCooldownMs: opts.crashLoopCooldownMs ?? 30_000,
      idleTimeoutMs: opts.idleTimeoutMs ?? 300_000,
      shutdownGraceMs: opts.shutdownGraceMs ?? 2000,
    };
    const callTimeoutMs = opts.callTimeoutMs ?? 60_000;
    const maxRetries = opts.maxCallRetries ?? 1;
    this.unary = { timeoutMs: callTimeoutMs, maxRetries };
    const outageMs = opts.objectStoreOutageMs ?? 120_000;
    const storeCallMs = callTimeoutMs + outageMs;
    this.objectStore = {
      unary: { timeoutMs: storeCallMs, maxRetries },
      stream: { timeoutMs: opts.streamTimeoutMs ?? 6 * 3600_000, idleTimeoutMs: storeCallMs, maxRetries },
      replayBufferBytes: opts.replayBufferBytes ?? 8 * 1024 * 1024,
    };
    this.env = pluginEnv({
      logLevel: opts.logLevel ?? this.logger.level,
      parent: process.env,
      objectStoreOutageMs: outageMs,
    });
    // Plugins also exit on their own when this process dies (their stdin closes); this covers
    // ordinary exits, including crashes that run 'exit' handlers.
    process.on('exit', this.killOnExit);
  }

  /** `refused`: plugin files the scan would not run; they fail discovery like any other problem. */
  async discover(commands: PluginCommand[], refused: string[] = []): Promise<void> {
    const results = await Promise.all(commands.map((c) => this.discoverOne(c)));
    const problems = [...refused, ...results.flatMap((r) => r.problems)];
    const merged = mergeRegistrations(results.map((r) => r.plugins));
    problems.push(...merged.problems);
    if (problems.length > 0) {
      for (const p of problems) this.logger.error(`plugin discovery: ${p}`, { logSource: 'plugin-host' });
      throw new PluginRegistryError(problems);
    }
    this.plugins = merged.plugins.sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
    for (const p of this.plugins) this.executables.get(p.executable)?.plugins.push(p);
    this.logger.info('plugins registered', {
      plugins: this.plugins.map((p) => `${p.kind} ${p.name}`),
      executables: [...this.executables.keys()],
    });
  }

  private async discoverOne(command: PluginCommand): Promise<{ plugins: RegisteredPlugin[]; problems: string[] }> {
    const exe = this.addExecutable(command);
    let live: Live;
    try {
      live = await exe.proc.acquire();
    } catch (err) {
      return { plugins: [], problems: [(err as Error).message] };
    }
    try {
      const ctx = { metadata: runMetadata(undefined), deadline: new Date(Date.now() + this.restart.startupTimeoutMs) };
      const listed = await listPlugins(live.conn, ctx);
      exe.proc.markHealthy(live);
      return validateListing(command.executable, listed);
    } catch (err) {
      return { plugins: [], problems: [`plugin executable ${command.executable}: ListPlugins failed: ${(err as Error).message}`] };
    } finally {
      exe.proc.release();
    }
  }

  private addExecutable(command: PluginCommand): Executable {
    const plugins: RegisteredPlugin[] = [];
    const instances = new Map<string, PluginInstance>();
    const label = (): string =>
      plugins.length > 0 ? `${command.executable} (${plugins.map((p) => p.name).join(', ')})` : command.executable;
    const proc = new RestartableProcess({
      command,
      label,
      env: this.env,
      appVersions: PLUGIN_PROTOCOL_VERSIONS,
      policy: this.restart,
      onStderrLine: (line, pid) => this.router.route(command.executable, pid, line),
      onStdoutLine: (line, pid) => this.logger.debug(line, { logSource: 'plugin', pluginExecutable: command.executable, pluginPid: pid }),
      onStarted: (live) => this.replayInits(instances, live),
      onCrash: (live, exit) =>
        this.logger.warn(`plugin process ${live.proc.pid} of ${label()} ${describeExit(exit)}; it is restarted on next use`, {
          logSource: 'plugin-host',
        }),
    });
    const exe: Executable = { proc, plugins, instances, retries: 0 };
    this.executables.set(command.executable, exe);
    return exe;
  }

  /** A new generation: Init every instance a live handle holds, so they work before the next call. */
  private async replayInits(instances: Map<string, PluginInstance>, live: Live): Promise<void> {
    if (live.generation === 1) return;
    const held = [...instances.values()].filter((i) => i.refs > 0);
    const ctx = { metadata: runMetadata(undefined), deadline: new Date(Date.now() + this.unary.timeoutMs) };
    await Promise.all(
      held.map((inst) =>
        inst.idOn(live, ctx).catch((err: unknown) => {
          // The config is not logged: it may hold credentials. The next call reports the error.
          this.logger.warn(`replaying Init of ${inst.kind} ${inst.plugin} failed: ${(err as Error).message}`, { logSource: 'plugin-host' });
        }),
      ),
    );
  }

  names(kind: PluginKind): string[] {
    return this.plugins.filter((p) => p.kind === kind).map((p) => p.name);
  }

  resolve(kind: PluginKind, name: string): string {
    const aliases = this.opts.providerAliases ?? {};
    if (this.plugins.some((p) => p.kind === kind && p.name === name) || !Object.hasOwn(aliases, name)) return name;
    return aliases[name] as string;
  }

  private executableOf(kind: PluginKind, name: string): Executable {
    const plugin = this.plugins.find((p) => p.kind === kind && p.name === name);
    if (plugin === undefined) {
      const names = this.names(kind);
      throw new Error(`no ${kind} plugin named "${name}" is registered (available: ${names.length > 0 ? names.join(', ') : 'none'})`);
    }
    const exe = this.executables.get(plugin.executable);
    if (exe === undefined) throw new Error(`internal: executable ${plugin.executable} of ${kind} ${name} is not in the pool`);
    return exe;
  }

  site(kind: PluginKind, name: string, run: RunIdentity, check: () => void): CallSite {
    const exe = this.executableOf(kind, name);
    return {
      check,
      proc: exe.proc,
      kind,
      plugin: name,
      run,
      onRetry: (method, attempt) => {
        exe.retries++;
        this.logger.info(`retrying ${kind} ${name} ${method} on a new plugin process (attempt ${attempt + 1})`, {
          logSource: 'plugin-host',
          run: runKey(run),
        });
      },
    };
  }

  instance(kind: StatefulKind, name: string, config: PluginConfig): PluginInstance {
    const exe = this.executableOf(kind, name);
    const key = instanceKey(kind, name, config);
    let inst = exe.instances.get(key);
    if (inst === undefined) {
      inst = new PluginInstance(kind, name, { ...config }, INIT_CALLS[kind]);
      exe.instances.set(key, inst);
    }
    return inst;
  }

  forget(inst: PluginInstance): void {
    if (inst.refs > 0) return;
    const exe = this.executableOf(inst.kind, inst.plugin);
    const key = instanceKey(inst.kind, inst.plugin, inst.config);
    if (exe.instances.get(key) === inst) exe.instances.delete(key);
  }

  handle(run: RunIdentity, logger?: Logger, options?: () => RunCallOptions): PluginHandle {
    if (this.closed) throw new Error('the plugin pool is shut down');
    return createHandle(this, run, this.router.register(run, logger ?? this.logger), options);
  }

  status(): PluginPoolStatus[] {
    return [...this.executables.values()].map((e) => ({
      ...e.proc.status(),
      plugins: e.plugins.map((p) => `${p.kind} ${p.name}`),
      retries: e.retries,
      inits: [...e.instances.values()].reduce((n, i) => n + i.inits, 0),
      instances: e.instances.size,
    }));
  }

  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.executables.values()].map((e) => e.proc.shutdown()));
    process.removeListener('exit', this.killOnExit);
  }
}

/**
 * Scans the plugin directories, starts each executable (and the built-ins) once to ask for its
 * plugins, and returns the pool. Rejects with a PluginRegistryError listing every problem.
 */
export async function createPluginPool(opts: PluginPoolOptions): Promise<PluginPool> {
  const pool = new Pool(opts);
  const commands: PluginCommand[] = [];
  try {
    const self = opts.selfCommand;
    if (self !== undefined && self.length > 0) {
      commands.push({ executable: BUILTIN_EXECUTABLE, command: self[0] as string, args: self.slice(1) });
    }
    const scan = await scanPluginDirs(opts.pluginDirs ?? []);
    for (const exe of scan.executables) commands.push({ executable: exe, command: exe, args: [] });
    await pool.discover(commands, scan.refused);
  } catch (err) {
    await pool.shutdown();
    throw err;
  }
  return pool;
}
