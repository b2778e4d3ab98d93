// DownloadRequest controller and the server's download endpoint.
//
// A DownloadRequest names a backup or restore artifact. The controller answers with a URL that is
// valid for 10 minutes:
//   - a presigned object-store URL when the store can sign one (S3);
//   - otherwise the server's own `/download/<token>` endpoint, where <token> is an HMAC-signed,
//     expiring description of the object (location, bucket, key), so the endpoint needs no state;
//   - for the log of a backup or restore that is running on this server, always the endpoint: it
//     serves the lines so far and, with `?follow=1`, streams new ones until the run ends.
// Processed requests are deleted when their URL expires.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  RESOURCES,
  type Backup,
  type BackupStorageLocation,
  type DownloadRequest,
  type DownloadTarget,
  type Restore,
} from '../apis/v1/index.js';
import { isNotFound } from '../kube/index.js';
import { isNotFound as isStoreNotFound } from '../persistence/backupStore.js';
import { downloadKey, normalizePrefix } from '../persistence/layout.js';
import type { Result } from '../runtime/index.js';
import { parseListenAddress } from '../util/address.js';
import { errorMessage, safeErrorMessage } from '../util/errors.js';
import type { ActiveRun, ControllerContext, ControllerDefinition } from './context.js';
import { openObjectStore, resolveLocation } from './locations.js';
import { resolveBackupOf } from './resolveBackup.js';
import { stamp } from './runs.js';

const DRS = RESOURCES.DownloadRequest;
/** How long a download URL (and the request that holds it) lives. */
export const DOWNLOAD_URL_TTL_MS = 10 * 60_000;
export const DOWNLOAD_PATH = '/download/';

// ---- tokens -------------------------------------------------------------------------------------

/** What a /download/<token> URL stands for. Signed, so the endpoint trusts it without a lookup. */
export interface DownloadToken {
  /** Expiry, ms since epoch. */
  exp: number;
  /** Location name, bucket and key of the object, when it is (or will be) in object storage. */
  loc?: string;
  bucket?: string;
  key?: string;
  /** A run whose live log is served while it runs on this server. */
  run?: { kind: 'backup' | 'restore'; namespace: string; name: string };
}

export interface TokenSigner {
  sign(t: DownloadToken): string;
  /** The token's content, or the reason it is refused. */
  verify(token: string, now: number): DownloadToken | { error: string };
}

export function createTokenSigner(secret: Buffer = crypto.randomBytes(32)): TokenSigner {
  const mac = (data: string): string => crypto.createHmac('sha256', secret).update(data).digest('base64url');
  return {
    sign(t) {
      const body = Buffer.from(JSON.stringify(t)).toString('base64url');
      return `${body}.${mac(body)}`;
    },
    verify(token, now) {
      const dot = token.indexOf('.');
      if (dot <= 0) return { error: 'malformed download token' };
      const body = token.slice(0, dot);
      const sig = Buffer.from(token.slice(dot + 1));
      const want = Buffer.from(mac(body));
      if (sig.length !== want.length || !crypto.timingSafeEqual(sig, want)) {
        return { error: 'invalid download token (it was issued by another server process, or altered)' };
      }
      let t: DownloadToken;
      try {
        t = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as DownloadToken;
      } catch {
        return { error: 'malformed download token' };
      }
      if (typeof t.exp !== 'number' || t.exp <= now) return { error: 'the download link has expired; run the command again' };
      return t;
    },
  };
}

// ---- the endpoint -------------------------------------------------------------------------------

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

interface DownloadServer {
  baseURL: string;
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;

async function startDownloadServer(opts: DownloadServerOptions, handler: Handler): Promise<DownloadServer> {
  const { host, port } = parseListenAddress(opts.address, 'download address');
  const server = http.createServer((req, res) => {
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
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

function text(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${body}\n`);
}

// ---- the controller -----------------------------------------------------------------------------

function runOf(target: DownloadTarget): { kind: 'backup' | 'restore'; live: boolean } {
  const kind = target.kind.startsWith('Restore') ? 'restore' : 'backup';
  return { kind, live: target.kind === 'BackupLog' || target.kind === 'RestoreLog' };
}

export function downloadRequestController(ctx: ControllerContext, serverOpts: DownloadServerOptions = downloadServerOptions(ctx.config)): ControllerDefinition {
  const informer = ctx.informer<DownloadRequest>('DownloadRequest');
  const signer = createTokenSigner();
  let server: DownloadServer | undefined;

  const ownURL = (t: Omit<DownloadToken, 'exp'>, exp: number): string => {
    if (server === undefined) throw new Error('the download endpoint is not running');
    return `${server.baseURL}${DOWNLOAD_PATH}${signer.sign({ ...t, exp })}`;
  };

  const location = (name: string | undefined): BackupStorageLocation => {
    const bsl = resolveLocation(ctx, name);
    if (bsl === undefined) {
      throw new Error(name !== undefined && name !== '' ? `backup storage location "${name}" does not exist` : 'no default backup storage location exists');
    }
    return bsl;
  };

  async function backupOf(target: DownloadTarget, namespace: string): Promise<Backup> {
    let backupName = target.name;
    if (target.kind.startsWith('Restore')) {
      let restore: Restore;
      try {
        restore = await ctx.client.get<Restore>(RESOURCES.Restore, namespace, target.name);
      } catch (err) {
        if (isNotFound(err)) throw new Error(`restore "${target.name}" not found in namespace ${namespace}`);
        throw err;
      }
      if ((restore.spec.backupName ?? '') === '') {
        // Not started yet (a started restore records its backup): the one the restore would read.
        const resolved = resolveBackupOf(ctx, restore);
        if (resolved.backup === undefined) throw new Error(`restore "${target.name}": ${resolved.error}`);
        return resolved.backup;
      }
      backupName = restore.spec.backupName ?? '';
    }
    try {
      return await ctx.client.get<Backup>(RESOURCES.Backup, namespace, backupName);
    } catch (err) {
      if (isNotFound(err)) throw new Error(`backup "${backupName}" not found in namespace ${namespace}`);
      throw err;
    }
  }

  /** The URL for a target: live log endpoint, presigned store URL, or the endpoint for the stored object. */
  async function urlFor(target: DownloadTarget, namespace: string, exp: number): Promise<string> {
    const backup = await backupOf(target, namespace);
    const bsl = location(backup.spec.storageLocation);
    const bucket = bsl.spec.objectStorage.bucket;
    const key = downloadKey(normalizePrefix(bsl.spec.objectStorage.prefix), target.kind, target.name);
    const { kind, live } = runOf(target);
    if (live && ctx.runs.get(kind, namespace, target.name) !== undefined) {
      return ownURL({ loc: bsl.metadata.name, bucket, key, run: { kind, namespace, name: target.name } }, exp);
    }
    const handle = ctx.plugins.handle({ kind: 'controller', namespace: ctx.namespace, name: 'download-request' });
    try {
      const store = await openObjectStore(ctx, handle, bsl);
      try {
        const url = await store.createSignedURL(bucket, key, Math.ceil(DOWNLOAD_URL_TTL_MS / 1000));
        if (/^https?:\/\//i.test(url) || server === undefined) return url;
      } catch (err) {
        if (server === undefined) throw err;
        ctx.logger.debug(`location ${bsl.metadata.name} cannot sign URLs (${errorMessage(err)}); serving the download itself`);
      }
    } finally {
      handle.release();
    }
    return ownURL({ loc: bsl.metadata.name, bucket, key }, exp);
  }

  async function serveObject(t: DownloadToken, res: http.ServerResponse): Promise<void> {
    if (t.loc === undefined || t.bucket === undefined || t.key === undefined) {
      text(res, 404, 'the log of this run is no longer on the server and was not uploaded');
      return;
    }
    const bsl = location(t.loc);
    const handle = ctx.plugins.handle({ kind: 'controller', namespace: ctx.namespace, name: 'download' });
    try {
      const store = await openObjectStore(ctx, handle, bsl);
      let body: AsyncIterable<Uint8Array>;
      try {
        body = await store.getObject(t.bucket, t.key);
      } catch (err) {
        if (isStoreNotFound(err)) {
          text(res, 404, `${t.key} is not in location ${t.loc}`);
          return;
        }
        throw err;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
      for await (const chunk of body) {
        if (res.destroyed) break;
        if (!res.write(chunk)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      }
      res.end();
    } finally {
      handle.release();
    }
  }

  async function serveLive(run: ActiveRun, follow: boolean, res: http.ServerResponse): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-stowage-live': '1' });
    if (!follow) {
      for (const line of await run.linesSoFar()) res.write(`${line}\n`);
      res.end();
      return;
    }
    await new Promise<void>((resolve) => {
      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        unsubscribe();
        res.end();
        resolve();
      };
      const unsubscribe = run.follow((line) => void res.write(`${line}\n`), { fromStart: true, onEnd: end });
      res.once('close', end);
    });
  }

  const handler: Handler = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method !== 'GET') {
      text(res, 405, 'method not allowed');
      return;
    }
    if (!url.pathname.startsWith(DOWNLOAD_PATH)) {
      text(res, 404, 'not found');
      return;
    }
    const t = signer.verify(url.pathname.slice(DOWNLOAD_PATH.length), ctx.clock.now().getTime());
    if ('error' in t) {
      text(res, 403, t.error);
      return;
    }
    const run = t.run === undefined ? undefined : ctx.runs.get(t.run.kind, t.run.namespace, t.run.name);
    if (run !== undefined) await serveLive(run, url.searchParams.get('follow') === '1', res);
    else await serveObject(t, res);
  };

  async function reconcile(key: string): Promise<Result> {
    const dr = informer.get(key);
    if (dr === undefined) return;
    const namespace = dr.metadata.namespace ?? ctx.namespace;
    const name = dr.metadata.name;
    const now = ctx.clock.now().getTime();
    if (dr.status?.phase === 'Processed') {
      const exp = Date.parse(dr.status.expiration ?? '');
      if (!Number.isNaN(exp) && exp > now) return { requeueAfter: exp - now };
      try {
        await ctx.client.delete(DRS, namespace, name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return;
    }
    const exp = now + DOWNLOAD_URL_TTL_MS;
    let url: string | undefined;
    let why: string | undefined;
    try {
      url = await urlFor(dr.spec.target, namespace, exp);
    } catch (err) {
      why = safeErrorMessage(err);
      ctx.logger.warn(`DownloadRequest ${namespace}/${name} for ${dr.spec.target.kind} ${dr.spec.target.name}: ${why}`);
      void ctx.events.event(dr, 'Warning', 'DownloadFailed', why);
    }
    try {
      await ctx.client.patchStatus(DRS, namespace, name, {
        status: { phase: 'Processed', expiration: stamp(new Date(exp)), ...(url !== undefined ? { downloadURL: url } : { message: why }) },
      });
    } catch (err) {
      if (isNotFound(err)) return; // the client gave up and deleted it
      throw err;
    }
    return { requeueAfter: DOWNLOAD_URL_TTL_MS };
  }

  return {
    name: 'download-request',
    watches: [informer],
    workers: 4,
    reconciler: { reconcile },
    async onStart() {
      if (server !== undefined) return;
      server = await startDownloadServer(serverOpts, handler);
      ctx.logger.info(`download endpoint for DownloadRequests at ${server.baseURL}${DOWNLOAD_PATH}`);
      const s = server;
      ctx.shutdown.addEventListener('abort', () => void s.close(), { once: true });
    },
  };
}
