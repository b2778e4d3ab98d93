// Streams carry data in chunks of at most 1 MiB (a gRPC message per chunk).

export const CHUNK_SIZE = 1024 * 1024;

function toBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * Re-cuts `source` into chunks of at most `size` bytes, coalescing small pieces up to `size` so a
 * stream of tiny writes does not become a flood of tiny messages.
 */
export async function* rechunk(source: AsyncIterable<Uint8Array>, size = CHUNK_SIZE): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const piece of source) {
    let buf = toBuffer(piece);
    while (buf.length > 0) {
      const room = size - pendingBytes;
      if (pendingBytes === 0 && buf.length >= size) {
        yield buf.subarray(0, size);
        buf = buf.subarray(size);
        continue;
      }
      const take = buf.subarray(0, room);
      pending.push(take);
      pendingBytes += take.length;
      buf = buf.subarray(take.length);
      if (pendingBytes === size) {
        yield Buffer.concat(pending, pendingBytes);
        pending = [];
        pendingBytes = 0;
      }
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending, pendingBytes);
}
