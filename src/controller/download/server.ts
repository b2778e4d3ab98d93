// The download endpoint's HTTP server: where it listens, the base URL its links carry, and the
// one error rule (a failure before the body is a 500 that says why; after it, the connection is cut).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseListenAddress } from '../../util/address.js';
import { safeErrorMessage } from '../../util/errors.js';

export interface DownloadServerOptions {
  /** Listen address (`:8086`, `127.0.0.1:0`). */
  address: string;
  /** Base URL clients use (e.g. behind a Service); default from the bound address or POD_IP. */
  publicURL?: string;
}

/** From --download-address and --download-url; unset, a pod listens on :8086 (for a port-forward), anything else on a free loopback port. */
export function downloadServerOptions(config: { downloadAddress: string; downloadUrl: string }, env: NodeJS.ProcessEnv = process.env): DownloadServerOptions {
  const inCluster = env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_HOST !== '';
  const opts: DownloadServerOptions = { address: config.downloadAddress || (inCluster ? ':8086' : '127.0.0.1:0') };
  if (config.downloadUrl !== '') opts.publicURL = config.downloadUrl;
  return opts;
}

/** The URL base clients get for a server bound to host:port. Pure. */
export function baseURLFor(boundHost: string, port: number, publicURL: string | undefined, podIP: string | undefined): string {
  if (publicURL !== undefined && publicURL !== '') return publicURL.replace(/\/+$/, '');
  const wildcard = boundHost === '' || boundHost === '0.0.0.0' || boundHost === '::';
  const host = wildcard ? (podIP !== undefined && podIP !== '' ? podIP : '127.0.0.1') : boundHost;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export interface DownloadServer {
  baseURL: string;
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;

export async function startDownloadServer(opts: DownloadServerOptions, handler: Handler): Promise<DownloadServer> {
  const { host, port } = parseListenAddress(opts.address, 'download address');
  const server = http.createServer((req, res) => {
    handler(req, res).catch((err: unknown) => {
      // Once the body has begun, an error must not read as its end: the connection is cut instead.
      if (res.headersSent) {
        res.destroy(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`download failed: ${safeErrorMessage(err)}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Never the reason the process stays alive.
  server.unref();
  const addr = server.address() as AddressInfo;
  return {
    baseURL: baseURLFor(host ?? '', addr.port, opts.publicURL, process.env.POD_IP),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function text(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${body}\n`);
}
