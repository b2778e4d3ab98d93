// Streams carry data in chunks of at most 1 MiB (a gRPC message per chunk); both ends send 64 KiB.

export const CHUNK_SIZE = 64 * 1024;

function toBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * Why 64 KiB and not the 1 MiB the protocol allows: grpc-js buffers up to 16 messages on each side of
 * a stream (its Readable and Writable high-water marks), so 1 MiB chunks meant 16 MiB waiting in the
 * server, each chunk long enough to reach V8's old generation and stay there, dead, until a full
 * collection; glibc then kept what they freed. Per-message cost at 64 KiB is negligible next to the
 * bytes (bench/README.md, "Session 18").
 *
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
