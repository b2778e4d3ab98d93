// Starts one plugin process: minimal environment, own process group, stdin kept open (the plugin
// exits when it closes, i.e. when this server dies), then waits for the handshake line.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { connectPlugin, CORE_PROTOCOL_VERSION, grpcTarget, type PluginConnection } from '../grpc/index.js';
import { parseHandshake, type Handshake } from './handshake.js';
import { LineTail } from './lineTail.js';

/** How to run a plugin executable. Built-ins run as `node dist/cli/bin.js run-plugins`. */
export interface PluginCommand {
  /** Identity of the executable in logs, errors and the one-process-per-executable rule. */
  executable: string;
  command: string;
  args: string[];
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartOptions {
  /** Names the plugin in errors: the executable, plus its plugin names when known. */
  label: string;
  env: Record<string, string>;
  startupTimeoutMs: number;
  appVersions: readonly number[];
  onStderrLine: (line: string, pid: number) => void;
  onStdoutLine?: (line: string, pid: number) => void;
}

export interface PluginProcess {
  readonly pid: number;
  readonly handshake: Handshake;
  readonly connection: PluginConnection;
  readonly tail: LineTail;
  /** Resolves when the process has exited (the child's 'exit' event). */
  readonly exited: Promise<ExitInfo>;
  alive(): boolean;
  /** Signals the plugin's whole process group. */
  kill(signal?: NodeJS.Signals): void;
}

export class PluginStartError extends Error {
  override readonly name = 'PluginStartError';
  constructor(
    message: string,
    readonly stderr: string[],
  ) {
    super(message);
  }
}

/**
 * A killed plugin cannot remove its socket: the host removes the socket file and its directory if
 * that is now empty (never anything else, whatever directory a third-party plugin chose).
 */
function removeSocket(handshake: Handshake): void {
  if (handshake.network !== 'unix') return;
  try {
    if (!fs.lstatSync(handshake.address).isSocket()) return;
    fs.unlinkSync(handshake.address);
    fs.rmdirSync(path.dirname(handshake.address));
  } catch {
    // already removed by the plugin, or the directory holds other files
  }
}

export function describeExit(e: ExitInfo): string {
  return e.signal !== null ? `was killed by ${e.signal}` : `exited with code ${e.code ?? 'unknown'}`;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

/** Kills the process group synchronously (for `process.on('exit')` hooks). */
export function killNow(proc: PluginProcess): void {
  proc.kill('SIGKILL');
}

export function startPluginProcess(cmd: PluginCommand, opts: StartOptions): Promise<PluginProcess> {
  const tail = new LineTail();
  return new Promise<PluginProcess>((resolve, reject) => {
    let settled = false;
    let exitInfo: ExitInfo | undefined;
    const child = spawn(cmd.command, cmd.args, { env: opts.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    child.stdin?.on('error', () => undefined); // EPIPE once the plugin is gone
    const pid = child.pid ?? -1;

    const exited = new Promise<ExitInfo>((res) => {
      child.once('exit', (code, signal) => {
        exitInfo = { code, signal };
        // Reap anything the plugin left in its process group.
        killGroup(child, 'SIGKILL');
        res(exitInfo);
      });
    });
    // All output read: stderr lines printed just before a crash are in `tail` when we report it.
    const closed = new Promise<void>((res) => child.once('close', () => res()));

    const failStart = (message: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killGroup(child, 'SIGKILL');
      const withTail = async (): Promise<void> => {
        await Promise.race([closed, new Promise((r) => setTimeout(r, 300))]);
        reject(new PluginStartError(`${message}; ${tail.describe()}`, tail.get()));
      };
      void withTail();
    };

    const timer = setTimeout(() => {
      failStart(`plugin ${opts.label} did not print its handshake line within ${opts.startupTimeoutMs} ms`);
    }, opts.startupTimeoutMs);

    child.once('error', (err) => failStart(`cannot start plugin ${opts.label}: ${err.message}`));
    void exited.then((e) => failStart(`plugin ${opts.label} ${describeExit(e)} before printing its handshake line`));

    if (child.stderr !== null) {
      readline.createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => {
        tail.push(line);
        opts.onStderrLine(line, pid);
      });
    }
    if (child.stdout !== null) {
      let handshaken = false;
      readline.createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
        if (handshaken) {
          opts.onStdoutLine?.(line, pid);
          return;
        }
        if (line.trim() === '') return;
        handshaken = true;
        if (settled) return;
        let handshake: Handshake;
        try {
          handshake = parseHandshake(line, { plugin: opts.label, coreVersion: CORE_PROTOCOL_VERSION, appVersions: opts.appVersions });
        } catch (err) {
          failStart((err as Error).message);
          return;
        }
        settled = true;
        clearTimeout(timer);
        const connection = connectPlugin(grpcTarget(handshake.network, handshake.address));
        void exited.then(() => {
          connection.close();
          removeSocket(handshake);
        });
        resolve({
          pid,
          handshake,
          connection,
          tail,
          exited,
          alive: () => exitInfo === undefined,
          kill: (signal = 'SIGKILL') => killGroup(child, signal),
        });
      });
    }
  });
}
