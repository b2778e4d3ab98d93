// Hot-path codec for the byte chunks of PutObject and GetObject. The generated (ts-proto) code
// copies each 1 MiB chunk three times on encode and once on decode, which dominated CPU and GC
// in the upload path. These functions produce and accept the same protobuf wire bytes with one
// copy on encode and none on decode; any other message shape falls back to the generated code.
import { makeGenericClientConstructor, type ChannelCredentials, type ClientOptions } from '@grpc/grpc-js';
import {
  GetObjectResponse,
  ObjectStoreService,
  PutObjectRequest,
  type ObjectStoreClient,
} from '../../gen/stowage/plugin/v1/object_store.js';

/** Tag of a length-delimited field: (field number << 3) | 2. */
const PUT_CHUNK_TAG = (2 << 3) | 2; // PutObjectRequest.chunk = 2
const GET_CHUNK_TAG = (1 << 3) | 2; // GetObjectResponse.chunk = 1

/** Bytes a protobuf varint of n takes (batchCodec sizes its buffers with it too). */
export function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** `tag`, varint length, then `data`: one allocation, one copy. */
export function encodeBytesField(tag: number, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(1 + varintLength(data.length) + data.length);
  out[0] = tag;
  let pos = 1;
  let n = data.length;
  while (n >= 0x80) {
    out[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  out.set(data, pos);
  return out;
}

/** The bytes of a message made of exactly one `tag` field (a view, no copy), or undefined. */
export function decodeBytesField(tag: number, buf: Buffer): Buffer | undefined {
  if (buf.length < 2 || buf[0] !== tag) return undefined;
  let len = 0;
  let shift = 1;
  let pos = 1;
  for (;;) {
    const b = buf[pos++];
    if (b === undefined || pos > 6) return undefined;
    len += (b & 0x7f) * shift;
    shift *= 128;
    if (b < 0x80) break;
  }
  return pos + len === buf.length ? buf.subarray(pos) : undefined;
}

function serializePut(value: PutObjectRequest): Buffer {
  if (value.part?.$case === 'chunk') return encodeBytesField(PUT_CHUNK_TAG, value.part.chunk);
  return Buffer.from(PutObjectRequest.encode(value).finish());
}

function deserializePut(buf: Buffer): PutObjectRequest {
  const chunk = decodeBytesField(PUT_CHUNK_TAG, buf);
  return chunk !== undefined ? { part: { $case: 'chunk', chunk } } : PutObjectRequest.decode(buf);
}

function serializeGet(value: GetObjectResponse): Buffer {
  return encodeBytesField(GET_CHUNK_TAG, value.chunk);
}

function deserializeGet(buf: Buffer): GetObjectResponse {
  const chunk = decodeBytesField(GET_CHUNK_TAG, buf);
  return chunk !== undefined ? { chunk } : GetObjectResponse.decode(buf);
}

/** ObjectStoreService with the fast chunk codec; same paths and wire format. */
export const FastObjectStoreService = {
  ...ObjectStoreService,
  putObject: { ...ObjectStoreService.putObject, requestSerialize: serializePut, requestDeserialize: deserializePut },
  getObject: { ...ObjectStoreService.getObject, responseSerialize: serializeGet, responseDeserialize: deserializeGet },
} as const;

export const FastObjectStoreClient = makeGenericClientConstructor(FastObjectStoreService, 'stowage.plugin.v1.ObjectStore') as unknown as {
  new (address: string, credentials: ChannelCredentials, options?: Partial<ClientOptions>): ObjectStoreClient;
};
