// Hot-path codec for BackupItemAction.ExecuteBatch, whose requests carry a page of items as JSON
// (about 750 KB for 250 items) and whose answers each item or its patch (itemPatch.ts). The
// generated (ts-proto) serializers copy every item three times (into the BinaryWriter's chunks,
// into one array at finish(), into a Buffer for grpc-js); these write the same wire bytes into one
// Buffer with one copy. Deserializing is left to the generated
// code, which hands out views of the received buffer. A result naming additional items falls back
// to the generated serializer: pages of such results are rare, and their wire shape is richer.
import { makeGenericClientConstructor, type ChannelCredentials, type ClientOptions } from '@grpc/grpc-js';
import {
  BackupItemActionExecuteBatchRequest,
  BackupItemActionExecuteBatchResponse,
  BackupItemActionService,
  type BackupItemActionClient,
} from '../../gen/stowage/plugin/v1/item_actions.js';
import { varintLength } from './fastCodec.js';

/** Tag of a length-delimited field: (field number << 3) | 2. */
const tag = (field: number): number => (field << 3) | 2;
const REQUEST_PLUGIN = tag(1);
const REQUEST_BACKUP = tag(2);
const REQUEST_ITEMS = tag(3);
/** accept_patches = 4, a varint (wire type 0) holding true. */
const REQUEST_ACCEPT_PATCHES = 4 << 3;
const RESPONSE_RESULTS = tag(1);
const RESULT_ITEM = tag(1);
const RESULT_ERROR = tag(3);
const RESULT_PATCH = tag(4);

/** Bytes of a length-delimited field whose value is `n` bytes long. */
const fieldLength = (n: number): number => 1 + varintLength(n) + n;

function putVarint(out: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    out[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

function putBytes(out: Buffer, pos: number, fieldTag: number, data: Uint8Array): number {
  out[pos++] = fieldTag;
  pos = putVarint(out, pos, data.length);
  out.set(data, pos);
  return pos + data.length;
}

export function serializeBatchRequest(value: BackupItemActionExecuteBatchRequest): Buffer {
  // proto3: empty scalars are left out; repeated fields are written element by element.
  const plugin = Buffer.from(value.plugin, 'utf8');
  let size = (plugin.length > 0 ? fieldLength(plugin.length) : 0) + (value.backup.length > 0 ? fieldLength(value.backup.length) : 0);
  for (const item of value.items) size += fieldLength(item.length);
  if (value.acceptPatches) size += 2;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  if (plugin.length > 0) pos = putBytes(out, pos, REQUEST_PLUGIN, plugin);
  if (value.backup.length > 0) pos = putBytes(out, pos, REQUEST_BACKUP, value.backup);
  for (const item of value.items) pos = putBytes(out, pos, REQUEST_ITEMS, item);
  if (value.acceptPatches) {
    out[pos++] = REQUEST_ACCEPT_PATCHES;
    out[pos++] = 1;
  }
  return out;
}

export function serializeBatchResponse(value: BackupItemActionExecuteBatchResponse): Buffer {
  if (value.results.some((r) => r.additionalItems.length > 0)) return Buffer.from(BackupItemActionExecuteBatchResponse.encode(value).finish());
  const errors = value.results.map((r) => (r.error === '' ? undefined : Buffer.from(r.error, 'utf8')));
  const inner = value.results.map((r, i) =>
    (r.item.length > 0 ? fieldLength(r.item.length) : 0) + (errors[i] !== undefined ? fieldLength(errors[i].length) : 0) + (r.itemPatch.length > 0 ? fieldLength(r.itemPatch.length) : 0),
  );
  const out = Buffer.allocUnsafe(inner.reduce((a, n) => a + fieldLength(n), 0));
  let pos = 0;
  value.results.forEach((r, i) => {
    out[pos++] = RESPONSE_RESULTS;
    pos = putVarint(out, pos, inner[i] ?? 0);
    if (r.item.length > 0) pos = putBytes(out, pos, RESULT_ITEM, r.item);
    const error = errors[i];
    if (error !== undefined) pos = putBytes(out, pos, RESULT_ERROR, error);
    if (r.itemPatch.length > 0) pos = putBytes(out, pos, RESULT_PATCH, r.itemPatch);
  });
  return out;
}

/** BackupItemActionService with the one-copy ExecuteBatch serializers; same paths and wire format. */
export const FastBackupItemActionService = {
  ...BackupItemActionService,
  executeBatch: {
    ...BackupItemActionService.executeBatch,
    requestSerialize: serializeBatchRequest,
    requestDeserialize: (buf: Buffer): BackupItemActionExecuteBatchRequest => BackupItemActionExecuteBatchRequest.decode(buf),
    responseSerialize: serializeBatchResponse,
  },
} as const;

export const FastBackupItemActionClient = makeGenericClientConstructor(FastBackupItemActionService, 'stowage.plugin.v1.BackupItemAction') as unknown as {
  new (address: string, credentials: ChannelCredentials, options?: Partial<ClientOptions>): BackupItemActionClient;
};
