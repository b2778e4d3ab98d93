// Encoding of the small JSON artifacts: gzipped JSON out, capped gunzip + JSON.parse in.
import { createGunzip, gzipSync } from 'node:zlib';
import { pipeline, Readable } from 'node:stream';
import { replayableBody } from '../plugin/api/index.js';

/** The bytes as a PutObject body the plugin host can replay if the plugin dies mid-upload. */
export function bytesOf(data: Uint8Array): AsyncIterable<Uint8Array> {
  return replayableBody(() => [data]);
}

export function gzipJson(value: unknown): AsyncIterable<Uint8Array> {
  return bytesOf(gzipSync(Buffer.from(JSON.stringify(value))));
}

export function plainJson(value: unknown): AsyncIterable<Uint8Array> {
  return bytesOf(Buffer.from(`${JSON.stringify(value, null, 2)}\n`));
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

export async function readGzipJson(source: AsyncIterable<Uint8Array>, maxBytes: number, what: string): Promise<unknown> {
  // pipeline (not pipe) so a storage error or corrupt gzip ends the read instead of hanging it.
  const inflated = pipeline(Readable.from(source, { objectMode: false }), createGunzip(), () => undefined);
  let data: Buffer;
  try {
    data = await readAllCapped(inflated, maxBytes, 'its inflated content');
  } catch (err) {
    throw new Error(`${what} could not be read: ${(err as Error).message}`, { cause: err });
  } finally {
    inflated.destroy();
  }
  return parseJson(data, what);
}

export function parseJson(data: Buffer, what: string): unknown {
  try {
    return JSON.parse(data.toString('utf8'));
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}
