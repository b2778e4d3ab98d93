// Streaming authenticated encryption of one stored object, in fixed-size chunks (AES-256-GCM).
//
// Layout: a 28-byte header, then chunks. Every chunk but the last holds exactly `chunkSize`
// plaintext bytes; the last holds 0..chunkSize and is flagged final. Each chunk is its ciphertext
// followed by a 16-byte tag.
//   header = "STWENC" 0x01 0x00 | chunkSize (uint32 BE) | salt (16 random bytes)
//   object key = HKDF-SHA256(data key, salt, INFO + context)      (one per object: no nonce reuse
//                                                                  across a backup's objects)
//   nonce(i) = 0x00000000 | i (uint64 BE)
//   AAD(i)   = header | i (uint64 BE) | final (1 byte)
// The context names the object (see context.ts), so a backup's log cannot pass for its tarball, nor
// one backup's chunks for another's. The index and the final flag in the AAD stop reordering,
// dropping and truncation. Memory holds one chunk at a time; nothing goes through a file.
import crypto from 'node:crypto';
import { DATA_KEY_BYTES } from '../plugin/api/index.js';
import { DecryptionError } from './errors.js';

export const CHUNKED_ALGORITHM = 'AES-256-GCM-CHUNKED-v1';
export const DEFAULT_CHUNK_SIZE = 64 * 1024;
/** Readers refuse a header claiming chunks outside these bounds (a hostile header must not size our buffers). */
export const MIN_CHUNK_SIZE = 1024;
export const MAX_CHUNK_SIZE = 4 * 1024 * 1024;
// The KeyManager contract fixes it (plugins wrap exactly this size).
export { DATA_KEY_BYTES };

const MAGIC = Buffer.from([0x53, 0x54, 0x57, 0x45, 0x4e, 0x43, 0x01, 0x00]); // "STWENC" v1
const HEADER_BYTES = MAGIC.length + 4 + 16;
const TAG_BYTES = 16;
const INFO = 'stowage.dev chunked object v1\u0000';

/** A fresh random data key. */
export function newDataKey(): Buffer {
  return crypto.randomBytes(DATA_KEY_BYTES);
}

/** Whether `head` (the first bytes of an object) starts with the encrypted-object magic. */
export function looksEncrypted(head: Uint8Array): boolean {
  return head.length >= MAGIC.length && Buffer.from(head.buffer, head.byteOffset, MAGIC.length).equals(MAGIC);
}

function objectKey(dataKey: Buffer, salt: Buffer, context: string): Buffer {
  if (dataKey.length !== DATA_KEY_BYTES) throw new Error(`a data key is ${DATA_KEY_BYTES} bytes, not ${dataKey.length}`);
  return Buffer.from(crypto.hkdfSync('sha256', dataKey, salt, INFO + context, 32));
}

function nonce(i: number): Buffer {
  const n = Buffer.alloc(12);
  n.writeBigUInt64BE(BigInt(i), 4);
  return n;
}

function aad(header: Buffer, i: number, final: boolean): Buffer {
  const a = Buffer.alloc(header.length + 9);
  header.copy(a, 0);
  a.writeBigUInt64BE(BigInt(i), header.length);
  a[header.length + 8] = final ? 1 : 0;
  return a;
}

function sealChunk(key: Buffer, header: Buffer, i: number, final: boolean, plain: Buffer): Buffer {
  const c = crypto.createCipheriv('aes-256-gcm', key, nonce(i));
  c.setAAD(aad(header, i, final));
  return Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
}

function openChunk(key: Buffer, header: Buffer, i: number, final: boolean, sealed: Buffer): Buffer | undefined {
  if (sealed.length < TAG_BYTES) return undefined;
  const d = crypto.createDecipheriv('aes-256-gcm', key, nonce(i));
  d.setAAD(aad(header, i, final));
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([d.update(sealed.subarray(0, sealed.length - TAG_BYTES)), d.final()]);
  } catch {
    return undefined;
  }
}

/** What a stream is read from: a body as it arrives, or (for small objects) the bytes at once. */
export type Source = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

export interface EncryptOptions {
  chunkSize?: number;
}

/** Encrypts `source` for `context` under `dataKey`, one chunk at a time. */
export async function* encryptStream(source: Source, dataKey: Buffer, context: string, opts: EncryptOptions = {}): AsyncGenerator<Buffer> {
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isInteger(chunkSize) || chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) throw new Error(`chunk size ${chunkSize} is out of bounds`);
  const salt = crypto.randomBytes(16);
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt32BE(chunkSize, MAGIC.length);
  salt.copy(header, MAGIC.length + 4);
  const key = objectKey(dataKey, salt, context);
  yield header;
  // One chunk is held back until the next byte arrives: only then is it known not to be the last.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let i = 0;
  for await (const piece of source) {
    let buf = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (buf.length > 0) {
      if (pendingBytes === chunkSize) {
        yield sealChunk(key, header, i++, false, Buffer.concat(pending, pendingBytes));
        pending = [];
        pendingBytes = 0;
      }
      const take = Math.min(chunkSize - pendingBytes, buf.length);
      // Copied: the source may reuse its buffers once we ask for the next piece.
      pending.push(Buffer.from(buf.subarray(0, take)));
      pendingBytes += take;
      buf = buf.subarray(take);
    }
  }
  yield sealChunk(key, header, i, true, Buffer.concat(pending, pendingBytes));
}

/** Encrypts a small object held in memory (metadata, results). */
export function encryptBuffer(plain: Uint8Array, dataKey: Buffer, context: string, opts: EncryptOptions = {}): Promise<Buffer> {
  return collect(encryptStream([plain], dataKey, context, opts));
}

export interface DecryptOptions {
  /** Names the object in error messages, e.g. `the tarball of backup "b1"`. */
  what: string;
}

/**
 * Decrypts and authenticates `source`, yielding plaintext chunk by chunk. Every yielded byte has
 * been authenticated, but only the end proves nothing was cut off: a consumer must not act on the
 * stream as a whole (create objects) before it has ended without error. Rejects with a
 * DecryptionError saying what is wrong and where.
 */
export async function* decryptStream(source: Source, dataKey: Buffer, context: string, opts: DecryptOptions): AsyncGenerator<Buffer> {
  const { what } = opts;
  const reader = new ChunkReader(source);
  const header = await reader.read(HEADER_BYTES);
  if (header.length < MAGIC.length || !looksEncrypted(header)) {
    throw new DecryptionError('not-encrypted', `${what} is not encrypted (no Stowage encryption header), though its backup says it is`);
  }
  if (header.length < HEADER_BYTES) throw new DecryptionError('truncated', `${what} is truncated: it ends inside its encryption header`);
  const chunkSize = header.readUInt32BE(MAGIC.length);
  if (chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) {
    throw new DecryptionError('malformed', `${what} has a malformed encryption header (chunk size ${chunkSize} is outside ${MIN_CHUNK_SIZE}..${MAX_CHUNK_SIZE})`);
  }
  const key = objectKey(dataKey, header.subarray(MAGIC.length + 4), context);
  const sealedSize = chunkSize + TAG_BYTES;
  let i = 0;
  let cur = await reader.read(sealedSize);
  for (;;) {
    // A full chunk followed by more bytes is not the last; anything else must be.
    const next = cur.length === sealedSize ? await reader.read(sealedSize) : Buffer.alloc(0);
    const final = next.length === 0;
    const plain = openChunk(key, header, i, final, cur);
    if (plain === undefined) throw new DecryptionError(...diagnose(key, header, i, final, cur, what));
    yield plain;
    if (final) return;
    cur = next;
    i++;
  }
}

/** Decrypts a small object held in memory. */
export function decryptBuffer(sealed: Uint8Array, dataKey: Buffer, context: string, opts: DecryptOptions): Promise<Buffer> {
  return collect(decryptStream([sealed], dataKey, context, opts));
}

/**
 * Why chunk `i` failed, in words: only worked out after a failure, by trying the chunk at the
 * neighbouring positions and flags (a few extra GCM attempts on one chunk).
 */
function diagnose(key: Buffer, header: Buffer, i: number, final: boolean, sealed: Buffer, what: string): [DecryptionError['reason'], string] {
  const at = `chunk ${i} (at byte ${HEADER_BYTES + i * (header.readUInt32BE(MAGIC.length) + TAG_BYTES)})`;
  if (final && openChunk(key, header, i, false, sealed) !== undefined) {
    return ['truncated', `${what} is truncated: it ends after ${at} without its final chunk`];
  }
  for (const j of [i + 1, i + 2, i + 3]) {
    if (openChunk(key, header, j, final, sealed) !== undefined || openChunk(key, header, j, !final, sealed) !== undefined) {
      return ['reordered', `${what} has lost chunks: ${at} holds chunk ${j} (chunks were dropped or reordered)`];
    }
  }
  for (const j of [i - 1, i - 2].filter((n) => n >= 0)) {
    if (openChunk(key, header, j, false, sealed) !== undefined) return ['reordered', `${what} has chunks out of order: ${at} holds chunk ${j}`];
  }
  if (i === 0) {
    return ['tampered', `${what} fails authentication at ${at}: it was altered, it belongs to another backup, or the data key is wrong`];
  }
  return ['tampered', `${what} fails authentication at ${at}: it was altered${final ? ' or truncated' : ''}, or the chunk comes from another backup`];
}

/** Reads exactly n bytes at a time from an async iterable (fewer only at its end). */
class ChunkReader {
  private readonly it: AsyncIterator<Uint8Array> | Iterator<Uint8Array>;
  private buf: Buffer = Buffer.alloc(0);
  private done = false;
  constructor(source: Source) {
    this.it = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
  }
  async read(n: number): Promise<Buffer> {
    const parts: Buffer[] = this.buf.length > 0 ? [this.buf] : [];
    let have = this.buf.length;
    while (have < n && !this.done) {
      const r = await this.it.next();
      if (r.done === true) {
        this.done = true;
        break;
      }
      const b = Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
      parts.push(b);
      have += b.length;
    }
    const all = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, have);
    // Copied, so a chunk handed on does not pin (or alias) a larger buffer of the source.
    const out = Buffer.from(all.subarray(0, Math.min(n, all.length)));
    this.buf = all.subarray(out.length);
    return out;
  }
}

async function collect(it: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of it) parts.push(p);
  return Buffer.concat(parts);
}
