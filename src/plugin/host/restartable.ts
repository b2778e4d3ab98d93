// One plugin executable's process over time: started on first use, restarted (with backoff) after
// it dies, stopped when idle, and never more than one live process at once.
import { requestShutdown, runMetadata } from '../grpc/index.js';
import type { PluginConnection } from '../grpc/index.js';
import { PluginCrashLoopError } from './errors.js';
import { LineTail } from './lineTail.js';
import { describeExit, startPluginProcess, type ExitInfo, type PluginCommand, type PluginProcess } from './spawn.js';

/** A running generation of the process; each restart makes a new one. */
export interface Live {
  readonly generation: number;
  readonly proc: PluginProcess;
  readonly conn: PluginConnection;
}

export interface RestartPolicy {
  startupTimeoutMs: number;
  /** Consecutive failed (re)starts before calls fail with a crash-loop error. */
  maxRestarts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** After a crash loop, calls fail at once for this long before another round of restarts. */
  crashLoopCooldownMs: number;
  /** A process with no call in flight for this long is stopped; the next call starts it again. */
  idleTimeoutMs: number;
  /** Graceful stop: Controller.Shutdown, then SIGKILL after this long. */
  shutdownGraceMs: number;
}

export interface RestartableOptions {
  command: PluginCommand;
  /** Names the executable and its plugins in errors; known plugin names grow after discovery. */
  label: () => string;
  env: Record<string, string>;
  appVersions: readonly number[];
  policy: RestartPolicy;
  onStderrLine: (line: string, pid: number) => void;
  onStdoutLine: (line: string, pid: number) => void;
  /** Runs on every new generation before calls use it: the pool replays Init here. */
  onStarted: (live: Live) => Promise<void>;
  /** Unexpected exits only (not idle stops or shutdown). */
  onCrash: (live: Live, exit: ExitInfo) => void;
}

export interface ProcessStatus {
  executable: string;
  state: 'stopped' | 'starting' | 'running' | 'crash-looping' | 'closed';
  pid: number | undefined;
  generation: number;
  /** Processes started after the first one (restarts after a crash or an idle stop). */
  restarts: number;
  crashes: number;
  consecutiveFailures: number;
  activeCalls: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp / 2 + (Math.random() * exp) / 2);
}

export class RestartableProcess {
  private live: Live | undefined;
  private starting: Promise<Live> | undefined;
  private stopping: Promise<void> | undefined;
  private generation = 0;
  private active = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private everStarted = false;
  private healthyGeneration = 0;
  private crashLoop: { error: PluginCrashLoopError; until: number } | undefined;
  private readonly expectedExits = new Set<number>();
  private lastTail = new LineTail();
  private lastFailure = '';
  private closed = false;
  private restarts = 0;
  private crashes = 0;

  constructor(private readonly opts: RestartableOptions) {}

  get executable(): string {
    return this.opts.command.executable;
  }

  /** The running generation, starting or restarting the process first; pair with release(). */
  async acquire(): Promise<Live> {
    if (this.closed) throw new Error(`plugin ${this.opts.label()}: the plugin pool is shut down`);
    this.active++;
    clearTimeout(this.idleTimer);
    try {
      return await this.ensure();
    } catch (err) {
      this.release();
      throw err;
    }
  }

  release(): void {
    this.active = Math.max(0, this.active - 1);
    this.armIdle();
  }

  /** A call succeeded on `live`: the process is healthy, so restart failures start counting afresh. */
  markHealthy(live: Live): void {
    this.healthyGeneration = live.generation;
    if (this.live === live) this.failures = 0;
  }

  /** Resolves true when `live` has exited, waiting up to `waitMs` for the exit to be reported. */
  async hasDied(live: Live, waitMs: number): Promise<boolean> {
    if (!live.proc.alive()) return true;
    if (waitMs <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const died = await Promise.race([
      live.proc.exited.then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), waitMs);
      }),
    ]);
    clearTimeout(timer);
    return died;
  }

  status(): ProcessStatus {
    let state: ProcessStatus['state'] = 'stopped';
    if (this.closed) state = 'closed';
    else if (this.crashLoop !== undefined && Date.now() < this.crashLoop.until) state = 'crash-looping';
    else if (this.starting !== undefined) state = 'starting';
    else if (this.live?.proc.alive() === true) state = 'running';
    return {
      executable: this.executable,
      state,
      pid: this.live?.proc.alive() === true ? this.live.proc.pid : undefined,
      generation: this.generation,
      restarts: this.restarts,
      crashes: this.crashes,
      consecutiveFailures: this.failures,
      activeCalls: this.active,
    };
  }

  /** Stops for good: Controller.Shutdown, up to the grace period, then SIGKILL. */
  async shutdown(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    await this.starting?.catch(() => undefined);
    const live = this.live;
    if (live !== undefined) await this.stop(live);
    await this.stopping;
  }

  /** SIGKILLs the live process synchronously (process 'exit' hook). */
  killNow(): void {
    this.closed = true;
    if (this.live !== undefined) this.expectedExits.add(this.live.generation);
    this.live?.proc.kill('SIGKILL');
  }

  private async ensure(): Promise<Live> {
    if (this.live !== undefined && this.live.proc.alive()) return this.live;
    this.starting ??= this.startLoop().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private crashLoopError(): PluginCrashLoopError {
    const cooldown = Math.round(this.opts.policy.crashLoopCooldownMs / 1000);
    return new PluginCrashLoopError(
      `plugin ${this.opts.label()} is crash-looping: ${this.failures} consecutive restarts failed` +
        `${this.lastFailure !== '' ? ` (last: ${this.lastFailure})` : ''}; ${this.lastTail.describe()}\n` +
        `Calls to it fail for the next ${cooldown} s; then the server tries to start it again.`,
      this.lastTail.get(),
    );
  }

  private async startLoop(): Promise<Live> {
    // Never two processes for one executable: wait for a stopping one to be gone.
    await this.stopping;
    if (this.crashLoop !== undefined) {
      if (Date.now() < this.crashLoop.until) throw this.crashLoop.error;
      this.crashLoop = undefined;
      this.failures = 0;
    }
    const p = this.opts.policy;
    for (;;) {
      if (this.closed) throw new Error(`plugin ${this.opts.label()}: the plugin pool is shut down`);
      if (this.everStarted && this.failures >= p.maxRestarts) {
        const error = this.crashLoopError();
        this.crashLoop = { error, until: Date.now() + p.crashLoopCooldownMs };
        throw error;
      }
      if (this.everStarted && this.failures > 0) await sleep(backoffMs(this.failures, p.backoffBaseMs, p.backoffMaxMs));
      let proc: PluginProcess;
      try {
        proc = await startPluginProcess(this.opts.command, {
          label: this.opts.label(),
          env: this.opts.env,
          startupTimeoutMs: p.startupTimeoutMs,
          appVersions: this.opts.appVersions,
          onStderrLine: this.opts.onStderrLine,
          onStdoutLine: this.opts.onStdoutLine,
        });
      } catch (err) {
        // A first start that fails reports its own, specific error; restarts retry up to the cap.
        if (!this.everStarted) throw err;
        this.failures++;
        this.lastFailure = (err as Error).message.split('\n')[0] ?? '';
        const stderr = (err as { stderr?: unknown }).stderr;
        if (Array.isArray(stderr)) {
          this.lastTail = new LineTail();
          for (const l of stderr) this.lastTail.push(String(l));
        }
        continue;
      }
      if (this.closed) {
        proc.kill('SIGKILL');
        throw new Error(`plugin ${this.opts.label()}: the plugin pool is shut down`);
      }
      if (this.everStarted) this.restarts++;
      this.everStarted = true;
      const live: Live = { generation: ++this.generation, proc, conn: proc.connection };
      this.live = live;
      void proc.exited.then((e) => this.onExit(live, e));
      await this.opts.onStarted(live);
      return live;
    }
  }

  private onExit(live: Live, e: ExitInfo): void {
    if (this.live === live) this.live = undefined;
    if (this.expectedExits.delete(live.generation)) return;
    this.crashes++;
    this.lastTail = live.proc.tail;
    this.lastFailure = `process ${live.proc.pid} ${describeExit(e)}`;
    // A process that died before serving one call successfully counts as a failed restart.
    if (this.healthyGeneration !== live.generation) this.failures++;
    this.opts.onCrash(live, e);
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.active > 0 || this.closed || this.live === undefined) return;
    this.idleTimer = setTimeout(() => {
      const live = this.live;
      if (this.active === 0 && live !== undefined) void this.stop(live);
    }, this.opts.policy.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private stop(live: Live): Promise<void> {
    this.expectedExits.add(live.generation);
    if (this.live === live) this.live = undefined;
    const grace = this.opts.policy.shutdownGraceMs;
    const stopping = (async () => {
      if (live.proc.alive()) {
        const ask = requestShutdown(live.conn, { metadata: runMetadata(undefined), deadline: new Date(Date.now() + grace) });
        ask.catch(() => undefined);
        let timer: NodeJS.Timeout | undefined;
        const gone = await Promise.race([
          live.proc.exited.then(() => true),
          new Promise<boolean>((r) => {
            timer = setTimeout(() => r(false), grace);
          }),
        ]);
        clearTimeout(timer);
        if (!gone) live.proc.kill('SIGKILL');
        await live.proc.exited;
      }
    })();
    const all = Promise.all([this.stopping, stopping]).then(() => undefined);
    this.stopping = all;
    void all.then(() => {
      if (this.stopping === all) this.stopping = undefined;
    });
    return stopping;
  }
}
