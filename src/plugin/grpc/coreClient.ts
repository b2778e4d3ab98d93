// Host side of the services every plugin process serves: plugin listing, shutdown, health.
import type { PluginInfo } from '../api/index.js';
import { HealthCheckResponse_ServingStatus } from '../../gen/grpc/health/v1/health.js';
import type { PluginConnection } from './connection.js';
import { kindFromWire } from './convert.js';
import { unary, type CallContext } from './unary.js';

/** A listed plugin whose kind this host does not know is reported with `kind: undefined`. */
export interface ListedPlugin {
  kind: PluginInfo['kind'] | undefined;
  rawKind: number;
  name: string;
}

export async function listPlugins(conn: PluginConnection, ctx: CallContext): Promise<ListedPlugin[]> {
  const c = conn.lister;
  const res = await unary(c.listPlugins.bind(c), {}, ctx);
  return res.plugins.map((p) => ({ kind: kindFromWire(p.kind), rawKind: p.kind, name: p.name }));
}

export async function requestShutdown(conn: PluginConnection, ctx: CallContext): Promise<void> {
  const c = conn.controller;
  await unary(c.shutdown.bind(c), {}, ctx);
}

export async function checkHealth(conn: PluginConnection, ctx: CallContext, service = ''): Promise<boolean> {
  const c = conn.health;
  const res = await unary(c.check.bind(c), { service }, ctx);
  return res.status === HealthCheckResponse_ServingStatus.SERVING;
}
