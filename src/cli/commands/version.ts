// `stowage version`: the client's version, and the server's version and plugins through a
// ServerStatusRequest that the running server answers.
import fs from 'node:fs';
import { Command, Option } from 'commander';
import { LABEL_CREATED_BY, RESOURCES, newServerStatusRequest, type ServerStatusRequest } from '../../apis/v1/index.js';
import { isNotFound } from '../../kube/index.js';
import { sleep } from '../../util/backoff.js';
import { formatDuration } from '../../util/duration.js';
import { action } from './action.js';
import { CliError } from './errors.js';
import { parseTimeout } from './flags.js';
import { addGlobalOptions, type CliContext } from './kubeContext.js';
import { formatData, formatTable, out, outputOption, parseOutputFormat } from './output.js';

/** The package version, read from package.json (two levels above src/cli/commands and dist/cli/commands). */
export function clientVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface ServerStatus {
  version: string;
  plugins: { name: string; kind: string }[];
}

export class ServerNotRunningError extends CliError {}

/** Creates a ServerStatusRequest and waits for the server to process it. */
export async function serverStatus(ctx: CliContext, timeoutMs: number): Promise<ServerStatus> {
  const req = newServerStatusRequest(ctx.namespace);
  req.metadata.labels = { ...req.metadata.labels, [LABEL_CREATED_BY]: 'stowage-cli' };
  const created = await ctx.client.create<ServerStatusRequest>(RESOURCES.ServerStatusRequest, ctx.namespace, req);
  const name = created.metadata.name;
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      let cur: ServerStatusRequest | undefined;
      try {
        cur = await ctx.client.get<ServerStatusRequest>(RESOURCES.ServerStatusRequest, ctx.namespace, name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (cur?.status?.phase === 'Processed') {
        return { version: cur.status.serverVersion ?? 'unknown', plugins: [...(cur.status.plugins ?? [])].sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name)) };
      }
      if (Date.now() >= deadline) {
        throw new ServerNotRunningError(
          `the Stowage server is not running in namespace ${ctx.namespace} (no ServerStatusRequest was processed within ${formatDuration(timeoutMs)})`,
        );
      }
      await sleep(Math.min(200, Math.max(0, deadline - Date.now())));
    }
  } finally {
    await ctx.client.delete(RESOURCES.ServerStatusRequest, ctx.namespace, name).catch(() => undefined);
  }
}

export function versionCommand(): Command {
  return addGlobalOptions(
    new Command('version')
      .description('Show the client version, and the server version and plugins')
      .option('--client-only', 'only show the client version (needs no cluster)')
      .addOption(new Option('--timeout <duration>', 'how long to wait for the server to answer').default('10s'))
      .addOption(outputOption()),
  ).action(
    action(async (cmd, s) => {
      const o = cmd.opts<{ clientOnly?: boolean; timeout: string; output: string }>();
      const format = parseOutputFormat(o.output);
      const timeoutMs = parseTimeout('timeout', o.timeout);
      const client = { version: clientVersion(), node: process.version, platform: `${process.platform}/${process.arch}` };
      if (o.clientOnly === true) {
        if (format === 'table') out(`Client:\n  Version:  ${client.version}\n  Node.js:  ${client.node} (${client.platform})`);
        else process.stdout.write(formatData({ client }, format));
        return;
      }
      if (format === 'table') out(`Client:\n  Version:  ${client.version}\n  Node.js:  ${client.node} (${client.platform})\n`);
      const ctx = s.client();
      let server: ServerStatus;
      try {
        server = await serverStatus(ctx, timeoutMs);
      } catch (err) {
        if (format !== 'table') process.stdout.write(formatData({ client }, format));
        throw err;
      }
      if (format !== 'table') {
        process.stdout.write(formatData({ client, server: { ...server, namespace: ctx.namespace } }, format));
        return;
      }
      out(`Server (namespace ${ctx.namespace}):\n  Version:  ${server.version}\n`);
      if (server.plugins.length === 0) out('Plugins:  <none>');
      else {
        out('Plugins:');
        process.stdout.write(
          formatTable(['NAME', 'KIND'], server.plugins.map((p) => [p.name, p.kind]))
            .split('\n')
            .map((l) => (l === '' ? l : `  ${l}`))
            .join('\n'),
        );
      }
    }),
  );
}
