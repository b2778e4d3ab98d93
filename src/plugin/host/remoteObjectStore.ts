// The host's ObjectStore: each method is a call into the plugin process through callPlugin(), with
// Init replayed on a new process, PutObject bodies replayed and GetObject resumed at its offset.
import type { ObjectStore, PluginConfig, ResumableGetObject } from '../api/index.js';
import {
  objectStoreDelete,
  objectStoreExists,
  objectStoreGet,
  objectStoreListCommonPrefixes,
  objectStoreListObjects,
  objectStorePut,
  objectStoreSignedURL,
  type CallContext,
  type InstanceRef,
} from '../grpc/index.js';
import { abortReason } from '../grpc/index.js';
import { callContext, callPlugin, checkAborted, deathError, diedDuring, wrap, type CallPolicy, type CallSite } from './call.js';
import { PluginCallError } from './errors.js';
import type { PluginInstance } from './instances.js';
import { PutBody } from './replay.js';
import type { Live } from './restartable.js';

export interface ObjectStorePolicies {
  unary: CallPolicy;
  /** PutObject/GetObject: long overall deadline, idle timeout per chunk. */
  stream: CallPolicy;
  replayBufferBytes: number;
}

export interface RemoteObjectStoreDeps {
  site: CallSite;
  /** The instance for the store's current config (init() may switch it). */
  instance: () => PluginInstance;
  /** Switches to the instance for `config` (ObjectStore.init on an already dispensed store). */
  reinit: (config: PluginConfig) => Promise<void>;
  policies: ObjectStorePolicies;
}

interface OpenedGet {
  live: Live;
  it: AsyncGenerator<Buffer>;
  head: IteratorResult<Buffer>;
}

export function remoteObjectStore(deps: RemoteObjectStoreDeps): ObjectStore & ResumableGetObject {
  const { site, policies } = deps;
  const ref = async (live: Live, ctx: CallContext): Promise<InstanceRef> => {
    const inst = deps.instance();
    return { plugin: inst.plugin, instanceId: await inst.idOn(live, ctx) };
  };
  const unary = <T>(method: string, op: (live: Live, ctx: CallContext, r: InstanceRef) => Promise<T>): Promise<T> =>
    callPlugin(site, method, policies.unary, async (live, ctx) => op(live, ctx, await ref(live, ctx)));

  const openGet = async (bucket: string, key: string, state: { offset: number; retries: number }): Promise<OpenedGet> => {
    for (;;) {
      checkAborted(site);
      let live: Live;
      try {
        live = await site.proc.acquire();
      } catch (err) {
        throw wrap(site, 'GetObject', policies.stream, err);
      }
      const ctx = callContext(site, policies.stream);
      let it: AsyncGenerator<Buffer> | undefined;
      try {
        it = objectStoreGet(live.conn, ctx, await ref(live, ctx), bucket, key, state.offset);
        // The first response settles whether the object exists, so NotFound rejects getObject itself.
        const head = await it.next();
        site.proc.markHealthy(live);
        return { live, it, head };
      } catch (err) {
        site.proc.release();
        if (ctx.signal?.aborted === true) throw abortReason(ctx.signal);
        if (!(await diedDuring(site.proc, live, err))) throw wrap(site, 'GetObject', policies.stream, err);
        const fatal = deathError(site, 'GetObject', live, state.retries, policies.stream, err);
        if (fatal !== undefined) throw fatal;
        state.retries++;
        site.onRetry('GetObject', state.retries);
      }
    }
  };

  /** Yields the object; when the process dies mid-stream, reopens on the new one at the offset reached. */
  async function* stream(bucket: string, key: string, first: OpenedGet, state: { offset: number; retries: number }): AsyncGenerator<Uint8Array> {
    let cur: OpenedGet | undefined = first;
    try {
      for (;;) {
        if (cur.head.done === true) return;
        state.offset += cur.head.value.length;
        yield cur.head.value;
        try {
          cur.head = await cur.it.next();
        } catch (err) {
          const dead: OpenedGet = cur;
          cur = undefined;
          site.proc.release();
          checkAborted(site);
          if (!(await diedDuring(site.proc, dead.live, err))) throw wrap(site, 'GetObject', policies.stream, err);
          const fatal = deathError(site, 'GetObject', dead.live, state.retries, policies.stream, err);
          if (fatal !== undefined) throw fatal;
          state.retries++;
          site.onRetry('GetObject', state.retries);
          cur = await openGet(bucket, key, state);
        }
      }
    } finally {
      if (cur !== undefined) {
        await cur.it.return(undefined);
        site.proc.release();
      }
    }
  }

  const getFrom = async (bucket: string, key: string, offset: number): Promise<AsyncIterable<Uint8Array>> => {
    site.check();
    const state = { offset, retries: 0 };
    const first = await openGet(bucket, key, state);
    return stream(bucket, key, first, state);
  };

  return {
    init: (config) => deps.reinit(config),
    putObject: async (bucket, key, body) => {
      const put = new PutBody(body, policies.replayBufferBytes);
      const policy: CallPolicy = { ...policies.stream, retryBlocker: () => put.blocker() };
      try {
        await callPlugin(site, 'PutObject', policy, async (live, ctx) => {
          const size = await objectStorePut(live.conn, ctx, await ref(live, ctx), bucket, key, put.attempt());
          if (size !== put.attemptBytes) {
            throw new PluginCallError(
              `ObjectStore ${site.plugin}: PutObject ${bucket}/${key}: the plugin stored ${size} bytes of the ${put.attemptBytes} sent`,
              undefined,
            );
          }
        });
      } finally {
        await put.close();
      }
    },
    getObject: (bucket, key) => getFrom(bucket, key, 0),
    getObjectFrom: getFrom,
    objectExists: (bucket, key) => unary('ObjectExists', (live, ctx, r) => objectStoreExists(live.conn, ctx, r, bucket, key)),
    listCommonPrefixes: (bucket, prefix, delimiter) =>
      unary('ListCommonPrefixes', (live, ctx, r) => objectStoreListCommonPrefixes(live.conn, ctx, r, bucket, prefix, delimiter)),
    listObjects: (bucket, prefix) => unary('ListObjects', (live, ctx, r) => objectStoreListObjects(live.conn, ctx, r, bucket, prefix)),
    deleteObject: (bucket, key) => unary('DeleteObject', (live, ctx, r) => objectStoreDelete(live.conn, ctx, r, bucket, key)),
    createSignedURL: (bucket, key, ttlSeconds) =>
      unary('CreateSignedURL', (live, ctx, r) => objectStoreSignedURL(live.conn, ctx, r, bucket, key, ttlSeconds)),
  };
}
