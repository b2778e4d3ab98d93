// DownloadRequest controller; it starts the server's download endpoint (controller/download/).
//
// A DownloadRequest names a backup or restore artifact. In trust mode `requester` it is served only
// when its requester could have made the backup or could restore everything in it
// (controller/run/backupRights.ts); for a restore's artifacts, the restore's backup. The answer is a URL
// valid for --download-url-ttl (5 minutes by default):
//   - a presigned object-store URL when the store can sign one (S3);
//   - otherwise the server's own `/download/<token>` endpoint, where <token> is an HMAC-signed,
//     expiring description of one target (its kind and name, location, bucket and key), so the
//     endpoint needs no state and a link for one object cannot fetch another;
//   - for the log of a backup or restore that is running on this server, always the endpoint: it
//     serves the lines so far and, with `?follow=1`, streams new ones until the run ends;
//   - for the ServerLog target (`stowage debug`), the endpoint: it serves the server's last log
//     lines from memory, to whoever could read the server pod's log (`get pods/log` in its
//     namespace), since no kubelet may serve pod logs to the CLI (or the user may lack a route to it).
// Anyone with `get` on DownloadRequests can read their status, so the URL is never written there in
// plain text: it is sealed to the one-time public key the client put in spec.publicKey
// (auth/sealedLink.ts), and a request without one is refused.
// Processed requests are deleted when their URL expires.
import {
  DOWNLOAD_TARGET_WORDS,
  RESOURCES,
  type Backup,
  type BackupStorageLocation,
  type DownloadRequest,
  type DownloadTarget,
  type Restore,
  type SealedDownloadURL,
  type StoredDownloadTargetKind,
} from '../apis/v1/index.js';
import { describeAccess, parseLinkPublicKey, sealContext, sealLink, type Authority } from '../auth/index.js';
import { isNotFound } from '../kube/index.js';
import { isVeleroImport } from '../persistence/veleroBackup.js';
import { veleroMissingArtifact } from '../persistence/veleroStore.js';
import type { Result } from '../runtime/index.js';
import { errorMessage, safeErrorMessage } from '../util/errors.js';
import { readsFrom, type ControllerContext, type ControllerDefinition } from './run/context.js';
import { backupRefusal } from './run/backupRights.js';
import { encrypts } from '../storage/keys.js';
import { resolveLocation } from './run/locations.js';
import { withBackupStore } from '../storage/open.js';
import { resolveBackupOf } from './run/resolveBackup.js';
import { signs } from '../storage/signatures.js';
import { SignatureError } from '../signing/index.js';
import { stamp } from './run/runs.js';
import { downloadServerOptions, startDownloadServer, type DownloadServer, type DownloadServerOptions } from './download/server.js';
import { createTokenSigner, type DownloadToken } from './download/tokens.js';
import { downloadHandler, DOWNLOAD_PATH, isStored, targetKeys } from './download/serve.js';

const DRS = RESOURCES.DownloadRequest;
/** How a DownloadRequest without spec.publicKey is answered. */
export const NO_PUBLIC_KEY =
  'this DownloadRequest has no spec.publicKey, and download links are only given out sealed to the requester\'s key ' +
  '(a plain link in its status could be read by anyone who may get DownloadRequests): use stowage backup download/logs, or set spec.publicKey';
function runOf(target: DownloadTarget): { kind: 'backup' | 'restore'; live: boolean } {
  const kind = target.kind.startsWith('Restore') ? 'restore' : 'backup';
  return { kind, live: target.kind === 'BackupLog' || target.kind === 'RestoreLog' };
}

export function downloadRequestController(ctx: ControllerContext, serverOpts: DownloadServerOptions = downloadServerOptions(ctx.config)): ControllerDefinition {
  const informer = ctx.informer<DownloadRequest>('DownloadRequest');
  // Locations, and the backup a not-yet-started restore would read, come from the shared caches.
  const caches = [readsFrom(ctx.informer<BackupStorageLocation>('BackupStorageLocation')), readsFrom(ctx.informer<Backup>('Backup'))];
  const signer = createTokenSigner();
  let server: DownloadServer | undefined;
  const d: Downloads = {
    ctx,
    ownURL: (t, exp) => {
      if (server === undefined) throw new Error('the download endpoint is not running');
      return `${server.baseURL}${DOWNLOAD_PATH}${signer.sign({ ...t, exp })}`;
    },
  };

  return {
    name: 'download-request',
    watches: [informer, ...caches],
    workers: 4,
    reconciler: {
      reconcile: async (key) => {
        const dr = informer.get(key);
        return dr === undefined ? undefined : reconcileDownload(d, dr);
      },
    },
    async onStart() {
      if (server !== undefined) return;
      server = await startDownloadServer(serverOpts, downloadHandler(ctx, signer));
      ctx.logger.info(`download endpoint for DownloadRequests at ${server.baseURL}${DOWNLOAD_PATH}`);
      const s = server;
      ctx.shutdown.addEventListener('abort', () => void s.close(), { once: true });
    },
  };
}

/** What answering a DownloadRequest needs: the server's context and its download endpoint's links. */
interface Downloads {
  ctx: ControllerContext;
  /** A link to this server's endpoint for one target, expiring at `exp`; throws while the endpoint is not running. */
  ownURL(t: Omit<DownloadToken, 'exp'>, exp: number): string;
}

function locationNamed(ctx: ControllerContext, name: string | undefined): BackupStorageLocation {
  const bsl = resolveLocation(ctx, name);
  if (bsl === undefined) {
    throw new Error(name !== undefined && name !== '' ? `backup storage location "${name}" does not exist` : 'no default backup storage location exists');
  }
  return bsl;
}

/** The backup a target belongs to: its own, or the restore's. */
async function backupOf(ctx: ControllerContext, target: DownloadTarget, namespace: string): Promise<Backup> {
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

/**
 * The URL for a target of `backup`: live log endpoint, presigned store URL (http(s) only: a
 * store's file:// URL would neither expire nor be bound to anything), or the endpoint for the
 * stored object.
 */
async function urlFor(d: Downloads, target: DownloadTarget & { kind: StoredDownloadTargetKind }, backup: Backup, namespace: string, exp: number): Promise<string> {
  const { ctx, ownURL } = d;
  const bsl = locationNamed(ctx, backup.spec.storageLocation);
  const bucket = bsl.spec.objectStorage.bucket;
  const keys = targetKeys(bsl, target.kind, target.name);
  const key = keys[0] ?? '';
  const object = { kind: target.kind, name: target.name, loc: bsl.metadata.name, bucket, key };
  const { kind, live } = runOf(target);
  if (live && ctx.runs.get(kind, namespace, target.name) !== undefined) {
    return ownURL({ ...object, run: { kind, namespace, name: target.name } }, exp);
  }
  // The store holds ciphertext: this server decrypts it as it serves it, and no store URL is signed.
  if (backup.status?.encryption !== undefined || encrypts(bsl)) return ownURL({ ...object, sealedBy: { namespace, name: backup.metadata.name } }, exp);
  const signedURL = await withBackupStore(ctx, bsl, { kind: 'controller', namespace: ctx.namespace, name: 'download-request' }, async ({ objectStore: store }) => {
    try {
      const signed = keys.length > 1 && !(await store.objectExists(bucket, key)) ? (keys[1] ?? key) : key;
      const url = await store.createSignedURL(bucket, signed, Math.max(1, Math.ceil((exp - ctx.clock.now().getTime()) / 1000)));
      if (/^https?:\/\//i.test(url)) return url;
    } catch (err) {
      ctx.logger.debug(`location ${bsl.metadata.name} cannot sign URLs (${errorMessage(err)}); serving the download itself`);
    }
    return undefined;
  });
  return signedURL ?? ownURL(object, exp);
}

/**
 * Why the requester may not read this server's log, or undefined. The rule is the one for the
 * pod's log itself: `get pods/log` in the server's namespace.
 */
async function serverLogRefusal(ctx: ControllerContext, authority: Authority, target: DownloadTarget, namespace: string): Promise<string | undefined> {
  if (target.name !== namespace) {
    return `a ServerLog target names the namespace of the server whose log it reads: this DownloadRequest is in namespace ${namespace}, and its target names "${target.name}"`;
  }
  if (ctx.logTail === undefined) return 'this server keeps no log tail in memory';
  if (authority.mode === 'cluster-admin') return undefined;
  const access = { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace: ctx.namespace };
  const answer = await authority.reviewer.review(access);
  if (answer.allowed) return undefined;
  return `${authority.requester.username} may not read the server's log: that takes ${describeAccess(access)} (what \`kubectl logs\` of the server pod takes)${answer.reason !== '' ? ` (${answer.reason})` : ''}`;
}

/**
 * Why the contents, manifest or resource list of a signing location's backup are not served: its
 * signature does not hold (so `backup verify` and `backup download` fail saying why), or undefined.
 */
async function signatureRefusal(ctx: ControllerContext, target: DownloadTarget, backup: Backup): Promise<string | undefined> {
  if (target.kind !== 'BackupContents' && target.kind !== 'BackupManifest' && target.kind !== 'BackupResourceList') return undefined;
  const bsl = locationNamed(ctx, backup.spec.storageLocation);
  if (!signs(bsl)) return undefined;
  try {
    await withBackupStore(ctx, bsl, { kind: 'controller', namespace: ctx.namespace, name: 'download-request' }, (o) => o.verifiedFor(backup));
    return undefined;
  } catch (err) {
    if (err instanceof SignatureError) return `the signature of backup "${backup.metadata.name}" does not hold: ${err.message}`;
    throw err;
  }
}

/** `download backup "b1"`, `download the log of restore "r1"`: what a refusal says was asked. */
function actionOf(target: DownloadTarget): string {
  if (target.kind === 'BackupContents') return `download backup "${target.name}"`;
  return `download the ${DOWNLOAD_TARGET_WORDS[target.kind]} "${target.name}"`;
}

/** The sealed URL for the request, or why it is refused or cannot be served. */
async function answer(d: Downloads, dr: DownloadRequest, namespace: string, exp: number): Promise<{ sealedURL: SealedDownloadURL } | { refused: string }> {
  const { ctx, ownURL } = d;
  const authority = ctx.authority(dr);
  if ('error' in authority) return { refused: `this DownloadRequest is refused: ${authority.error}` };
  const rawKey = dr.spec.publicKey ?? '';
  if (rawKey === '') return { refused: NO_PUBLIC_KEY };
  const recipient = parseLinkPublicKey(rawKey);
  if ('error' in recipient) return { refused: recipient.error };
  const { target } = dr.spec;
  if (!isStored(target)) {
    const refusal = await serverLogRefusal(ctx, authority, target, namespace);
    if (refusal !== undefined) return { refused: refusal };
    return { sealedURL: sealLink(recipient, ownURL({ kind: target.kind, name: target.name, loc: '', bucket: '', key: '' }, exp), sealContext(dr)) };
  }
  const backup = await backupOf(ctx, target, namespace);
  const holder = target.kind.startsWith('Restore') ? `its backup "${backup.metadata.name}"` : 'it';
  const refusal = await backupRefusal(ctx, authority, backup, actionOf(target), holder, 'download-request');
  if (refusal !== undefined) return { refused: refusal };
  const missing = isVeleroImport(backup) ? veleroMissingArtifact(target.kind, target.name) : undefined;
  if (missing !== undefined) return { refused: missing };
  const unsigned = await signatureRefusal(ctx, target, backup);
  if (unsigned !== undefined) return { refused: unsigned };
  const url = await urlFor(d, target, backup, namespace, exp);
  return { sealedURL: sealLink(recipient, url, sealContext(dr)) };
}

async function reconcileDownload(d: Downloads, dr: DownloadRequest): Promise<Result> {
  const { ctx } = d;
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
  const ttl = ctx.config.downloadUrlTtl;
  // Whole seconds, as status.expiration is stamped: the link dies exactly when the status says.
  const exp = Math.floor((now + ttl) / 1000) * 1000;
  let result: { sealedURL: SealedDownloadURL } | { refused: string };
  try {
    result = await answer(d, dr, namespace, exp);
  } catch (err) {
    result = { refused: safeErrorMessage(err) };
  }
  if ('refused' in result) {
    ctx.logger.warn(`DownloadRequest ${namespace}/${name} for ${dr.spec.target.kind} ${dr.spec.target.name}: ${result.refused}`);
    void ctx.events.event(dr, 'Warning', 'DownloadFailed', result.refused);
  }
  try {
    await ctx.client.patchStatus(DRS, namespace, name, {
      status: { phase: 'Processed', expiration: stamp(new Date(exp)), ...('sealedURL' in result ? { sealedURL: result.sealedURL } : { message: result.refused }) },
    });
  } catch (err) {
    if (isNotFound(err)) return; // the client gave up and deleted it
    throw err;
  }
  return { requeueAfter: Math.max(exp - now, 1000) };
}

