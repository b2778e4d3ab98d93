// HTTP endpoint for Prometheus and the kubelet: /metrics, /healthz (alive) and /readyz (ready).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { parseListenAddress } from '../util/address.js';
import { errorMessage, sanitizeMessage } from '../util/errors.js';

export type Readiness = boolean | { ready: boolean; reason?: string };

export interface MetricsServerOptions {
  /** `:8085`, `127.0.0.1:0` (0 picks a free port), `[::1]:8085`. */
  address: string;
  registry: Registry;
  /** Decides /readyz; default always ready. A throw counts as not ready. */
  ready?: () => Readiness | Promise<Readiness>;
}

export interface MetricsServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  readonly host: string;
  close(): Promise<void>;
}

export async function startMetricsServer(opts: MetricsServerOptions): Promise<MetricsServer> {
  const { host, port } = parseListenAddress(opts.address, 'metrics address');
  const server = http.createServer((req, res) => {
    void handle(req, res, opts).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`internal error: ${errorMessage(err)}\n`);
    });
  });
  // Scrapes are short; do not let idle keep-alive sockets hold close() up.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  return {
    port: addr.port,
    host: addr.address,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, opts: MetricsServerOptions): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const text = (status: number, body: string, headers: http.OutgoingHttpHeaders = {}): void => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    text(405, 'method not allowed\n', { allow: 'GET, HEAD' });
    return;
  }
  switch (url.pathname) {
    case '/metrics': {
      const body = await opts.registry.metrics();
      res.writeHead(200, { 'content-type': opts.registry.contentType });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    case '/healthz':
      text(200, 'ok\n');
      return;
    case '/readyz': {
      let r: Readiness;
      try {
        r = opts.ready ? await opts.ready() : true;
      } catch (err) {
        r = { ready: false, reason: errorMessage(err) };
      }
      const ready = typeof r === 'boolean' ? r : r.ready;
      const reason = typeof r === 'boolean' ? undefined : r.reason;
      if (ready) text(200, 'ok\n');
      else text(503, `not ready${reason ? `: ${sanitizeMessage(reason)}` : ''}\n`);
      return;
    }
    default:
      text(404, 'not found\n');
  }
}
