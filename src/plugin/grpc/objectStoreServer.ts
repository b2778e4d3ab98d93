// Plugin side of the ObjectStore service: dispatches each request to the named plugin's instance.
import { once } from 'node:events';
import { status, type ServerReadableStream, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import { isResumable, type ObjectStore } from '../api/index.js';
import type {
  GetObjectRequest,
  GetObjectResponse,
  ObjectStoreServer,
  PutObjectRequest,
  PutObjectResponse,
} from '../../gen/stowage/plugin/v1/object_store.js';
import { rechunk } from './chunks.js';
import { StatusError, toServiceError } from './errors.js';
import { callInfo, InstanceTable, unaryHandler, unknownPlugin, type Factory, type ServeHooks } from './serverCommon.js';

const SERVICE = 'ObjectStore';

/** The chunks after the header of a PutObject stream; anything else is a protocol error. */
async function* chunksOf(it: AsyncIterator<PutObjectRequest>): AsyncGenerator<Buffer> {
  for (;;) {
    const r = await it.next();
    if (r.done === true) return;
    const part = r.value.part;
    if (part?.$case !== 'chunk') throw new StatusError(status.INVALID_ARGUMENT, 'PutObject: only the first message may be a header');
    yield part.chunk;
  }
}

export function objectStoreServer(factories: Record<string, Factory<ObjectStore>>, hooks: ServeHooks): ObjectStoreServer {
  const instances = new InstanceTable<ObjectStore>();
  const names = Object.keys(factories);
  const unary = <Req, Res>(method: string, pluginOf: (r: Req) => string, impl: (r: Req) => Promise<Res>) =>
    unaryHandler(hooks, SERVICE, method, pluginOf, impl);

  const putObject = (call: ServerReadableStream<PutObjectRequest, PutObjectResponse>, callback: sendUnaryData<PutObjectResponse>): void => {
    const it = call[Symbol.asyncIterator]() as AsyncIterator<PutObjectRequest>;
    // Taken before the header arrives: a cancel may come at any point of the stream.
    const base = callInfo(call, SERVICE, 'PutObject', '');
    const run = async (): Promise<PutObjectResponse> => {
      const first = await it.next();
      const header = first.done === true ? undefined : first.value.part;
      if (header?.$case !== 'header') throw new StatusError(status.INVALID_ARGUMENT, 'PutObject: the first message must be the header');
      const { instance, bucket, key } = header.header;
      const plugin = instance?.plugin ?? '';
      return hooks.call({ ...base, plugin }, async () => {
        const store = instances.get('ObjectStore', instance);
        let size = 0;
        const counted = async function* (): AsyncGenerator<Buffer> {
          for await (const chunk of chunksOf(it)) {
            size += chunk.length;
            yield chunk;
          }
        };
        await store.putObject(bucket, key, counted());
        return { size };
      });
    };
    run().then(
      (res) => callback(null, res),
      (err: unknown) => callback(toServiceError(err)),
    );
  };

  const getObject = (call: ServerWritableStream<GetObjectRequest, GetObjectResponse>): void => {
    const req = call.request;
    const info = callInfo(call, SERVICE, 'GetObject', req.instance?.plugin ?? '');
    const cancelled = { signal: info.signal };
    hooks
      .call(info, async () => {
        const store = instances.get('ObjectStore', req.instance);
        const ranged = isResumable(store) && req.offset > 0;
        const body = ranged ? await store.getObjectFrom(req.bucket, req.key, req.offset) : await store.getObject(req.bucket, req.key);
        let skip = ranged ? 0 : req.offset;
        for await (const piece of rechunk(body)) {
          if (cancelled.signal.aborted) return;
          let chunk = piece;
          if (skip > 0) {
            // Stores stream from the start; a resumed download drops what the host already has.
            const drop = Math.min(skip, chunk.length);
            skip -= drop;
            chunk = chunk.subarray(drop);
            if (chunk.length === 0) continue;
          }
          if (!call.write({ chunk })) await once(call, 'drain', { signal: cancelled.signal });
        }
        if (skip > 0) throw new StatusError(status.OUT_OF_RANGE, `GetObject: offset ${req.offset} is past the end of ${req.bucket}/${req.key}`);
      })
      .then(
        () => {
          if (!cancelled.signal.aborted) call.end();
        },
        (err: unknown) => {
          if (!cancelled.signal.aborted) call.emit('error', toServiceError(err));
        },
      );
  };

  return {
    init: unary('Init', (r) => r.plugin, async (req) => {
      const factory = factories[req.plugin];
      if (factory === undefined) throw unknownPlugin('ObjectStore', req.plugin, names);
      const store = await factory();
      await store.init({ ...req.config });
      return { instanceId: instances.add(req.plugin, store) };
    }),
    putObject,
    getObject,
    objectExists: unary('ObjectExists', (r) => r.instance?.plugin ?? '', async (req) => ({
      exists: await instances.get('ObjectStore', req.instance).objectExists(req.bucket, req.key),
    })),
    listCommonPrefixes: unary('ListCommonPrefixes', (r) => r.instance?.plugin ?? '', async (req) => ({
      keys: await instances.get('ObjectStore', req.instance).listCommonPrefixes(req.bucket, req.prefix, req.delimiter),
    })),
    listObjects: unary('ListObjects', (r) => r.instance?.plugin ?? '', async (req) => ({
      keys: await instances.get('ObjectStore', req.instance).listObjects(req.bucket, req.prefix),
    })),
    deleteObject: unary('DeleteObject', (r) => r.instance?.plugin ?? '', async (req) => {
      await instances.get('ObjectStore', req.instance).deleteObject(req.bucket, req.key);
      return {};
    }),
    createSignedUrl: unary('CreateSignedURL', (r) => r.instance?.plugin ?? '', async (req) => ({
      url: await instances.get('ObjectStore', req.instance).createSignedURL(req.bucket, req.key, req.ttlSeconds),
    })),
  };
}
