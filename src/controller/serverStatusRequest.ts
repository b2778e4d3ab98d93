// ServerStatusRequest controller: answers `stowage version` with the server version and the
// registered plugins, and deletes processed requests after a minute so they do not pile up.
import { RESOURCES, type ServerStatusRequest, type ServerStatusPluginInfo } from '../apis/v1/index.js';
import { isNotFound } from '../kube/index.js';
import type { Result } from '../runtime/index.js';
import { splitKey } from '../runtime/index.js';
import type { ControllerContext, ControllerDefinition } from './run/context.js';
import { stamp } from './run/runs.js';

const SSRS = RESOURCES.ServerStatusRequest;
/** Processed requests are deleted this long after they were processed. */
export const SERVER_STATUS_REQUEST_TTL_MS = 60_000;

/** Plugins as the status lists them: sorted by kind, then name. Pure. */
export function pluginInfos(plugins: readonly { name: string; kind: string }[]): ServerStatusPluginInfo[] {
  return plugins
    .map((p) => ({ name: p.name, kind: p.kind }))
    .sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
}

/** When a processed request is due for deletion (ms since epoch); NaN-safe: a bad stamp means now. */
export function expiresAt(req: ServerStatusRequest, ttlMs = SERVER_STATUS_REQUEST_TTL_MS): number {
  const t = Date.parse(req.status?.processedTimestamp ?? req.metadata.creationTimestamp ?? '');
  return Number.isNaN(t) ? 0 : t + ttlMs;
}

export function serverStatusRequestController(ctx: ControllerContext): ControllerDefinition {
  const informer = ctx.informer<ServerStatusRequest>('ServerStatusRequest');

  return {
    name: 'server-status-request',
    watches: [informer],
    workers: 2,
    reconciler: {
      async reconcile(key: string): Promise<Result> {
        const req = informer.get(key);
        if (req === undefined) return;
        const { namespace = splitKey(key).namespace ?? ctx.namespace, name } = req.metadata;
        const now = ctx.clock.now().getTime();
        if (req.status?.phase === 'Processed') {
          const due = expiresAt(req);
          if (due > now) return { requeueAfter: due - now };
          try {
            await ctx.client.delete(SSRS, namespace, name);
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
          return;
        }
        try {
          await ctx.client.patchStatus(SSRS, namespace, name, {
            status: {
              phase: 'Processed',
              processedTimestamp: stamp(new Date(now)),
              serverVersion: ctx.serverVersion,
              plugins: pluginInfos(ctx.plugins.plugins),
            },
          });
        } catch (err) {
          if (isNotFound(err)) return; // the CLI gave up and deleted it
          throw err;
        }
        return { requeueAfter: SERVER_STATUS_REQUEST_TTL_MS };
      },
    },
  };
}
