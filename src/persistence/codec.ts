// Encoding of the small JSON artifacts: gzipped JSON out, capped gunzip + JSON.parse in.
import crypto from 'node:crypto';
import { createGunzip, createGzip } from 'node:zlib';
import { pipeline, Readable } from 'node:stream';
import { replayableBody } from '../plugin/api/index.js';
import { isJsonPiecesSource, JSON_PIECES } from '../util/jsonPieces.js';

/** The bytes as a PutObject body the plugin host can replay if the plugin dies mid-upload. */
export function bytesOf(data: Uint8Array): AsyncIterable<Uint8Array> {
  return replayableBody(() => [data]);
}

/**
 * The value as gzipped JSON, serialized while it is read: a manifest of 100k entries or a restore's
 * 50k outcomes never exist as one string (tens of MB at the end of a run, when memory is highest).
 * Each read serializes again, so the plugin host can replay the body.
 */
export function gzipJson(value: unknown): AsyncIterable<Uint8Array> {
  return replayableBody(() => {
    const gzip = createGzip();
    // pipeline (not pipe): a value JSON cannot hold (a BigInt) fails the read instead of hanging it.
    return pipeline(Readable.from(jsonBatches(value)), gzip, () => undefined);
  });
}

/**
 * SHA-256 (hex) of the JSON text gzipJson writes for the value (the same pieces), without building
 * it as one string: what a reader gets by hashing the artifact's inflated bytes.
 */
export function jsonSha256(value: unknown): string {
  const h = crypto.createHash('sha256');
  for (const batch of jsonBatches(value)) h.update(batch, 'utf8');
  return h.digest('hex');
}

/** SHA-256 (hex) of a stream's bytes. */
export async function sha256Of(source: AsyncIterable<Uint8Array>): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const c of source) h.update(c);
  return h.digest('hex');
}

const BATCH_CHARS = 64 * 1024;
/** Containers this deep and deeper are left to JSON.stringify whole (the elements of a manifest's entries, of a list). */
const SPLIT_DEPTH = 2;

/** jsonPieces joined into strings of about BATCH_CHARS: each gzip write is a thread-pool round trip. */
function* jsonBatches(value: unknown): Generator<string> {
  let batch = '';
  for (const piece of jsonPieces(value)) {
    batch += piece;
    if (batch.length >= BATCH_CHARS) {
      yield batch;
      batch = '';
    }
  }
  if (batch !== '') yield batch;
}

function isPlainContainer(v: unknown): v is Record<string, unknown> | unknown[] {
  if (Array.isArray(v)) return true;
  if (v === null || typeof v !== 'object' || typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** JSON.stringify(value) in pieces (the same text once joined), cut between the elements of its outer arrays and objects. */
export function* jsonPieces(value: unknown, depth = 0): Generator<string> {
  // At the top level, like JSON.stringify, a value JSON cannot hold (undefined, a function) gives nothing.
  const pieces = isJsonPiecesSource(value) ? value[JSON_PIECES]() : splits(value, depth) ? containerPieces(value, depth) : leafText(value);
  if (pieces !== undefined) yield* pieces;
}

function splits(value: unknown, depth: number): value is Record<string, unknown> | unknown[] {
  return depth < SPLIT_DEPTH && isPlainContainer(value);
}

/** JSON.stringify of a value not cut further, or undefined for one JSON leaves out (undefined, a function, a symbol). */
function leafText(value: unknown): [string] | undefined {
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? undefined : [text];
}

function* containerPieces(value: Record<string, unknown> | unknown[], depth: number): Generator<string> {
  const member = (v: unknown): Iterable<string> | undefined =>
    isJsonPiecesSource(v) ? v[JSON_PIECES]() : splits(v, depth + 1) ? containerPieces(v, depth + 1) : leafText(v);
  if (Array.isArray(value)) {
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ',';
      yield* member(value[i]) ?? ['null']; // as JSON.stringify writes an element it leaves out
    }
    yield ']';
    return;
  }
  yield '{';
  let first = true;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const pieces = member(value[key]);
    if (pieces === undefined) continue; // JSON.stringify leaves such keys out
    yield `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    yield* pieces;
  }
  yield '}';
}

/** Reads a whole stream, refusing more than maxBytes. */
export async function readAllCapped(source: AsyncIterable<Uint8Array>, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const c of source) {
    n += c.byteLength;
    if (n > maxBytes) throw new Error(`${what} is larger than ${maxBytes} bytes`);
    chunks.push(c);
  }
  return Buffer.concat(chunks, n);
}

/**
 * The inflated bytes of a gzipped object, as they come: for reading a large artifact (a manifest)
 * without holding it. Fails past `maxBytes` inflated, and on a storage error or corrupt gzip, with
 * `what` in the message.
 */
export async function* gunzipCapped(source: AsyncIterable<Uint8Array>, maxBytes: number, what: string): AsyncGenerator<Uint8Array> {
  // pipeline (not pipe) so a storage error or corrupt gzip ends the read instead of hanging it.
  const inflated = pipeline(Readable.from(source, { objectMode: false }), createGunzip(), () => undefined);
  let n = 0;
  try {
    for await (const c of inflated as AsyncIterable<Buffer>) {
      n += c.byteLength;
      if (n > maxBytes) throw new Error(`its inflated content is larger than ${maxBytes} bytes`);
      yield c;
    }
  } catch (err) {
    throw new Error(`${what} could not be read: ${(err as Error).message}`, { cause: err });
  } finally {
    inflated.destroy();
  }
}

export async function readGzipJson(source: AsyncIterable<Uint8Array>, maxBytes: number, what: string): Promise<unknown> {
  // gunzipCapped enforces the cap and names `what` in its errors.
  return parseJson(await readAllCapped(gunzipCapped(source, maxBytes, what), Number.POSITIVE_INFINITY, what), what);
}

export function parseJson(data: Buffer, what: string): unknown {
  try {
    return JSON.parse(data.toString('utf8'));
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}
