// Host side of the ObjectStore service: one function per RPC over a PluginConnection.
import { once } from 'node:events';
import { status, type ClientReadableStream, type ClientWritableStream } from '@grpc/grpc-js';
import type { PluginConfig } from '../api/index.js';
import type { InstanceRef } from '../../gen/stowage/plugin/v1/common.js';
import type { GetObjectResponse, PutObjectRequest } from '../../gen/stowage/plugin/v1/object_store.js';
import { rechunk } from './chunks.js';
import type { PluginConnection } from './connection.js';
import { fromServiceError, RemoteCallError } from './errors.js';
import { abortReason, cancelOnAbort, unary, type CallContext } from './unary.js';

export type { InstanceRef };

export async function objectStoreInit(conn: PluginConnection, ctx: CallContext, plugin: string, config: PluginConfig): Promise<string> {
  const c = conn.objectStore;
  const res = await unary(c.init.bind(c), { plugin, config: { ...config } }, ctx);
  return res.instanceId;
}

/** Idle periods a plugin has to answer PutObject after the last chunk. */
const FINISH_IDLE_PERIODS = 5;

/** A stream that stopped moving; the host words it as "<Method> made no progress for N ms". */
function idleError(ms: number): RemoteCallError {
  return new RemoteCallError(`made no progress for ${ms} ms (deadline exceeded)`, status.DEADLINE_EXCEEDED, undefined);
}

/** Resolves when `call` can take more data; rejects when the call ends first or stays stuck past idleMs. */
async function drained(call: ClientWritableStream<PutObjectRequest>, finished: AbortSignal, idleMs: number): Promise<void> {
  const idle = AbortSignal.timeout(idleMs);
  try {
    await once(call, 'drain', { signal: AbortSignal.any([finished, idle]) });
  } catch (err) {
    if (idle.aborted) throw idleError(idleMs);
    throw err;
  }
}

/**
 * Streams `body` in 64 KiB chunks (CHUNK_SIZE); resolves with the size the plugin stored. Body errors reject
 * with the body's own error (the call is cancelled); call failures reject with a RemoteCallError.
 */
export function objectStorePut(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  bucket: string,
  key: string,
  body: AsyncIterable<Uint8Array>,
): Promise<number> {
  const idleMs = ctx.idleTimeoutMs ?? 60_000;
  return new Promise<number>((resolve, reject) => {
    const finished = new AbortController();
    let idleTimer: NodeJS.Timeout | undefined;
    let stalled = false;
    let unsubscribe = (): void => undefined;
    const call = conn.objectStore.putObject(ctx.metadata, { deadline: ctx.deadline }, (err, res) => {
      finished.abort();
      clearTimeout(idleTimer);
      unsubscribe();
      if (stalled) reject(idleError(FINISH_IDLE_PERIODS * idleMs));
      else if (err !== null) reject(fromServiceError(err));
      else resolve(res.size);
    });
    // A canceled run does not wait for its upload: the call ends now, and the plugin is told.
    unsubscribe = cancelOnAbort(ctx.signal, () => {
      finished.abort();
      clearTimeout(idleTimer);
      call.cancel();
    }, reject);
    const pump = async (): Promise<void> => {
      call.write({ part: { $case: 'header', header: { instance: ref, bucket, key } } });
      for await (const chunk of rechunk(body)) {
        if (finished.signal.aborted) return;
        if (!call.write({ part: { $case: 'chunk', chunk } })) await drained(call, finished.signal, idleMs);
      }
      if (finished.signal.aborted) return;
      call.end();
      // Once it has every byte, the plugin may still be storing the last parts (S3 multipart keeps
      // several in flight), so it gets a few idle periods to answer.
      idleTimer = setTimeout(() => {
        stalled = true;
        call.cancel();
      }, FINISH_IDLE_PERIODS * idleMs);
    };
    pump().catch((err: unknown) => {
      if (finished.signal.aborted) return;
      finished.abort();
      clearTimeout(idleTimer);
      call.cancel();
      reject(err);
    });
  });
}

async function nextWithin<T>(it: AsyncIterator<T>, ms: number, onTimeout: () => void): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(idleError(ms));
    }, ms);
  });
  try {
    return await Promise.race([it.next(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Streams the object from byte `offset`. Call failures (NOT_FOUND included) surface from the
 * iterator as RemoteCallError; stopping the iteration early cancels the call.
 */
export async function* objectStoreGet(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  bucket: string,
  key: string,
  offset: number,
): AsyncGenerator<Buffer> {
  const idleMs = ctx.idleTimeoutMs ?? 60_000;
  const stream: ClientReadableStream<GetObjectResponse> = conn.objectStore.getObject(
    { instance: ref, bucket, key, offset },
    ctx.metadata,
    { deadline: ctx.deadline },
  );
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<GetObjectResponse>;
  let done = false;
  const onAbort = (): void => stream.cancel();
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      let r: IteratorResult<GetObjectResponse>;
      try {
        if (ctx.signal?.aborted === true) throw abortReason(ctx.signal);
        r = await nextWithin(it, idleMs, () => stream.cancel());
      } catch (err) {
        if (ctx.signal?.aborted === true) throw abortReason(ctx.signal);
        throw fromServiceError(err);
      }
      if (r.done === true) {
        done = true;
        return;
      }
      yield r.value.chunk;
    }
  } finally {
    ctx.signal?.removeEventListener('abort', onAbort);
    if (!done) stream.cancel();
  }
}

export async function objectStoreExists(conn: PluginConnection, ctx: CallContext, ref: InstanceRef, bucket: string, key: string): Promise<boolean> {
  const c = conn.objectStore;
  return (await unary(c.objectExists.bind(c), { instance: ref, bucket, key }, ctx)).exists;
}

export async function objectStoreListCommonPrefixes(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  bucket: string,
  prefix: string,
  delimiter: string,
): Promise<string[]> {
  const c = conn.objectStore;
  return (await unary(c.listCommonPrefixes.bind(c), { instance: ref, bucket, prefix, delimiter }, ctx)).keys;
}

export async function objectStoreListObjects(conn: PluginConnection, ctx: CallContext, ref: InstanceRef, bucket: string, prefix: string): Promise<string[]> {
  const c = conn.objectStore;
  return (await unary(c.listObjects.bind(c), { instance: ref, bucket, prefix }, ctx)).keys;
}

export async function objectStoreDelete(conn: PluginConnection, ctx: CallContext, ref: InstanceRef, bucket: string, key: string): Promise<void> {
  const c = conn.objectStore;
  await unary(c.deleteObject.bind(c), { instance: ref, bucket, key }, ctx);
}

export async function objectStoreSignedURL(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  bucket: string,
  key: string,
  ttlSeconds: number,
): Promise<string> {
  const c = conn.objectStore;
  return (await unary(c.createSignedUrl.bind(c), { instance: ref, bucket, key, ttlSeconds }, ctx)).url;
}
