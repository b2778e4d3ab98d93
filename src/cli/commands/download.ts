// Downloads through DownloadRequests: the CLI creates one with a one-time public key, the server
// answers with a short-lived URL sealed to that key (a presigned object-store URL, or its own
// /download/<token> endpoint for stores that cannot sign), and the CLI opens it and fetches it.
// Only this process holds the private key, so others who may read the request's status cannot use
// the link. When the server's own URL is not reachable from here (server in a pod), the
// fetch goes through a Kubernetes port-forward to the server pod.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { PortForward } from '@kubernetes/client-node';
import {
  DOWNLOAD_TARGET_WORDS,
  LABEL_CREATED_BY,
  RESOURCES,
  newDownloadRequest,
  type DownloadRequest,
  type DownloadTarget,
} from '../../apis/v1/index.js';
import { createLinkKey, sealContext } from '../../auth/index.js';
import { CORE, isNotFound, type KubeObject } from '../../kube/index.js';
import { sleep } from '../../util/backoff.js';
import { formatDuration } from '../../util/duration.js';
import { errorMessage } from '../../util/errors.js';
import { CliError } from './errors.js';
import type { CliContext } from './kubeContext.js';

/** Path prefix of the server's own download endpoint (see controller/downloadRequest.ts). */
export const SERVER_DOWNLOAD_PATH = '/download/';

export interface TlsOptions {
  /** PEM file with CA certificates for an object store with a private CA. */
  cacert?: string;
  insecureSkipTlsVerify?: boolean;
}

export interface DownloadOptions extends TlsOptions {
  /** How long the server may take to answer the DownloadRequest. */
  timeoutMs: number;
  /** Keep streaming a live run log until the run ends (server endpoint only). */
  follow?: boolean;
  signal?: AbortSignal;
}

export function describeTarget(t: DownloadTarget): string {
  return `the ${DOWNLOAD_TARGET_WORDS[t.kind]} "${t.name}"`;
}

/** After this long without an answer, say what the CLI is waiting for. */
const SLOW_ANSWER_MS = 8000;

/** Creates a DownloadRequest, waits until the server has put a sealed URL in its status, and opens it. */
export async function requestDownloadURL(ctx: CliContext, target: DownloadTarget, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  const req = newDownloadRequest(ctx.namespace, target);
  req.metadata.labels = { ...req.metadata.labels, [LABEL_CREATED_BY]: 'stowage-cli' };
  const linkKey = createLinkKey();
  req.spec.publicKey = linkKey.publicKey;
  const created = await ctx.client.create<DownloadRequest>(RESOURCES.DownloadRequest, ctx.namespace, req);
  const name = created.metadata.name;
  const started = Date.now();
  const deadline = started + timeoutMs;
  let hinted = false;
  try {
    for (;;) {
      if (!hinted && Date.now() - started > SLOW_ANSWER_MS && deadline - Date.now() > 2000) {
        hinted = true;
        process.stderr.write(`Waiting for the Stowage server in namespace ${ctx.namespace} to answer DownloadRequest ${name}...\n`);
      }
      let cur: DownloadRequest;
      try {
        cur = await ctx.client.get<DownloadRequest>(RESOURCES.DownloadRequest, ctx.namespace, name);
      } catch (err) {
        if (isNotFound(err)) throw new CliError(`DownloadRequest ${name} was deleted before the server answered it`);
        throw err;
      }
      if (cur.status?.phase === 'Processed') {
        const sealed = cur.status.sealedURL;
        if (sealed !== undefined) {
          const url = linkKey.open(sealed, sealContext(created));
          if (typeof url !== 'string') throw new CliError(`cannot use the answer to DownloadRequest ${name}: ${url.error}`);
          return url;
        }
        const why = cur.status.message ?? (await warningFor(ctx, name));
        throw new CliError(`the Stowage server could not provide ${describeTarget(target)}${why === undefined ? '' : `: ${why}`}`);
      }
      if (Date.now() > deadline) {
        throw new CliError(
          `the Stowage server did not answer DownloadRequest ${name} within ${formatDuration(timeoutMs)}: ` +
            `is it running in namespace ${ctx.namespace}? (check with \`stowage version\`)`,
        );
      }
      await sleep(200, signal);
    }
  } finally {
    // The URL (presigned, or the server's signed token) does not need the request any more.
    await ctx.client.delete(RESOURCES.DownloadRequest, ctx.namespace, name).catch(() => undefined);
  }
}

/** The newest Warning event's message on an object, if any (how the server says why it failed). */
async function warningFor(ctx: CliContext, name: string): Promise<string | undefined> {
  try {
    const evs = await ctx.client.list<KubeObject & { type?: string; message?: string; lastTimestamp?: string }>(CORE.events, {
      namespace: ctx.namespace,
      fieldSelector: `involvedObject.name=${name}`,
    });
    const warnings = evs.items.filter((e) => e.type === 'Warning').sort((a, b) => (a.lastTimestamp ?? '').localeCompare(b.lastTimestamp ?? ''));
    return warnings.at(-1)?.message;
  } catch {
    return undefined;
  }
}

/** Connection failures that mean "this address is not reachable from here", worth a port-forward. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET']);

function isUnreachable(err: unknown): boolean {
  return UNREACHABLE.has((err as { code?: string }).code ?? '');
}

/** A non-2xx answer to a download. */
export class HttpStatusError extends CliError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface HttpBody {
  stream: Readable;
  /** Response headers, lower-case. */
  headers: http.IncomingHttpHeaders;
  close(): Promise<void>;
}

/** What an HTTP error response says, for the error line. */
async function errorBody(res: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res) {
    const b = c as Buffer;
    n += b.length;
    if (n > 4096) break;
    chunks.push(b);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  // S3 answers with XML: keep the <Message> (or <Code>) part.
  const xml = /<Message>([^<]*)<\/Message>/.exec(text) ?? /<Code>([^<]*)<\/Code>/.exec(text);
  return (xml?.[1] ?? text).trim().split('\n')[0] ?? '';
}

const CONNECT_TIMEOUT_MS = 5000;

/** GET a URL; rejects with the socket error (code kept) before a response, or a CliError on a non-2xx. */
function get(url: URL, tls: TlsOptions, what: string, hostHeader?: string, signal?: AbortSignal): Promise<HttpBody> {
  const mod = url.protocol === 'https:' ? https : http;
  const options: https.RequestOptions = { method: 'GET', signal, headers: hostHeader === undefined ? {} : { host: hostHeader } };
  if (url.protocol === 'https:') {
    if (tls.cacert !== undefined) options.ca = fs.readFileSync(tls.cacert);
    if (tls.insecureSkipTlsVerify === true) options.rejectUnauthorized = false;
  }
  return new Promise((resolve, reject) => {
    const req = mod.request(url, options, (res) => {
      req.setTimeout(0);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        void errorBody(res).then(
          (body) => reject(new HttpStatusError(`downloading ${what} failed: HTTP ${status}${body === '' ? '' : `: ${body}`}`, status)),
          (err: unknown) => reject(new HttpStatusError(`downloading ${what} failed: HTTP ${status} (${errorMessage(err)})`, status)),
        );
        return;
      }
      resolve({
        stream: res,
        headers: res.headers,
        close: async () => {
          res.destroy();
          req.destroy();
        },
      });
    });
    req.setTimeout(CONNECT_TIMEOUT_MS, () => req.destroy(Object.assign(new Error(`no answer from ${url.host} within ${CONNECT_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end();
  });
}

interface ServerPod {
  name: string;
  port: number;
}

type PodLike = KubeObject & { status?: { phase?: string; podIP?: string }; metadata?: KubeObject['metadata'] & { labels?: Record<string, string> } };

/** The pod serving a /download/ URL: the one whose IP is the URL's host, else a running Stowage server pod. */
export function pickServerPod(pods: readonly PodLike[], url: URL): ServerPod | undefined {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const running = pods.filter((p) => p.status?.phase === 'Running' && p.metadata?.name !== undefined);
  const byIp = running.find((p) => p.status?.podIP === url.hostname);
  const byLabel = running.find((p) => {
    const l = p.metadata?.labels ?? {};
    return l['app.kubernetes.io/name'] === 'stowage' || l.app === 'stowage' || l.component === 'stowage-server';
  });
  const pod = byIp ?? byLabel;
  const name = pod?.metadata?.name;
  return name === undefined ? undefined : { name, port };
}

/** A local listener whose connections are port-forwarded to the pod. */
async function startPortForward(ctx: CliContext, pod: ServerPod): Promise<{ port: number; lastError(): string | undefined; close(): Promise<void> }> {
  const pf = new PortForward(ctx.kc);
  const sockets = new Set<net.Socket>();
  let lastError: string | undefined;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // The HTTP client on the other end sees the reset; the reason is kept for its error line.
    socket.on('error', () => undefined);
    pf.portForward(ctx.namespace, pod.name, [pod.port], socket, null, socket).catch((err: unknown) => {
      // client-node rejects with a WebSocket ErrorEvent, not an Error.
      lastError = errorMessage(err);
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  return {
    port,
    lastError: () => lastError,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Opens a download URL: directly, or (for the server's own endpoint when its address is not
 * reachable from here) through a port-forward to the server pod.
 */
export async function openURL(ctx: CliContext, rawUrl: string, what: string, opts: TlsOptions & { follow?: boolean; signal?: AbortSignal } = {}): Promise<HttpBody> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new CliError(`the server returned an invalid download URL for ${what}`);
  }
  if (url.protocol === 'file:') return openFile(url, what);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`the server returned a ${url.protocol} URL for ${what}, which the CLI cannot fetch`);
  const own = url.pathname.startsWith(SERVER_DOWNLOAD_PATH);
  if (own && opts.follow === true) url.searchParams.set('follow', '1');
  try {
    return await get(url, opts, what, undefined, opts.signal);
  } catch (err) {
    if (!own || !isUnreachable(err)) throw wrapFetchError(err, url, what);
    // In-cluster server: its URL carries the pod IP. Reach it through the apiserver instead.
    const pods = await ctx.client.list<PodLike>(CORE.pods, { namespace: ctx.namespace });
    const pod = pickServerPod(pods.items, url);
    if (pod === undefined) {
      throw new CliError(
        `cannot reach the Stowage server at ${url.host} to download ${what} (${errorMessage(err)}), ` +
          `and found no running server pod in namespace ${ctx.namespace} to port-forward to`,
      );
    }
    const fwd = await startPortForward(ctx, pod);
    const local = new URL(url.toString());
    local.protocol = 'http:';
    local.hostname = '127.0.0.1';
    local.port = String(fwd.port);
    try {
      const body = await get(local, opts, what, url.host, opts.signal);
      return {
        ...body,
        close: async () => {
          await body.close();
          await fwd.close();
        },
      };
    } catch (err2) {
      await fwd.close();
      const why = fwd.lastError();
      if (why !== undefined) throw new CliError(`cannot reach the Stowage server at ${url.host}, and the port-forward to pod ${ctx.namespace}/${pod.name} failed: ${why}`);
      throw wrapFetchError(err2, url, `${what} (through a port-forward to pod ${pod.name})`);
    }
  }
}

function openFile(url: URL, what: string): HttpBody {
  // Stores on a local disk may hand out file:// URLs; usable when the CLI runs on the same machine.
  const path = decodeURIComponent(url.pathname);
  if (!fs.existsSync(path)) throw new CliError(`${what} is not at ${path} (the file:// URL from the server is not on this machine?)`);
  const stream = fs.createReadStream(path);
  return { stream, headers: {}, close: async () => void stream.destroy() };
}

function wrapFetchError(err: unknown, url: URL, what: string): Error {
  if (err instanceof CliError) return err;
  return new CliError(`downloading ${what} from ${url.host} failed: ${errorMessage(err)}`, 1, { cause: err });
}

/** DownloadRequest + fetch in one step. */
export async function download(ctx: CliContext, target: DownloadTarget, opts: DownloadOptions): Promise<HttpBody> {
  const url = await requestDownloadURL(ctx, target, opts.timeoutMs, opts.signal);
  return openURL(ctx, url, describeTarget(target), opts);
}

/** Passes the stream through gunzip when it starts with the gzip magic bytes; otherwise as is. */
export async function* maybeGunzip(source: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  let first: IteratorResult<Uint8Array> | undefined;
  while (head.length < 2) {
    first = await it.next();
    if (first.done === true) break;
    head = Buffer.concat([head, Buffer.from(first.value)]);
  }
  const rest = async function* (): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    for (;;) {
      const r = await it.next();
      if (r.done === true) return;
      yield Buffer.from(r.value);
    }
  };
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
    const gunzip = createGunzip();
    const input = Readable.from(rest());
    input.on('error', (err) => gunzip.destroy(err));
    input.pipe(gunzip);
    for await (const c of gunzip) yield c as Buffer;
    return;
  }
  yield* rest();
}

/** Splits a byte stream into lines (without the newline); a last line without newline is yielded too. */
export async function* lines(source: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of source) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      yield buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
    }
  }
  buf += decoder.decode();
  if (buf !== '') yield buf;
}

/** Reads a whole (possibly gzipped) body into memory, refusing more than maxBytes. */
export async function readAll(body: HttpBody, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of maybeGunzip(body.stream)) {
      n += c.length;
      if (n > maxBytes) throw new CliError(`${what} is larger than ${maxBytes} bytes`);
      chunks.push(c);
    }
  } finally {
    await body.close();
  }
  return Buffer.concat(chunks);
}

/** Reads a (possibly gzipped) JSON artifact. */
export async function readJson(body: HttpBody, what: string, maxBytes = 256 * 1024 * 1024): Promise<unknown> {
  const data = await readAll(body, maxBytes, what);
  try {
    return JSON.parse(data.toString('utf8'));
  } catch (err) {
    throw new CliError(`${what} is not valid JSON: ${errorMessage(err)}`);
  }
}
