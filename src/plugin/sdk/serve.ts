// servePlugins(): what a plugin executable's main module calls. Checks it was started by the
// Stowage server, serves gRPC on a unix socket in a private directory, prints the go-plugin
// handshake line, and exits when the server goes away.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PLUGIN_NAME_PATTERN, type PluginInfo } from '../api/index.js';
import {
  CORE_PROTOCOL_VERSION,
  LOG_LEVEL_ENV,
  listedPlugins,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  PLUGIN_PROTOCOL_VERSIONS,
  PROTOCOL_VERSIONS_ENV,
  startPluginServer,
  type PluginImplementations,
  type RunningPluginServer,
  type ServeHooks,
} from '../grpc/index.js';
import { inCallScope, log, setLogLevel } from './logger.js';

export type PluginServeOptions = PluginImplementations;

const NOT_BY_HAND =
  'This binary is a Stowage plugin. It is started by the Stowage server, not by hand.\n' +
  'Put it in the server\'s --plugin-dir; the server discovers and runs it.\n';

/** Names must be `domain/name` and unique per kind; returns every problem found. */
export function validatePluginNames(plugins: PluginInfo[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const p of plugins) {
    if (!PLUGIN_NAME_PATTERN.test(p.name)) problems.push(`${p.kind} name "${p.name}" is not of the form domain/name (e.g. example.com/my-plugin)`);
    const key = `${p.kind}/${p.name}`;
    if (seen.has(key)) problems.push(`${p.kind} "${p.name}" is registered twice`);
    seen.add(key);
  }
  if (plugins.length === 0) problems.push('no plugins to serve');
  return problems;
}

/** The highest plugin protocol version both sides speak, or undefined when there is none. */
export function negotiateVersion(hostVersions: string | undefined, ours: readonly number[]): number | undefined {
  if (hostVersions === undefined || hostVersions.trim() === '') return Math.max(...ours);
  const offered = hostVersions.split(',').map((v) => Number(v.trim()));
  const common = ours.filter((v) => offered.includes(v));
  return common.length > 0 ? Math.max(...common) : undefined;
}

function fail(message: string): never {
  process.stderr.write(message.endsWith('\n') ? message : `${message}\n`);
  process.exit(1);
}

/** Watches for the host going away: stdin closes when it dies, even by SIGKILL; the parent pid changes too. */
function exitWithHost(stop: (reason: string) => void): void {
  const parent = process.ppid;
  process.stdin.on('end', () => stop('the Stowage server closed the plugin\'s stdin'));
  process.stdin.on('error', () => stop('the plugin\'s stdin failed'));
  process.stdin.resume();
  setInterval(() => {
    if (process.ppid !== parent) stop('the Stowage server process is gone');
  }, 500).unref();
}

function makeSocketDir(): string {
  // mkdtemp creates the directory with mode 0700: only this user can reach the socket.
  let base = os.tmpdir();
  if (base.length > 60) base = '/tmp'; // unix socket paths are limited to ~107 bytes
  const dir = fs.mkdtempSync(path.join(base, 'stowage-plugin-'));
  fs.chmodSync(dir, 0o700);
  return dir;
}

/**
 * Serves the given plugins. Resolves once the handshake is printed; the process then keeps
 * serving until the host asks it to shut down or goes away.
 */
export async function servePlugins(impls: PluginServeOptions): Promise<void> {
  if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) fail(NOT_BY_HAND);
  setLogLevel(process.env[LOG_LEVEL_ENV]);
  const plugins = listedPlugins(impls);
  const problems = validatePluginNames(plugins);
  if (problems.length > 0) fail(`stowage plugin: cannot serve: ${problems.join('; ')}`);
  const version = negotiateVersion(process.env[PROTOCOL_VERSIONS_ENV], PLUGIN_PROTOCOL_VERSIONS);
  if (version === undefined) {
    fail(
      `stowage plugin: incompatible plugin protocol: the server accepts versions ${process.env[PROTOCOL_VERSIONS_ENV] ?? ''}, ` +
        `this plugin speaks ${PLUGIN_PROTOCOL_VERSIONS.join(', ')}`,
    );
  }

  const dir = makeSocketDir();
  const socketPath = path.join(dir, 'plugin.sock');
  const state: { server?: RunningPluginServer; stopping: boolean } = { stopping: false };
  const cleanup = (): void => fs.rmSync(dir, { recursive: true, force: true });
  process.on('exit', cleanup);
  const stop = (reason: string): void => {
    if (state.stopping) return;
    state.stopping = true;
    log.debug('plugin process stopping', { reason });
    const done = (): never => process.exit(0);
    if (state.server === undefined) done();
    else void state.server.close(1500).then(done, done);
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(sig, () => stop(`received ${sig}`));

  const hooks: ServeHooks = {
    call: (info, fn) =>
      inCallScope({
        plugin: info.plugin, method: `${info.service}.${info.method}`, run: info.run, signal: info.signal,
        ...(info.outageWindowMs !== undefined ? { outageWindowMs: info.outageWindowMs } : {}),
      }, async () => {
        try {
          return await fn();
        } catch (err) {
          log.debug(`${info.service}.${info.method} failed`, { error: err instanceof Error ? err.message : String(err) });
          throw err;
        }
      }),
  };
  state.server = await startPluginServer(impls, hooks, socketPath, () => stop('the Stowage server asked it to shut down'));
  exitWithHost(stop);
  process.stdout.write(`${CORE_PROTOCOL_VERSION}|${version}|unix|${socketPath}|grpc\n`);
}
