// The HTTPS endpoint the API server calls for admission (POST /mutate with an AdmissionReview).
// Bad input gets a refusal or an HTTP error, never a crash; each refusal is one log line saying
// who, what and why (never object contents).
import https from 'node:https';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type winston from 'winston';
import { parseListenAddress } from '../util/address.js';
import { errorMessage } from '../util/errors.js';
import { admit, type MayImpersonate, type Sealer } from './admission.js';
import { WEBHOOK_PATH } from './configuration.js';
import type { TlsIdentity } from './certs.js';

/** AdmissionReviews are small (one Stowage object and its old version); the API server caps objects at ~1.5 MiB. */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

export interface WebhookServerOptions {
  /** `:9443`, `127.0.0.1:0` (0 picks a free port). */
  address: string;
  identity: Pick<TlsIdentity, 'cert' | 'key'>;
  mayImpersonate: MayImpersonate;
  sealer: Sealer;
  logger: winston.Logger;
  /** How long one request may take, body included (the API server gives up after the configuration's 10 s). */
  requestTimeoutMs?: number;
}

export interface WebhookServer {
  readonly host: string;
  readonly port: number;
  /** Serves `identity` from the next TLS handshake on (a renewed certificate). */
  setIdentity(identity: Pick<TlsIdentity, 'cert' | 'key'>): void;
  close(): Promise<void>;
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const { host, port } = parseListenAddress(opts.address, 'webhook address');
  const timeout = opts.requestTimeoutMs ?? 15_000;
  const server = https.createServer({ key: opts.identity.key, cert: opts.identity.cert, minVersion: 'TLSv1.2' }, (req, res) => {
    void handle(req, res, opts).catch((err: unknown) => {
      opts.logger.warn(`admission webhook: request failed: ${errorMessage(err)}`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('internal error\n');
    });
  });
  server.requestTimeout = timeout;
  server.headersTimeout = Math.min(timeout, 10_000);
  server.keepAliveTimeout = 30_000;
  // A failed handshake (a scanner, a client that does not trust us) is the client's problem.
  server.on('tlsClientError', (err) => opts.logger.debug(`admission webhook: TLS handshake failed: ${errorMessage(err)}`));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => opts.logger.error(`admission webhook server: ${errorMessage(err)}`));
  const addr = server.address() as AddressInfo;
  return {
    host: addr.address,
    port: addr.port,
    setIdentity: (id) => server.setSecureContext({ key: id.key, cert: id.cert, minVersion: 'TLSv1.2' }),
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

function reply(res: http.ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The request body, or undefined (after answering) when it is too large. */
async function readBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > MAX_BODY_BYTES) {
    reply(res, 413, `request body over ${MAX_BODY_BYTES} bytes\n`);
    req.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      reply(res, 413, `request body over ${MAX_BODY_BYTES} bytes\n`);
      req.destroy();
      return undefined;
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, opts: WebhookServerOptions): Promise<void> {
  const path = new URL(req.url ?? '/', 'https://localhost').pathname;
  if (path === '/healthz' && req.method === 'GET') return reply(res, 200, 'ok\n');
  if (path !== WEBHOOK_PATH) return reply(res, 404, 'not found\n');
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    return reply(res, 405, 'method not allowed\n');
  }
  const body = await readBody(req, res);
  if (body === undefined) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    opts.logger.info('admission webhook refused a request: the body is not JSON');
    return reply(res, 400, 'the request body is not JSON\n');
  }
  const out = await admit(parsed, opts.mayImpersonate, opts.sealer);
  if (out.refusal !== undefined) {
    const r = out.refusal;
    opts.logger.info(`admission webhook refused ${r.operation} of ${r.what} by user "${r.user}": ${r.reason}`);
  } else if (out.stamped !== undefined) {
    opts.logger.debug(`admission webhook stamped a new object with requester ${out.stamped.username}`);
  }
  reply(res, 200, JSON.stringify(out.review), 'application/json');
}
