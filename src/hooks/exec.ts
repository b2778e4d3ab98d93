// Running a command in a pod's container through the API server's pods/exec subresource, over
// WebSocket (@kubernetes/client-node's Exec), as the client a run acts with: in trust mode requester
// that client impersonates the requester, so the API server's RBAC decides whether they may exec.
// Never throws: every way an exec can go wrong comes back as an outcome with a precise message.
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type https from 'node:https';
import WebSocket from 'ws';
import { impersonationHeaders, type DynamicClient, type Impersonation } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import { DEFAULT_TAIL_BYTES, outputTail } from './tail.js';

/** Whose connection an exec uses: a kubeconfig and, in trust mode requester, the user it impersonates. */
export interface ExecConnection {
  kubeConfig: KubeConfig;
  impersonate?: Impersonation | undefined;
}

/** The connection of a run's client (auth/authority.ts): the same kubeconfig, the same impersonation. */
export function connectionOf(client: Pick<DynamicClient, 'kubeConfig' | 'impersonated'>): ExecConnection {
  return { kubeConfig: client.kubeConfig, impersonate: client.impersonated };
}

export interface ExecTarget {
  namespace: string;
  pod: string;
  container: string;
  command: readonly string[];
}

export interface ExecOptions {
  /** The exec is ended (its connection closed) after this long, and counts as failed (timedOut). */
  timeoutMs: number;
  /** Aborting ends the exec as a timeout does (error: aborted). */
  signal?: AbortSignal | undefined;
  /** Bytes of stdout and of stderr kept (their ends). Default 2 KiB each. */
  tailBytes?: number;
}

export interface ExecOutcome {
  /** The command's exit code, from the status channel; undefined when it did not run or did not end. */
  exitCode: number | undefined;
  /** The ends of its output (outputTail: a cut is marked `[N bytes before]`). */
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  /**
   * Why the command did not run to an exit code, or failed outside itself: refused (403, naming the
   * user, the pod and the right), no such container or pod, timed out, connection lost. Undefined
   * when it exited (whatever the code).
   */
  error?: string;
  /** The HTTP status the API server refused the exec with, if it did. */
  httpStatus?: number;
}

/** The API server's refusal of the upgrade: its HTTP status and Status message. */
export class ExecRefused extends Error {
  override readonly name = 'ExecRefused';
  constructor(readonly status: number, readonly apiMessage: string) {
    super(`HTTP ${status}: ${apiMessage}`);
  }
}

/** At most this much of a refusal's body is read. */
const MAX_REFUSAL_BYTES = 64 * 1024;

/** Channel protocols offered; v5 (close frames for stdin) is not, as hooks send no stdin. */
const PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

export async function execInPod(conn: ExecConnection, target: ExecTarget, opts: ExecOptions): Promise<ExecOutcome> {
  const started = Date.now();
  const out = outputTail(opts.tailBytes ?? DEFAULT_TAIL_BYTES);
  const err = outputTail(opts.tailBytes ?? DEFAULT_TAIL_BYTES);
  let socket: WebSocket | undefined;
  let status: V1Status | undefined;
  let ended: 'timeout' | 'aborted' | undefined;
  const stop = (why: 'timeout' | 'aborted'): void => {
    ended ??= why;
    socket?.terminate();
  };
  const timer = setTimeout(() => stop('timeout'), opts.timeoutMs);
  const onAbort = (): void => stop('aborted');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const result = (extra: Partial<ExecOutcome>): ExecOutcome => ({
    exitCode: undefined, stdout: out.text(), stderr: err.text(), durationMs: Date.now() - started, timedOut: ended === 'timeout', ...extra,
  });
  try {
    if (opts.signal?.aborted === true) return result({ error: 'the run was ended before the exec started' });
    let connectError: unknown;
    const handler = {
      connect: (path: string, _text: unknown, binary: ((stream: number, buff: Buffer) => boolean) | null) =>
        openSocket(conn, path, binary, () => ended, (ws) => (socket = ws)),
    };
    await new Exec(conn.kubeConfig, handler)
      .exec(target.namespace, target.pod, target.container, [...target.command], out.stream, err.stream, null, false, (s) => (status = s))
      .then((ws) => new Promise<void>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve() : ws.once('close', () => resolve()))))
      .catch((e: unknown) => void (connectError = e));
    if (ended === 'timeout') return result({ error: `timed out after ${formatMs(opts.timeoutMs)}; the exec's connection was closed` });
    if (ended === 'aborted') return result({ error: 'the run was ended while the hook ran; the exec\'s connection was closed' });
    if (connectError !== undefined) return result(refusal(conn, target, connectError));
    if (status === undefined) return result({ error: 'the exec\'s connection closed before the API server sent the command\'s exit status' });
    const code = exitCodeOf(status);
    if (code === undefined) return result({ error: `the command did not run: ${status.message ?? status.reason ?? 'the API server gave no reason'}` });
    return result({ exitCode: code });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

/** The exit code a status channel message carries: 0 for Success, the ExitCode cause for NonZeroExitCode. */
export function exitCodeOf(s: V1Status): number | undefined {
  if (s.status === 'Success') return 0;
  if (s.reason !== 'NonZeroExitCode') return undefined;
  const cause = s.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
  const n = Number(cause);
  return cause !== undefined && Number.isInteger(n) ? n : undefined;
}

/** Who an exec acts as, for messages. */
export function execUser(conn: ExecConnection): string {
  return conn.impersonate !== undefined ? conn.impersonate.username : "the server's own account";
}

/** A failed connection as the outcome's error: refusals name the user, the pod and the right, or the missing container. */
export function refusal(conn: ExecConnection, target: ExecTarget, e: unknown): Pick<ExecOutcome, 'error' | 'httpStatus'> {
  const pod = `${target.namespace}/${target.pod}`;
  if (!(e instanceof ExecRefused)) return { error: `could not connect to exec into pod ${pod}: ${errorMessage(e)}` };
  const said = e.apiMessage !== '' ? ` (the API server said: ${e.apiMessage})` : '';
  if (e.status === 403) {
    return { httpStatus: 403, error: `${execUser(conn)} may not exec into pod ${pod}: lacks create pods/exec in namespace ${target.namespace}${said}` };
  }
  if (e.status === 404) return { httpStatus: 404, error: `pod ${pod} not found${said}` };
  if (e.status === 400 && /container .* is not valid for pod|container not found/i.test(e.apiMessage)) {
    return { httpStatus: 400, error: `container "${target.container}" not found in pod ${pod}${said}` };
  }
  return { httpStatus: e.status, error: `the API server refused the exec into pod ${pod} (container "${target.container}"): HTTP ${e.status}${said}` };
}

/**
 * The WebSocket for `path`, with the kubeconfig's credentials and TLS plus the impersonation
 * headers. An upgrade the API server refuses rejects with ExecRefused and its Status message.
 */
async function openSocket(
  conn: ExecConnection, path: string, binary: ((stream: number, buff: Buffer) => boolean) | null,
  ended: () => string | undefined, onSocket: (ws: WebSocket) => void,
): Promise<WebSocket> {
  const cluster = conn.kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const httpsOpts: https.RequestOptions = {};
  await conn.kubeConfig.applyToHTTPSOptions(httpsOpts);
  const headers: OutgoingHttpHeaders = { ...(httpsOpts.headers as OutgoingHttpHeaders | undefined), ...(conn.impersonate !== undefined ? impersonationHeaders(conn.impersonate) : {}) };
  if (ended() !== undefined) throw new Error('ended before connecting');
  const ws = new WebSocket(`${url.origin}${url.pathname.replace(/\/+$/, '')}${path}`, PROTOCOLS, { ...httpsOpts, headers });
  onSocket(ws);
  return new Promise((resolve, reject) => {
    let open = false;
    ws.on('unexpected-response', (req: ClientRequest, res: IncomingMessage) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        if (body.length < MAX_REFUSAL_BYTES) body += c.toString('utf8');
      });
      res.on('end', () => {
        reject(new ExecRefused(res.statusCode ?? 0, statusMessage(body)));
        req.destroy();
        ws.terminate();
      });
      res.on('error', (e) => reject(e));
    });
    ws.on('open', () => {
      open = true;
      resolve(ws);
    });
    ws.on('error', (e) => {
      if (!open) reject(e);
    });
    ws.on('close', () => {
      if (!open) reject(new Error(ended() !== undefined ? 'ended before the exec started' : 'the connection closed before the exec started'));
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary || data.length < 1) return;
      if (binary !== null && !binary(data[0] ?? 0, data.subarray(1))) ws.close();
    });
  });
}

/** The message of a Status body, or the body itself (cut) when it is not one. */
export function statusMessage(body: string): string {
  try {
    const s = JSON.parse(body) as { kind?: unknown; message?: unknown };
    if (typeof s.message === 'string') return s.message;
  } catch {
    // not JSON: shown as is
  }
  return body.trim().slice(0, 500);
}

export function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
