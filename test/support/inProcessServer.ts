// The whole `stowage server` (main.ts composeServer: every controller, the leader lease, the
// webhook, the plugin pool with real plugin processes) inside the test's own process, against the
// test control plane, on a movable clock. It is set up exactly as startServer sets up a process
// (same identity, webhook and flags: prepareServer); only the clock differs.
//
// Use it when a test waits out a window (an API outage, a lease, a retry backoff, a TTL): move the
// clock past the window with `clock.advance(ms)` instead of sleeping. Everything else runs on the
// wall clock, so nothing stalls when the test does not move it. Move it only once the server has
// started the wait (wait for the log line that says so first), or the wait starts after the jump.
// A test that must kill or restart the server as a process (SIGKILL, a new process of the same pod)
// uses startServer instead.
import { PassThrough } from 'node:stream';
import { CONFIG_FLAGS, DEFAULT_CONFIG, applyConfigOverrides, type ConfigKey, type ServerConfig } from '../../src/config/index.js';
import { composeServer } from '../../src/main.js';
import { movableClock, type MovableClock } from '../../src/util/clock.js';
import { BIN, prepareServer, type ServerOptions } from './server.js';
import { waitForWebhook } from './webhook.js';

export interface InProcessOptions extends Omit<ServerOptions, 'env'> {
  /** The clock to run on (share one between servers a test moves together); default a new one. */
  clock?: MovableClock;
}

export interface InProcessServer {
  clock: MovableClock;
  scratchDir: string;
  /** Port of /metrics, /healthz and /readyz. */
  metricsPort: number;
  /** The server log so far (its text format, as a process prints it). */
  output(): string;
  /** Resolves the first match of `re` in the log, as soon as it is written; rejects if the server stops first. */
  waitForOutput(re: RegExp): Promise<string>;
  /** The exit code once the server has stopped; undefined while it runs. */
  stoppedWith(): number | undefined;
  /** Resolves the exit code once the server has stopped by itself (a lost lease) or by stop(). */
  readonly exited: Promise<number>;
  /** What SIGTERM does to the process: runs finish within the grace period, then everything stops. */
  stop(): Promise<number>;
}

/** `stowage server` arguments as the configuration the command builds from them. */
export function configFromArgs(args: string[]): ServerConfig {
  const overrides: Partial<Record<ConfigKey, string>> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]?.replace(/^--/, '');
    const f = CONFIG_FLAGS.find((c) => c.flag === name);
    const value = args[i + 1];
    if (f === undefined || value === undefined) throw new Error(`in-process server: "${args[i]} ${value ?? ''}" is not a server flag with a value`);
    overrides[f.key] = value;
  }
  return applyConfigOverrides(DEFAULT_CONFIG, overrides);
}

export async function startInProcessServer(opts: InProcessOptions): Promise<InProcessServer> {
  const { client, scratchDir, trustMode, args } = await prepareServer(opts);
  const clock = opts.clock ?? movableClock();
  let out = '';
  const watchers = new Set<() => void>();
  const logStream = new PassThrough();
  logStream.on('data', (c: Buffer) => {
    out += c.toString('utf8');
    for (const w of [...watchers]) w();
  });
  const server = await composeServer(configFromArgs(args), { clock, selfCommand: [process.execPath, BIN, 'run-plugins'], logStream });
  let stopped: number | undefined;
  void server.exited.then((code) => {
    stopped = code;
    for (const w of [...watchers]) w();
  });
  const waitForOutput = (re: RegExp): Promise<string> => new Promise((resolve, reject) => {
    const check = (): void => {
      const m = re.exec(out);
      if (m === null && stopped === undefined) return;
      watchers.delete(check);
      if (m !== null) resolve(m[0]);
      else reject(new Error(`the in-process server stopped (${stopped}) before logging ${re}:\n${out.slice(-3000)}`));
    };
    watchers.add(check);
    check();
  });
  const running: InProcessServer = { clock, scratchDir, metricsPort: 0, output: () => out, waitForOutput, exited: server.exited, stoppedWith: () => stopped, stop: () => server.stop() };
  if (trustMode === 'requester') {
    await waitForOutput(/CA bundle published to MutatingWebhookConfiguration/);
    await waitForWebhook(client, opts.namespace);
  }
  running.metricsPort = Number(/:(\d+)$/.exec(await waitForOutput(/readyz on [^\s]+:\d+/))?.[1]);
  if (opts.waitForLeader !== false) await waitForOutput(/became the leader/);
  return running;
}

/**
 * An in-process server of a namespace whose leader died without releasing its lease (SIGKILL): it
 * moves its clock past the lease once it has seen it held, instead of waiting 15 s, and resolves
 * once it leads.
 */
export async function startSuccessor(opts: Omit<InProcessOptions, 'waitForLeader'>): Promise<InProcessServer> {
  const server = await startInProcessServer({ ...opts, waitForLeader: false });
  const seen = await server.waitForOutput(/became the leader|lease \S+: held by \S+; \S+ takes it once it goes \d+ s unrenewed/);
  const unrenewed = /goes (\d+) s unrenewed/.exec(seen)?.[1];
  if (unrenewed !== undefined) server.clock.advance(Number(unrenewed) * 1000);
  await server.waitForOutput(/became the leader/);
  return server;
}
