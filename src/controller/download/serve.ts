// Serving the download endpoint's links: a token's object from its location's store (decrypted
// with its backup's key when the store holds ciphertext), a running run's log lines so far or
// followed to its end, and the server's own log tail. The token was signed by this server, so what
// it names is what its DownloadRequest was allowed; the reconciler (controller/downloadRequest.ts)
// decides that.
import type http from 'node:http';
import { RESOURCES, type Backup, type BackupStorageLocation, type DownloadTargetKind, type StoredDownloadTargetKind } from '../../apis/v1/index.js';
import { isNotFound as isStoreNotFound } from '../../persistence/backupStore.js';
import { downloadKey, normalizePrefix } from '../../persistence/layout.js';
import { downloadArtifact } from '../../persistence/sealing.js';
import { isVeleroLocation, withBackupStore, type OpenedLocation } from '../../storage/open.js';
import type { ActiveRun, ControllerContext } from '../run/context.js';
import { resolveLocation } from '../run/locations.js';
import { text, type Handler } from './server.js';
import type { DownloadToken, TokenSigner } from './tokens.js';

/** Where the endpoint's links live on the download server. */
export const DOWNLOAD_PATH = '/download/';

/** A target (or token) for an object in storage, not the server's own log. */
export function isStored<T extends { kind: DownloadTargetKind }>(t: T): t is T & { kind: StoredDownloadTargetKind } {
  return t.kind !== 'ServerLog';
}

/** Where a target may be stored: its layout's key, then (a long name stored before the short form) the full one. */
export function targetKeys(bsl: BackupStorageLocation, kind: StoredDownloadTargetKind, name: string): string[] {
  const prefix = normalizePrefix(bsl.spec.objectStorage.prefix);
  return [...new Set([downloadKey(prefix, kind, name, isVeleroLocation(bsl) ? 'full' : 'auto'), downloadKey(prefix, kind, name, 'full')])];
}

/** The object's bytes decrypted (and authenticated as they are read) with its backup's key. */
async function opened(
  ctx: ControllerContext, t: DownloadToken & { kind: StoredDownloadTargetKind }, by: { namespace: string; name: string }, location: OpenedLocation, body: AsyncIterable<Uint8Array>,
): Promise<AsyncIterable<Uint8Array>> {
  const backup = await ctx.client.get<Backup>(RESOURCES.Backup, by.namespace, by.name);
  return (await location.keyedFor(backup)).open(downloadArtifact(t.kind, t.name), body);
}

async function serveObject(ctx: ControllerContext, t: DownloadToken & { kind: StoredDownloadTargetKind }, res: http.ServerResponse): Promise<void> {
  const bsl = resolveLocation(ctx, t.loc);
  if (bsl === undefined) {
    text(res, 404, `backup storage location "${t.loc}" no longer exists`);
    return;
  }
  // The link is for one object where the location kept it when the link was made: if the
  // location now points elsewhere, the same key there may be something else.
  const keys = targetKeys(bsl, t.kind, t.name);
  if (bsl.spec.objectStorage.bucket !== t.bucket || !keys.includes(t.key)) {
    text(res, 410, `backup storage location "${t.loc}" has moved to another bucket or prefix since this link was made; run the command again`);
    return;
  }
  await withBackupStore(ctx, bsl, { kind: 'controller', namespace: ctx.namespace, name: 'download' }, async (location) => {
    const store = location.objectStore;
    let it: AsyncIterator<Uint8Array>;
    let next: IteratorResult<Uint8Array>;
    try {
      let body = await store.getObject(t.bucket, t.key).catch(async (err: unknown) => {
        const older = keys.find((k) => k !== t.key);
        if (older === undefined || !isStoreNotFound(err)) throw err;
        return store.getObject(t.bucket, older);
      });
      if (t.sealedBy !== undefined) body = await opened(ctx, t, t.sealedBy, location, body);
      // The first bytes are read before the status line, so a key or a first chunk that fails is a 500 that says why.
      it = body[Symbol.asyncIterator]();
      next = await it.next();
    } catch (err) {
      if (isStoreNotFound(err)) {
        text(res, 404, `${t.key} is not in location ${t.loc}`);
        return;
      }
      throw err;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
    while (next.done !== true) {
      if (res.destroyed) {
        await it.return?.();
        break;
      }
      if (!res.write(next.value)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      next = await it.next();
    }
    res.end();
  });
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

/** The endpoint's handler: a GET of `/download/<token>` serves what the token names, if it holds. */
export function downloadHandler(ctx: ControllerContext, signer: TokenSigner): Handler {
  return async (req, res) => {
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
      text(res, t.status, t.error);
      return;
    }
    if (!isStored(t)) {
      serveServerLog(ctx, res);
      return;
    }
    const run = t.run === undefined ? undefined : ctx.runs.get(t.run.kind, t.run.namespace, t.run.name);
    if (run !== undefined) await serveLive(run, url.searchParams.get('follow') === '1', res);
    else await serveObject(ctx, t, res);
  };
}

/** The server's last log lines, as the server logger rendered (and scrubbed) them. */
function serveServerLog(ctx: Pick<ControllerContext, 'logTail'>, res: http.ServerResponse): void {
  const tail = ctx.logTail;
  if (tail === undefined) {
    text(res, 404, 'this server keeps no log tail in memory');
    return;
  }
  const lines = tail.lines();
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-stowage-dropped-lines': String(tail.dropped()) });
  res.end(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
}
