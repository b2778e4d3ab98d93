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

/** The API server's request body limit (`--max-request-body-bytes`'s default): no object it admits is larger. */
export const APISERVER_MAX_REQUEST_BYTES = 3 * 1024 * 1024;
/**
 * The largest AdmissionReview taken: an update carries the object and its old version, each up to
 * the API server's request limit, plus the review's envelope (user, kind, options).
 */
export const MAX_BODY_BYTES = 2 * APISERVER_MAX_REQUEST_BYTES + 1024 * 1024;
/** How much of an oversized body is kept to find its request uid (the API server writes it first). */
const HEAD_BYTES = 64 * 1024;
/** Past this, an oversized body is not even drained: the connection is cut. */
const DRAIN_LIMIT_BYTES = 8 * MAX_BODY_BYTES;

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

function reply(res: http.ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8', close = false): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...(close ? { connection: 'close' } : {}) });
  res.end(body);
}

type Body = { kind: 'whole'; data: Buffer } | { kind: 'oversized'; head: Buffer; size: number } | { kind: 'answered' };

/**
 * The request body; an oversized one is drained (counting it, keeping only its head) so that the
 * refusal can be an AdmissionReview the API server shows, rather than a bare 413.
 */
async function readBody(req: http.IncomingMessage, res: http.ServerResponse): Promise<Body> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > DRAIN_LIMIT_BYTES) return cut(req, res, declared);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    if (size <= MAX_BODY_BYTES) chunks.push(c);
    size += c.length;
    if (size > DRAIN_LIMIT_BYTES) return cut(req, res, size);
  }
  const data = Buffer.concat(chunks);
  return size <= MAX_BODY_BYTES ? { kind: 'whole', data } : { kind: 'oversized', head: data.subarray(0, HEAD_BYTES), size };
}

function cut(req: http.IncomingMessage, res: http.ServerResponse, size: number): Body {
  reply(res, 413, `${tooLarge(size)}\n`, 'text/plain; charset=utf-8', true);
  req.destroy();
  return { kind: 'answered' };
}

const tooLarge = (size: number): string =>
  `the admission request is ${size} bytes, over the Stowage admission webhook's limit of ${MAX_BODY_BYTES} bytes`;

/** The request uid of a body too large to parse, from its head (`"request":{"uid":"…"`). */
function headUid(head: Buffer): string | undefined {
  return /"request"\s*:\s*\{\s*"uid"\s*:\s*"([^"\\]{1,128})"/.exec(head.toString('utf8'))?.[1];
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
  if (body.kind === 'answered') return;
  if (body.kind === 'oversized') {
    const message = tooLarge(body.size);
    opts.logger.info(`admission webhook refused a request: ${message}`);
    const uid = headUid(body.head);
    if (uid === undefined) return reply(res, 413, `${message}\n`);
    const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: false, status: { code: 413, reason: 'RequestEntityTooLarge', message } } };
    return reply(res, 200, JSON.stringify(review), 'application/json');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.data.toString('utf8'));
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
