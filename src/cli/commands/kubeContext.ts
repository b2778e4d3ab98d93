// The connection every client command needs: kubeconfig, API client, the server's namespace.
// Global flags are accepted both before the subcommand (`stowage -n x backup get`) and on it
// (`stowage backup get -n x`); the program uses positional options so `stowage server` keeps its own.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { Option, type Command } from 'commander';
import { DEFAULT_NAMESPACE } from '../../apis/v1/index.js';
import { createDynamicClient, isNotFound, loadKubeConfig, type DynamicClient, type ResourceRef } from '../../kube/index.js';
import { CliError, UsageError, type ErrorContext } from './errors.js';

export interface GlobalOptions {
  kubeconfig?: string;
  namespace?: string;
  debug?: boolean;
}

/** Adds the global flags to a command (no defaults here: the nearest explicit value wins, see globalOptions). */
export function addGlobalOptions(cmd: Command): Command {
  const group = 'Global options:';
  return cmd
    .addOption(new Option('--kubeconfig <path>', 'path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)').helpGroup(group))
    .addOption(
      new Option('-n, --namespace <namespace>', `namespace of the Stowage server and its resources (default: $STOWAGE_NAMESPACE or "${DEFAULT_NAMESPACE}")`).helpGroup(group),
    )
    .addOption(new Option('--debug', 'print stack traces with errors (also STOWAGE_DEBUG=1)').helpGroup(group));
}

/** The global flags of a command: its own first, then its ancestors', then the environment. */
export function globalOptions(cmd: Command): GlobalOptions {
  const pick = <K extends keyof GlobalOptions>(key: K): GlobalOptions[K] => {
    for (let c: Command | null = cmd; c !== null; c = c.parent) {
      const v = (c.opts() as GlobalOptions)[key];
      if (v !== undefined) return v;
    }
    return undefined;
  };
  const out: GlobalOptions = {};
  const kubeconfig = pick('kubeconfig');
  if (kubeconfig !== undefined) out.kubeconfig = kubeconfig;
  out.namespace = pick('namespace') ?? (process.env.STOWAGE_NAMESPACE || DEFAULT_NAMESPACE);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(out.namespace) || out.namespace.length > 63) {
    throw new UsageError(`namespace "${out.namespace}" is not a valid Kubernetes namespace name`);
  }
  if (pick('debug') === true) out.debug = true;
  return out;
}

export interface CliContext {
  client: DynamicClient;
  kc: KubeConfig;
  /** The server's namespace, where Backups, Restores and requests live. */
  namespace: string;
  /** What the error line says about the connection. */
  errorContext: ErrorContext;
  close(): void;
}

/** GETs an object of the server's namespace; a missing one throws the kind's own `notFound` error. */
export async function getInNamespace<T>(ctx: CliContext, res: ResourceRef, name: string, notFound: (name: string, namespace: string) => CliError): Promise<T> {
  try {
    return await ctx.client.get<T>(res, ctx.namespace, name);
  } catch (err) {
    if (isNotFound(err)) throw notFound(name, ctx.namespace);
    throw err;
  }
}

/** Human description of where the kubeconfig comes from, used in error lines. */
export function kubeconfigSource(flag: string | undefined): string {
  if (flag !== undefined) return path.resolve(flag);
  const env = process.env.KUBECONFIG;
  if (env !== undefined && env !== '') return env;
  return path.join(os.homedir(), '.kube', 'config');
}

/** Loads the kubeconfig and builds the client; a broken kubeconfig becomes one "cannot load kubeconfig" line. */
export function openContext(opts: GlobalOptions): CliContext {
  const source = kubeconfigSource(opts.kubeconfig);
  if (opts.kubeconfig !== undefined) {
    if (opts.kubeconfig === '') throw new UsageError('--kubeconfig needs a path');
    if (!fs.existsSync(opts.kubeconfig)) throw new CliError(`cannot load kubeconfig ${source}: the file does not exist`);
  }
  let kc: KubeConfig;
  try {
    kc = loadKubeConfig(opts.kubeconfig);
  } catch (err) {
    // loadKubeConfig says "invalid kubeconfig <source>: <why>"; keep the why, name the file once.
    const why = (err as Error).message.replace(/^invalid kubeconfig .*?: /, '');
    if (why.startsWith('no kubeconfig found')) throw new CliError(why, 1, { cause: err });
    throw new CliError(`cannot load kubeconfig ${source}: ${firstLine(why)}`, 1, { cause: err });
  }
  let client: DynamicClient;
  try {
    // Interactive use: a short per-request timeout so an unreachable apiserver fails fast.
    client = createDynamicClient(kc, { qps: 50, burst: 100, userAgent: 'stowage-cli', timeoutMs: 30_000 });
  } catch (err) {
    throw new CliError(`cannot load kubeconfig ${source}: ${(err as Error).message}`, 1, { cause: err });
  }
  return {
    client,
    kc,
    namespace: opts.namespace ?? DEFAULT_NAMESPACE,
    errorContext: { server: client.server, kubeconfigSource: source },
    close: () => client.close(),
  };
}

function firstLine(s: string): string {
  const line = s.split('\n').find((l) => l.trim() !== '') ?? s;
  return line.trim();
}
