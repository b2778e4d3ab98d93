// Splits a watch stream into its lines (one JSON event each). Bytes are decoded with a
// StringDecoder, which holds back a multi-byte UTF-8 character split across two chunks until its
// last byte arrives; decoding each chunk on its own would turn both halves into U+FFFD.
import { StringDecoder } from 'node:string_decoder';

export class WatchLineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private rest = '';

  /**
   * The complete, non-blank lines `chunk` finishes, trimmed, in order. A line the stream never
   * finishes is dropped, as the apiserver ends every event with a newline.
   */
  push(chunk: Buffer): string[] {
    const text = this.rest + this.decoder.write(chunk);
    const lines: string[] = [];
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      const line = text.slice(start, nl).trim();
      if (line !== '') lines.push(line);
      start = nl + 1;
    }
    this.rest = text.slice(start);
    return lines;
  }
}
