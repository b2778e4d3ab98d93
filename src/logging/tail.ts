// The server log's last lines, kept in memory so `stowage debug` can fetch them through the server
// itself (a DownloadRequest for the ServerLog target): where no kubelet serves pod logs, or the
// user may not read them, this is the only way to the server's recent history. Lines are stored as
// the server logger rendered them, after its secret scrubbing.
import TransportStream from 'winston-transport';
import { MESSAGE } from './format.js';

/** Lines and bytes kept by default: enough for a few minutes of a busy server, little memory. */
export const LOG_TAIL_LINES = 2000;
export const LOG_TAIL_BYTES = 1024 * 1024;

export interface LogTail {
  push(line: string): void;
  /** The kept lines, oldest first. */
  lines(): string[];
  /** Lines dropped to stay within the limits since the server started. */
  dropped(): number;
}

/** A ring of the last `maxLines` lines, holding at most `maxBytes` of text (the oldest go first). */
export function createLogTail(opts: { maxLines?: number; maxBytes?: number } = {}): LogTail {
  const maxLines = Math.max(1, opts.maxLines ?? LOG_TAIL_LINES);
  const maxBytes = Math.max(1, opts.maxBytes ?? LOG_TAIL_BYTES);
  const ring: string[] = [];
  let start = 0;
  let bytes = 0;
  let dropped = 0;
  const dropOldest = (): void => {
    bytes -= (ring[start] ?? '').length;
    ring[start] = '';
    start++;
    dropped++;
    // Compact now and then rather than shifting on every line.
    if (start >= 1024 && start * 2 >= ring.length) {
      ring.splice(0, start);
      start = 0;
    }
  };
  return {
    push(line) {
      // One line larger than the whole budget keeps its head: the tail must stay bounded.
      const l = line.length > maxBytes ? `${line.slice(0, maxBytes - 20)} [line truncated]` : line;
      ring.push(l);
      bytes += l.length;
      while (ring.length - start > maxLines || (bytes > maxBytes && ring.length - start > 1)) dropOldest();
    },
    lines: () => ring.slice(start),
    dropped: () => dropped,
  };
}

/** A winston transport that feeds rendered lines (the formats' MESSAGE) into a tail. */
export class TailTransport extends TransportStream {
  constructor(private readonly tail: LogTail) {
    super({});
  }
  override log(info: Record<string | symbol, unknown>, next: () => void): void {
    const rendered = info[MESSAGE];
    if (typeof rendered === 'string') this.tail.push(rendered);
    next();
  }
}
