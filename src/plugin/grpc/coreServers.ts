// Plugin side of the services every plugin process serves: listing, shutdown and health.
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { PluginInfo } from '../api/index.js';
import type { PluginListerServer } from '../../gen/stowage/plugin/v1/lister.js';
import type { ControllerServer } from '../../gen/stowage/plugin/v1/controller.js';
import {
  HealthCheckResponse_ServingStatus,
  type HealthCheckRequest,
  type HealthCheckResponse,
  type HealthServer,
} from '../../gen/grpc/health/v1/health.js';
import { kindToWire } from './convert.js';
import { unaryHandler, type ServeHooks } from './serverCommon.js';

export function pluginListerServer(plugins: PluginInfo[], hooks: ServeHooks): PluginListerServer {
  return {
    listPlugins: unaryHandler(hooks, 'PluginLister', 'ListPlugins', () => '', async () => ({
      plugins: plugins.map((p) => ({ kind: kindToWire(p.kind), name: p.name })),
    })),
  };
}

/** `onShutdown` runs after the reply is sent; it should stop serving and exit the process. */
export function controllerServer(onShutdown: () => void, hooks: ServeHooks): ControllerServer {
  return {
    shutdown: (call, callback) => {
      const handler = unaryHandler(hooks, 'Controller', 'Shutdown', () => '', async () => ({}));
      handler(call, (err, value) => {
        callback(err, value);
        setImmediate(onShutdown);
      });
    },
  };
}

/** The standard health service: the process and every service it serves report SERVING. */
export function healthServer(services: string[]): HealthServer {
  const known = new Set(['', ...services]);
  const statusOf = (service: string): HealthCheckResponse => ({
    status: known.has(service) ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN,
  });
  return {
    check: (call, callback) => callback(null, statusOf(call.request.service)),
    watch: (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => {
      // Status never changes while the process lives; the stream stays open until the caller leaves.
      call.write(statusOf(call.request.service));
    },
  };
}
