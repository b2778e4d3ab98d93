// A dynamic Kubernetes client over raw node:https. client-node's generated clients serialise every
// object through their typed models (slow, and they drop fields of unknown shape); a backup moves
// thousands of arbitrary objects, so this client sends and receives plain JSON over one keep-alive
// agent, with client-go style QPS/burst limiting shared by every call of the client.
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { backoff } from '../util/backoff.js';
import { systemClock, type TimerClock } from '../util/clock.js';
import { KubeError, errorFromResponse, errorFromStatus, isAlreadyExists, isNotFound, type RequestTarget, type Status } from './errors.js';
import { classifyFailure, outageError } from './outage.js';
import { PageSizer } from './pageSizer.js';
import { createTokenBucket, type RateLimiter } from './rateLimiter.js';
import { WatchLineSplitter } from './watchLines.js';
import { mergeDiscovery, type DiscoveredEntry, type GroupLists } from './discovery.js';
import { apiVersionOf, groupResourceOf, resourcePath, type ApiResource, type KubeObject, type ResourceRef } from './resources.js';

export interface ClientOptions {
  /**
   * Sustained requests per second (client-go `QPS`); <= 0 disables limiting. Default 20. Discovery
   * has a bucket of its own with the same qps and burst, as client-go's discovery client has its own
   * rate limiter: reading every group version (~40 GETs) does not take from the budget of the LISTs.
   */
  qps?: number;
  /** Requests allowed in a burst above qps. Default 30. */
  burst?: number;
  userAgent?: string;
  /** Per-request timeout for everything but watches. Default 60 s. */
  timeoutMs?: number;
  /** Observes every completed request (for metrics). status is 0 when no response arrived. */
  onRequest?: (info: { verb: string; resource: string; status: number; durationMs: number }) => void;
  /**
   * While the apiserver does not answer (see outage.ts), requests other than watches retry with
   * backoff for up to this long, then fail naming the outage. Default 0: they fail at once.
   */
  outageTimeoutMs?: number;
  /**
   * API groups whose objects are this program's own records (stowage.dev): their status writes (a
   * run's final phase, "failed: the Kubernetes API was unreachable for 5m0s") wait out an outage
   * however long it lasts, until their signal aborts, so a run that failed for an outage still says
   * so once the API is back. Only under a positive outage timeout.
   */
  recordGroups?: readonly string[];
  /**
   * listPages/listAll ask for pages that stop short of this many bytes, as well as of pageSize items;
   * <= 0 disables the byte budget. Default 0. See pageSizer.ts.
   */
  pageBytes?: number;
  /** How long after an outage a 401 or 403 is taken for an API server still filling its authorizer's caches. Default 15 s (tests shorten it). */
  authSettleMs?: number;
  /** Times the outage window and the retry backoffs (a test moves it past the window). Default the system clock. */
  clock?: TimerClock;
}

export interface ListOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  limit?: number | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface ListPage<T> {
  items: T[];
  /** Token for the next page; undefined on the last page. */
  continue: string | undefined;
  resourceVersion: string;
}

export interface WriteOptions {
  /** Server-side dry run: validated and admitted, never persisted. */
  dryRun?: boolean;
  fieldManager?: string;
  signal?: AbortSignal;
}

export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

export interface PatchOptions extends WriteOptions {
  /** Server-side apply only: take ownership of conflicting fields. */
  force?: boolean;
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface WatchOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Start after this version (from a list, or the last event seen). */
  resourceVersion?: string | undefined;
  allowWatchBookmarks?: boolean;
  /** Server closes the watch after this long; the caller then re-watches. Default 5–10 min, randomised. */
  timeoutSeconds?: number;
  signal?: AbortSignal | undefined;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface DiscoverOptions {
  /**
   * Called for a group version whose resource list could not be read (an aggregated API that is down,
   * for example); discovery then goes on without it. Without this callback such a failure is thrown.
   */
  onGroupError?: (groupVersion: string, err: KubeError) => void;
}

export interface ServerVersion {
  major: string;
  minor: string;
  gitVersion: string;
}

export interface RawRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  target?: RequestTarget;
  signal?: AbortSignal | undefined;
  /** Extra request headers (impersonation). */
  headers?: Record<string, string | string[]>;
}

/** A user to act as: the API server authorizes and admits each request as this user (and groups). */
export interface Impersonation {
  username: string;
  groups: readonly string[];
  /** Sent as Impersonate-Uid only when non-empty (API servers before 1.22 do not know the header). */
  uid?: string;
}

/** The Impersonate-* headers for `who`. */
export function impersonationHeaders(who: Impersonation): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = { 'Impersonate-User': who.username };
  if (who.groups.length > 0) h['Impersonate-Group'] = [...who.groups];
  if (who.uid !== undefined && who.uid !== '') h['Impersonate-Uid'] = who.uid;
  return h;
}

export interface DynamicClient {
  /** The apiserver URL, from the kubeconfig. */
  readonly server: string;
  /** Every resource served, once each (see ApiResource for the version chosen). */
  discover(opts?: DiscoverOptions): Promise<ApiResource[]>;
  /** Whether the group version's resource list (read now, not cached) holds the resource; false when the group version is gone. */
  serves(ref: { group: string; version: string; resource: string }): Promise<boolean>;
  list<T = KubeObject>(res: ResourceRef, opts?: ListOptions): Promise<ListPage<T>>;
  /** Pages of `pageSize` (default 500) until the list is exhausted. */
  listPages<T = KubeObject>(res: ResourceRef, opts?: ListOptions & { pageSize?: number }): AsyncGenerator<ListPage<T>>;
  /** Every item across all pages, and the resourceVersion of the first page (for a following watch). */
  listAll<T = KubeObject>(res: ResourceRef, opts?: ListOptions & { pageSize?: number }): Promise<{ items: T[]; resourceVersion: string }>;
  get<T = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, opts?: { signal?: AbortSignal }): Promise<T>;
  create<T = KubeObject>(res: ResourceRef, namespace: string | undefined, obj: object, opts?: WriteOptions): Promise<T>;
  replace<T = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, obj: object, opts?: WriteOptions): Promise<T>;
  patch<T = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, patch: unknown, type: PatchType, opts?: PatchOptions): Promise<T>;
  delete(res: ResourceRef, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void>;
  /** JSON merge patch of the status subresource (`{status: {...}}`). */
  patchStatus<T = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, mergePatch: unknown, opts?: WriteOptions): Promise<T>;
  /** PUT of the status subresource; fails with 409 if the object's resourceVersion is stale. */
  replaceStatus<T = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, obj: object, opts?: WriteOptions): Promise<T>;
  /** A watch stream. Throws KubeError on failure; a 410 (isGone) means the version is too old: relist. */
  watch<T = KubeObject>(res: ResourceRef, opts?: WatchOptions): AsyncGenerator<WatchEvent<T>>;
  version(): Promise<ServerVersion>;
  /** Any JSON request; the result is the parsed body. */
  request<T = unknown>(req: RawRequest): Promise<T>;
  /**
   * The same client (one transport, one rate limit, one page sizer) with another outage timeout:
   * 0 for calls that must fail at once when the API is down (a start-up check, events).
   */
  withOutageTimeout(ms: number): DynamicClient;
  /**
   * The same client (transport, rate limit, page sizer, outage timeout) acting as `who`: every
   * request carries Impersonate-* headers, so the API server's RBAC and admission decide as for that user.
   */
  impersonating(who: Impersonation): DynamicClient;
  /** The user this view acts as, if it impersonates one. */
  readonly impersonated: Impersonation | undefined;
  /**
   * The kubeconfig the client was made from, for connections this client does not make itself
   * (exec over WebSocket, hooks/exec.ts): they add `impersonated`'s headers on their own.
   */
  readonly kubeConfig: KubeConfig;
  /** Closes idle keep-alive sockets. The client stays usable. */
  close(): void;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

const AUTH_SETTLE_MS = 15_000;

const isAuthRefusal = (err: unknown): boolean => err instanceof KubeError && (err.status === 401 || err.status === 403);

/** How long cached auth headers are reused before the kubeconfig is asked again (token rotation). */
const AUTH_TTL_MS = 30_000;

interface Transport {
  mod: typeof https | typeof http;
  agent: http.Agent;
  watchAgent: http.Agent;
}

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Size of the body on the wire. */
  bytes: number;
}

/** How one request is sent and retried (see request() in createDynamicClient). */
interface RequestRules<T> {
  bucket?: RateLimiter;
  /** A response body past this many bytes is cut off (ResponseTooLarge). */
  maxBytes?: number;
  /** Told the size of the body that answered. */
  onBytes?: (bytes: number) => void;
  /** Must not be applied twice: retried in an outage only when it provably never reached the server. */
  once?: boolean;
  /** For a retry's error after an attempt that may have been applied: the result that attempt had. */
  settled?: (err: unknown) => Promise<{ value: T } | undefined>;
}

function targetOf(verb: string, res: ResourceRef, namespace?: string, name?: string): RequestTarget {
  return { verb, resource: groupResourceOf(res), namespace: res.namespaced === false ? undefined : namespace, name };
}

function buildQuery(q: Record<string, string | number | boolean | undefined> | undefined): string {
  if (q === undefined) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === '') continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

function isRetryableSocketError(err: unknown, reused: boolean): boolean {
  const code = (err as { code?: string }).code;
  // A keep-alive socket the server closed in the meantime: the request never reached it.
  return reused && (code === 'ECONNRESET' || code === 'EPIPE');
}

/**
 * A client for the kubeconfig's current context. Synchronous: TLS material is read on the first
 * request, so a broken kubeconfig surfaces as that request's error.
 */
export function createDynamicClient(kc: KubeConfig, opts: ClientOptions = {}): DynamicClient {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error(`kubeconfig has no cluster for context "${kc.getCurrentContext()}"`);
  const server = cluster.server;
  const base = new URL(server);
  const basePath = base.pathname.replace(/\/+$/, '');
  let transportP: Promise<Transport> | undefined;
  let transportNow: Transport | undefined;
  const getTransport = (): Promise<Transport> =>
    (transportP ??= (async () => {
      const tls: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(tls);
      const agentOpts: https.AgentOptions = {
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        rejectUnauthorized: tls.rejectUnauthorized,
        servername: tls.servername,
      };
      transportNow =
        base.protocol === 'https:'
          ? { mod: https, agent: new https.Agent({ ...agentOpts, keepAlive: true }), watchAgent: new https.Agent({ ...agentOpts, keepAlive: false }) }
          : { mod: http, agent: new http.Agent({ keepAlive: true }), watchAgent: new http.Agent({ keepAlive: false }) };
      return transportNow;
    })());
  const limiter: RateLimiter = createTokenBucket({ qps: opts.qps ?? 20, burst: opts.burst ?? 30 });
  const discoveryLimiter: RateLimiter = createTokenBucket({ qps: opts.qps ?? 20, burst: opts.burst ?? 30 });
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const clock = opts.clock ?? systemClock;
  const userAgent = opts.userAgent ?? 'stowage';

  let auth: { headers: Record<string, string>; at: number } | undefined;
  async function authHeaders(refresh = false): Promise<Record<string, string>> {
    if (!refresh && auth !== undefined && Date.now() - auth.at < AUTH_TTL_MS) return auth.headers;
    const o: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(o);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = String(v);
    if (typeof o.auth === 'string' && o.auth !== '') headers.Authorization = `Basic ${Buffer.from(o.auth).toString('base64')}`;
    auth = { headers, at: Date.now() };
    return headers;
  }

  async function send(req: RawRequest, headers: Record<string, string | string[]>, body: string | undefined, maxBytes: number): Promise<RawResponse> {
    const transport = await getTransport();
    return new Promise((resolve, reject) => {
      const r = transport.mod.request(
        {
          protocol: base.protocol,
          hostname: base.hostname,
          port: base.port,
          path: basePath + req.path + buildQuery(req.query),
          method: req.method,
          agent: transport.agent,
          headers,
          signal: req.signal,
        },
        (res) => {
          let chunks: Buffer[] = [];
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            chunks.push(c);
            if (bytes > maxBytes && (res.statusCode ?? 0) < 300) {
              chunks = [];
              r.destroy(new ResponseTooLarge(maxBytes));
            }
          });
          res.on('end', () => {
            const all = Buffer.concat(chunks, bytes);
            // The chunks go before the text is made: the body is held once as bytes, then once as text.
            chunks = [];
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: all.toString('utf8'), bytes });
          });
          res.on('error', reject);
        },
      );
      r.setTimeout(timeoutMs, () => r.destroy(Object.assign(new Error(`no response within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      r.on('error', (err) => reject(Object.assign(err, { reusedSocket: r.reusedSocket })));
      r.end(body);
    });
  }

  /** One request, with the socket, auth and throttling retries; no outage retry (see request). */
  async function requestOnce<T>(req: RawRequest, bucket: RateLimiter = limiter, maxBytes = Infinity, onBytes?: (bytes: number) => void): Promise<T> {
    const target = req.target ?? { verb: req.method.toLowerCase(), resource: req.path };
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      await bucket.take(req.signal);
      const headers: Record<string, string | string[]> = {
        ...(await authHeaders()),
        ...req.headers,
        Accept: req.accept ?? 'application/json',
        'User-Agent': userAgent,
      };
      if (body !== undefined) {
        headers['Content-Type'] = req.contentType ?? 'application/json';
        headers['Content-Length'] = String(Buffer.byteLength(body));
      }
      const t0 = performance.now();
      let res: RawResponse;
      try {
        res = await send(req, headers, body, maxBytes);
      } catch (err) {
        opts.onRequest?.({ verb: target.verb, resource: target.resource, status: 0, durationMs: performance.now() - t0 });
        if (req.signal?.aborted || err instanceof ResponseTooLarge) throw err;
        if (attempt < 2 && isRetryableSocketError(err, (err as { reusedSocket?: boolean }).reusedSocket === true)) continue;
        const code = (err as { code?: string }).code;
        throw new KubeError(target, 0, code ?? 'NetworkError', `cannot reach the apiserver at ${cluster?.server}: ${(err as Error).message}`, undefined, err);
      }
      opts.onRequest?.({ verb: target.verb, resource: target.resource, status: res.status, durationMs: performance.now() - t0 });
      if (res.status === 401 && !refreshed) {
        // The token may have rotated (in-cluster token file, exec plugin): ask the kubeconfig again once.
        refreshed = true;
        await authHeaders(true);
        continue;
      }
      if ((res.status === 429 || res.status === 503) && attempt < 3) {
        const retryAfter = Number(res.headers['retry-after']);
        if (res.status === 429 || Number.isFinite(retryAfter)) {
          await clock.sleep(Number.isFinite(retryAfter) ? Math.min(retryAfter, 10) * 1000 : backoff(attempt, { baseMs: 200, maxMs: 5000 }), req.signal);
          continue;
        }
      }
      if (res.status >= 400 || res.status < 200) throw errorFromResponse(target, res.status, res.body);
      onBytes?.(res.bytes);
      if (res.body === '') return undefined as T;
      try {
        return JSON.parse(res.body) as T;
      } catch (err) {
        throw new KubeError(target, res.status, 'InvalidResponse', `the apiserver sent a body that is not JSON: ${res.body.slice(0, 200)}`, undefined, err);
      }
    }
  }

  const sizer = new PageSizer(opts.pageBytes ?? 0);
  /** When a request of this client last found the API unreachable (see request()). */
  let lastUnreachableAt = Number.NEGATIVE_INFINITY;
  const authSettleMs = opts.authSettleMs ?? AUTH_SETTLE_MS;

  /** A GET of one of the apiserver's own paths answers 2xx (a non-JSON "ok" counts). */
  async function probeOk(path: string, signal: AbortSignal | undefined): Promise<boolean> {
    try {
      const probe = AbortSignal.timeout(Math.min(timeoutMs, 10_000));
      await requestOnce({ method: 'GET', path, accept: 'application/json, text/plain', target: { verb: 'get', resource: path }, signal: signal === undefined ? probe : AbortSignal.any([signal, probe]) }, discoveryLimiter);
      return true;
    } catch (err) {
      return err instanceof KubeError && err.status >= 200 && err.status < 300;
    }
  }

  /** Whether the apiserver itself answers: a 5xx of one request is an outage only when it does not. */
  const apiserverAnswers = (signal: AbortSignal | undefined): Promise<boolean> => probeOk('/version', signal);
  /** Whether the apiserver says it is ready (its authorizer's caches filled); a refusal of /readyz itself is a no. */
  const apiserverReady = (signal: AbortSignal | undefined): Promise<boolean> => probeOk('/readyz', signal);

  /**
   * A request under an outage timeout (see outage.ts). `once`: the request must not be applied twice
   * (a create with generateName, a JSON patch), so it is retried only when it provably never reached
   * the server. `settled`: for a retry's error after an attempt that may have been applied, the
   * result that attempt had (a create that answers AlreadyExists for the object it made itself).
   */
  async function request<T>(req: RawRequest, outageMs: number, rules: RequestRules<T> = {}): Promise<T> {
    const bucket = rules.bucket ?? limiter;
    if (outageMs <= 0) return requestOnce<T>(req, bucket, rules.maxBytes, rules.onBytes);
    let maybeApplied = false;
    let downSince: number | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        return await requestOnce<T>(req, bucket, rules.maxBytes, rules.onBytes);
      } catch (err) {
        if (req.signal?.aborted || err instanceof ResponseTooLarge) throw err;
        const kind = classifyFailure(err);
        if (kind !== undefined) lastUnreachableAt = clock.now().getTime();
        // A restarted API server answers before its authorizer's caches are filled: for a moment
        // it refuses what RBAC allows (403, and 401 for tokens it cannot check yet). Right after
        // this client saw the API unreachable, such a refusal is waited out like the outage.
        // How long that moment lasts depends on the machine's load: the wait goes on for
        // authSettleMs after the outage, and beyond that for as long as /readyz says not ready
        // (bounded by the outage timeout).
        const sinceDown = clock.now().getTime() - lastUnreachableAt;
        if (kind === undefined && isAuthRefusal(err) && sinceDown < outageMs && (rules.once !== true || !maybeApplied)
          && (sinceDown < authSettleMs || !(await apiserverReady(req.signal)))) {
          await clock.sleep(Math.min(backoff(attempt, { baseMs: 250, maxMs: 2000 }), authSettleMs), req.signal);
          continue;
        }
        if (kind === undefined || (kind === 'status' && (await apiserverAnswers(req.signal)))) {
          const settled = maybeApplied ? await rules.settled?.(err) : undefined;
          if (settled !== undefined) return settled.value;
          throw err;
        }
        if (kind !== 'unsent' && rules.once === true) throw err;
        downSince ??= clock.now().getTime();
        const downMs = clock.now().getTime() - downSince;
        if (downMs >= outageMs) throw outageError(err as KubeError, outageMs);
        if (kind !== 'unsent') maybeApplied = true;
        await clock.sleep(Math.min(backoff(attempt, { baseMs: 250, maxMs: 5000 }), outageMs - downMs), req.signal);
      }
    }
  }

  /**
   * Whether `obj`, found by a create retried after an attempt that may have been applied, is the one
   * that attempt made: created by this client's field manager no earlier than the first attempt
   * (creationTimestamp has whole seconds). Without managedFields (disabled on the server) the time alone decides.
   */
  function madeByUs(obj: KubeObject, manager: string, since: number): boolean {
    const meta = obj.metadata as { creationTimestamp?: string; managedFields?: { manager?: string; operation?: string }[] } | undefined;
    const created = Date.parse(meta?.creationTimestamp ?? '');
    if (!(created >= Math.floor(since / 1000) * 1000 - 1000)) return false;
    const fields = meta?.managedFields;
    return fields === undefined || fields.some((f) => f.operation === 'Create' && f.manager === manager);
  }

  function makeClient(outageMs: number, who?: Impersonation): DynamicClient {
    const extra = who === undefined ? undefined : impersonationHeaders(who);
    const withHeaders = (req: RawRequest): RawRequest => (extra === undefined ? req : { ...req, headers: { ...req.headers, ...extra } });
    return buildClient(outageMs, <T>(req: RawRequest, rules?: RequestRules<T>) => request<T>(withHeaders(req), outageMs, rules), who, withHeaders);
  }

  type Call = <T>(req: RawRequest, rules?: RequestRules<T>) => Promise<T>;

  // The methods, over `call` (request() under this view's outage timeout).
  function buildClient(outageMs: number, call: Call, who: Impersonation | undefined, withHeaders: (req: RawRequest) => RawRequest): DynamicClient {
    const recordGroups = new Set(opts.recordGroups ?? []);
    const isRecord = (res: ResourceRef): boolean => outageMs > 0 && recordGroups.has(res.group);
    const recordCall: Call = <T>(req: RawRequest, rules?: RequestRules<T>) => request<T>(withHeaders(req), Infinity, rules);
    const watchHeaders = who === undefined ? {} : impersonationHeaders(who);
    function writeQuery(o: WriteOptions | undefined): Record<string, string | undefined> {
      return { dryRun: o?.dryRun === true ? 'All' : undefined, fieldManager: o?.fieldManager };
    }

    async function list<T>(res: ResourceRef, o: ListOptions = {}): Promise<ListPage<T>> {
      return (await listSized<T>(res, o, Infinity)).page;
    }

    /** One page, cut off (ResponseTooLarge) past maxBytes; with the body's size. */
    async function listSized<T>(res: ResourceRef, o: ListOptions, maxBytes: number): Promise<{ page: ListPage<T>; bytes: number }> {
      let bytes = 0;
      const body = await call<{ apiVersion?: string; kind?: string; metadata?: { continue?: string; resourceVersion?: string }; items?: T[] }>({
        method: 'GET',
        path: resourcePath(res, o.namespace),
        query: { labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, limit: o.limit, continue: o.continue, resourceVersion: o.resourceVersion },
        target: targetOf('list', res, o.namespace),
        signal: o.signal,
      }, { maxBytes, onBytes: (n) => (bytes = n) });
      const items = body.items ?? [];
      // Items of built-in lists come without apiVersion/kind; fill them in so every item is self-describing.
      const kind = body.kind?.replace(/List$/, '');
      for (const item of items as KubeObject[]) {
        if (item.apiVersion === undefined && body.apiVersion !== undefined) item.apiVersion = body.apiVersion;
        if (item.kind === undefined && kind !== undefined) item.kind = kind;
      }
      const cont = body.metadata?.continue;
      return { page: { items, continue: cont === undefined || cont === '' ? undefined : cont, resourceVersion: body.metadata?.resourceVersion ?? '' }, bytes };
    }

    async function* listPages<T>(res: ResourceRef, o: ListOptions & { pageSize?: number } = {}): AsyncGenerator<ListPage<T>> {
      const maxItems = o.pageSize ?? o.limit ?? 500;
      // pageSize 0 asks for everything at once (paging disabled), and so does no byte budget then.
      const pages = maxItems > 0 ? sizer.listing(groupResourceOf(res), maxItems) : undefined;
      let cont = o.continue;
      for (;;) {
        const limit = pages?.limit() ?? maxItems;
        let sized: { page: ListPage<T>; bytes: number };
        try {
          sized = await listSized<T>(res, { ...o, limit, continue: cont }, limit > 1 ? sizer.cutoff : Infinity);
        } catch (err) {
          if (!(err instanceof ResponseTooLarge) || pages === undefined) throw err;
          // The same page again, smaller (also the first page, whose `cont` is undefined).
          pages.overflowed(limit);
          continue;
        }
        pages?.observe(sized.bytes, sized.page.items.length);
        yield sized.page;
        cont = sized.page.continue;
        if (cont === undefined) return;
      }
    }

    async function* watch<T>(res: ResourceRef, o: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
      const target = targetOf('watch', res, o.namespace);
      await limiter.take(o.signal);
      const headers = { ...(await authHeaders()), ...watchHeaders, Accept: 'application/json', 'User-Agent': userAgent };
      const timeoutSeconds = o.timeoutSeconds ?? Math.floor(300 + Math.random() * 300);
      const query = {
        watch: 'true',
        resourceVersion: o.resourceVersion,
        labelSelector: o.labelSelector,
        fieldSelector: o.fieldSelector,
        allowWatchBookmarks: o.allowWatchBookmarks === false ? undefined : 'true',
        timeoutSeconds,
      };
      const controller = new AbortController();
      const onAbort = (): void => controller.abort();
      o.signal?.addEventListener('abort', onAbort, { once: true });
      let req: http.ClientRequest | undefined;
      try {
        const transport = await getTransport();
        const res0 = await new Promise<http.IncomingMessage>((resolve, reject) => {
          req = transport.mod.request(
            {
              protocol: base.protocol,
              hostname: base.hostname,
              port: base.port,
              path: basePath + resourcePath(res, o.namespace) + buildQuery(query),
              method: 'GET',
              agent: transport.watchAgent,
              headers,
              signal: controller.signal,
            },
            resolve,
          );
          req.on('error', reject);
          // Nothing at all for longer than the server-side timeout plus slack means the connection is dead.
          req.setTimeout((timeoutSeconds + 30) * 1000, () => req?.destroy(new Error('watch connection idle')));
          req.on('socket', (s) => s.setKeepAlive(true, 15_000));
          req.end();
        }).catch((err: unknown) => {
          throw new KubeError(target, 0, (err as { code?: string }).code ?? 'NetworkError', `cannot reach the apiserver at ${cluster?.server}: ${(err as Error).message}`, undefined, err);
        });
        if (res0.statusCode !== 200) {
          const chunks: Buffer[] = [];
          for await (const c of res0) chunks.push(c as Buffer);
          if (res0.statusCode === 401) auth = undefined;
          throw errorFromResponse(target, res0.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'));
        }
        const lines = new WatchLineSplitter();
        try {
          for await (const chunk of res0) {
            for (const line of lines.push(chunk as Buffer)) {
              const ev = JSON.parse(line) as { type: WatchEventType | 'ERROR'; object: unknown };
              if (ev.type === 'ERROR') throw errorFromStatus(target, ev.object as Status);
              yield { type: ev.type, object: ev.object as T };
            }
          }
        } catch (err) {
          if (err instanceof KubeError || o.signal?.aborted) throw err;
          throw new KubeError(target, 0, (err as { code?: string }).code ?? 'WatchBroken', `watch stream broke: ${(err as Error).message}`, undefined, err);
        }
      } finally {
        o.signal?.removeEventListener('abort', onAbort);
        const r = req as http.ClientRequest | undefined;
        if (r !== undefined && !r.destroyed) r.destroy();
      }
    }

    async function groupVersionResources(group: string, version: string): Promise<DiscoveredEntry[]> {
      const path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
      const rl = await call<{ resources?: DiscoveredEntry[] }>({ method: 'GET', path, target: { verb: 'discover', resource: apiVersionOf({ group, version }) } }, { bucket: discoveryLimiter });
      return rl.resources ?? [];
    }

    const client: DynamicClient = {
      server,
      // A raw POST may create something: retried only when it provably never reached the server.
      request: (req) => call(req, { once: req.method === 'POST' }),

      async discover(o: DiscoverOptions = {}): Promise<ApiResource[]> {
        const fail = (gv: string, err: unknown): void => {
          const kerr = err instanceof KubeError ? err : new KubeError({ verb: 'discover', resource: gv }, 0, 'Unknown', String(err));
          if (o.onGroupError === undefined) throw kerr;
          o.onGroupError(gv, kerr);
        };
        const [core, groups] = await Promise.all([
          call<{ versions?: string[] }>({ method: 'GET', path: '/api', target: { verb: 'discover', resource: '/api' } }, { bucket: discoveryLimiter }),
          call<{ groups?: { name: string; preferredVersion?: { version: string }; versions?: { version: string }[] }[] }>({
            method: 'GET',
            path: '/apis',
            target: { verb: 'discover', resource: '/apis' },
          }, { bucket: discoveryLimiter }),
        ]);
        // Every version of every group, not only the preferred one: a resource may be served only at
        // another version (cronjobs at batch/v1beta1 while batch prefers v1 on 1.20). All lists are
        // fetched at once, one GET each, as the preferred ones alone were.
        const coreVersion = core.versions?.includes('v1') ? 'v1' : core.versions?.[0];
        const wanted: { group: string; preferred: string | undefined; versions: string[] }[] = [];
        if (coreVersion !== undefined) wanted.push({ group: '', preferred: coreVersion, versions: [coreVersion] });
        for (const g of groups.groups ?? []) {
          const versions = (g.versions ?? []).map((v) => v.version);
          const preferred = g.preferredVersion?.version ?? versions[0];
          if (preferred !== undefined && !versions.includes(preferred)) versions.unshift(preferred);
          wanted.push({ group: g.name, preferred, versions });
        }
        const lists: GroupLists[] = await Promise.all(
          wanted.map(async (g) => ({
            group: g.group,
            preferred: g.preferred,
            lists: (
              await Promise.all(
                g.versions.map(async (version) => {
                  try {
                    return { version, resources: await groupVersionResources(g.group, version) };
                  } catch (err) {
                    // A 404 means the group version went away between /apis and this GET (a CRD just
                    // deleted) or is not served yet (one just created): it serves nothing to read now.
                    // An aggregated API that is down answers 503, and that is a failure.
                    if (err instanceof KubeError && err.status === 404) return undefined;
                    fail(apiVersionOf({ group: g.group, version }), err);
                    return undefined;
                  }
                }),
              )
            ).filter((l) => l !== undefined),
          })),
        );
        return mergeDiscovery(lists);
      },

      async serves(ref: { group: string; version: string; resource: string }): Promise<boolean> {
        try {
          return (await groupVersionResources(ref.group, ref.version)).some((r) => r.name === ref.resource);
        } catch (err) {
          if (err instanceof KubeError && err.status === 404) return false;
          throw err;
        }
      },

      list,
      listPages,

      async listAll<T>(res: ResourceRef, o: ListOptions & { pageSize?: number } = {}): Promise<{ items: T[]; resourceVersion: string }> {
        const items: T[] = [];
        let resourceVersion: string | undefined;
        for await (const page of listPages<T>(res, o)) {
          resourceVersion ??= page.resourceVersion;
          items.push(...page.items);
        }
        return { items, resourceVersion: resourceVersion ?? '' };
      },

      get: <T>(res: ResourceRef, ns: string | undefined, name: string, o?: { signal?: AbortSignal }) =>
        call<T>({ method: 'GET', path: resourcePath(res, ns, name), target: targetOf('get', res, ns, name), signal: o?.signal }),

      create<T>(res: ResourceRef, ns: string | undefined, obj: object, o?: WriteOptions): Promise<T> {
        const name = (obj as KubeObject).metadata?.name;
        const since = Date.now();
        // The apiserver names the manager of a create after the User-Agent's product ("stowage/0.1.0" -> "stowage").
        const manager = o?.fieldManager ?? userAgent.split('/')[0] ?? userAgent;
        const named = name !== undefined && name !== '';
        return call<T>({
          method: 'POST',
          path: resourcePath(res, ns),
          query: writeQuery(o),
          body: obj,
          target: targetOf('create', res, ns, name),
          signal: o?.signal,
        }, {
          // A create under generateName cannot tell its own object from another: never sent twice.
          // A dry run persists nothing, so it may always be repeated.
          once: !named && o?.dryRun !== true,
          settled: async (err) => {
            if (!named || o?.dryRun === true || !isAlreadyExists(err)) return undefined;
            const found = await requestOnce<KubeObject>(withHeaders({ method: 'GET', path: resourcePath(res, ns, name), target: targetOf('get', res, ns, name), signal: o?.signal })).catch(() => undefined);
            return found !== undefined && madeByUs(found, manager, since) ? { value: found as T } : undefined;
          },
        });
      },

      replace: <T>(res: ResourceRef, ns: string | undefined, name: string, obj: object, o?: WriteOptions) =>
        call<T>({ method: 'PUT', path: resourcePath(res, ns, name), query: writeQuery(o), body: obj, target: targetOf('update', res, ns, name), signal: o?.signal }),

      patch: <T>(res: ResourceRef, ns: string | undefined, name: string, patch: unknown, type: PatchType, o?: PatchOptions) =>
        call<T>({
          method: 'PATCH',
          path: resourcePath(res, ns, name),
          query: { ...writeQuery(o), force: type === 'apply' && o?.force === true ? 'true' : undefined, fieldManager: o?.fieldManager ?? (type === 'apply' ? userAgent : undefined) },
          body: JSON.stringify(patch),
          contentType: PATCH_CONTENT_TYPES[type],
          target: targetOf('patch', res, ns, name),
          signal: o?.signal,
          // A JSON patch may add to a list or test a value: applied twice it is not the same patch.
        }, { once: type === 'json' && o?.dryRun !== true }),

      async delete(res: ResourceRef, ns: string | undefined, name: string, o?: DeleteOptions): Promise<void> {
        const body: Record<string, unknown> = {};
        if (o?.propagationPolicy !== undefined) body.propagationPolicy = o.propagationPolicy;
        if (o?.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = o.gracePeriodSeconds;
        if (o?.preconditions !== undefined) body.preconditions = o.preconditions;
        if (o?.dryRun === true) body.dryRun = ['All'];
        await call<unknown>({
          method: 'DELETE',
          path: resourcePath(res, ns, name),
          body: Object.keys(body).length > 0 ? body : undefined,
          target: targetOf('delete', res, ns, name),
          signal: o?.signal,
          // Gone after an attempt that may have been applied: that attempt deleted it.
        }, { settled: async (err) => (isNotFound(err) && o?.dryRun !== true ? { value: undefined } : undefined) });
      },

      patchStatus: <T>(res: ResourceRef, ns: string | undefined, name: string, mergePatch: unknown, o?: WriteOptions) =>
        (isRecord(res) ? recordCall : call)<T>({
          method: 'PATCH',
          path: resourcePath(res, ns, name, 'status'),
          query: writeQuery(o),
          body: JSON.stringify(mergePatch),
          contentType: PATCH_CONTENT_TYPES.merge,
          target: targetOf('patch status of', res, ns, name),
          signal: o?.signal,
        }),

      replaceStatus: <T>(res: ResourceRef, ns: string | undefined, name: string, obj: object, o?: WriteOptions) =>
        (isRecord(res) ? recordCall : call)<T>({
          method: 'PUT',
          path: resourcePath(res, ns, name, 'status'),
          query: writeQuery(o),
          body: obj,
          target: targetOf('update status of', res, ns, name),
          signal: o?.signal,
        }),

      watch,

      version: () => call<ServerVersion>({ method: 'GET', path: '/version', target: { verb: 'get', resource: '/version' } }),

      withOutageTimeout: (ms: number) => (ms === outageMs ? client : makeClient(ms, who)),

      impersonating: (next: Impersonation) => makeClient(outageMs, next),

      impersonated: who,

      kubeConfig: kc,

      close(): void {
        transportNow?.agent.destroy();
        transportNow?.watchAgent.destroy();
      },
    };
    return client;
  }

  return makeClient(opts.outageTimeoutMs ?? 0);
}

/** A LIST response that ran past the byte cutoff; read no further (see pageSizer.ts). */
class ResponseTooLarge extends Error {
  override readonly name = 'ResponseTooLarge';
  constructor(readonly maxBytes: number) {
    super(`the response ran past ${maxBytes} bytes`);
  }
}

