// The last bytes of a stream, kept in bounded memory: a hook's output may be endless (a command
// that logs in a loop), and only its end says why it failed.
import { Writable } from 'node:stream';

export const DEFAULT_TAIL_BYTES = 2048;

export interface OutputTail {
  /** A Writable that keeps only the last `limit` bytes written to it. */
  stream: Writable;
  /** The kept bytes as text, prefixed with how much was dropped before them, if anything was. */
  text(): string;
  /** Every byte written, kept or not. */
  total(): number;
}

export function outputTail(limit = DEFAULT_TAIL_BYTES): OutputTail {
  let chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      total += chunk.length;
      chunks.push(chunk.length > limit ? chunk.subarray(chunk.length - limit) : chunk);
      kept += Math.min(chunk.length, limit);
      // Whole chunks drop from the front; the first kept one is cut to fit.
      while (kept > limit && chunks.length > 0) {
        const first = chunks[0] as Buffer;
        const over = kept - limit;
        if (first.length <= over) {
          chunks.shift();
          kept -= first.length;
        } else {
          chunks[0] = first.subarray(over);
          kept -= over;
        }
      }
      done();
    },
  });
  return {
    stream,
    text() {
      const buf = Buffer.concat(chunks);
      chunks = [buf];
      const dropped = total - buf.length;
      // A cut may fall inside a UTF-8 sequence: its continuation bytes (10xxxxxx) are dropped, not shown as U+FFFD.
      let start = 0;
      if (dropped > 0) while (start < buf.length && start < 3 && ((buf[start] ?? 0) & 0xc0) === 0x80) start++;
      const body = buf.subarray(start).toString('utf8');
      return dropped > 0 ? `[${dropped + start} bytes before]${body}` : body;
    },
    total: () => total,
  };
}
