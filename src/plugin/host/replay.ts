// A PutObject body the host can send again when the plugin process dies mid-upload. Bodies made
// with replayableBody() are re-opened from the start. Other bodies are replayed from memory while
// what has been read of them fits in a bounded buffer; beyond it a retry is refused with a reason,
// so memory stays bounded whatever the object's size.
import { isReplayable } from '../api/index.js';

export class PutBody {
  private readonly replayable: boolean;
  private source: AsyncIterator<Uint8Array> | undefined;
  private recorded: Uint8Array[] = [];
  private recordedBytes = 0;
  private overflowed = false;
  private readBytes = 0;
  /** Bytes handed to the current attempt (what the plugin should report having stored). */
  attemptBytes = 0;

  constructor(
    private readonly body: AsyncIterable<Uint8Array>,
    private readonly bufferLimit: number,
  ) {
    this.replayable = isReplayable(body);
  }

  /** The stream for the next attempt: the body itself, or recorded chunks then the rest of the source. */
  attempt(): AsyncIterable<Uint8Array> {
    this.attemptBytes = 0;
    if (this.replayable) return this.counted(this.body);
    this.source ??= this.body[Symbol.asyncIterator]();
    return this.counted(this.replayThenRead());
  }

  /** Why another attempt is impossible, or undefined when it is possible. */
  blocker(): string | undefined {
    if (this.replayable || !this.overflowed) return undefined;
    return (
      `the body cannot be replayed: ${this.readBytes} bytes of it had been read, more than the ` +
      `${this.bufferLimit}-byte replay buffer; pass a replayable body (replayableBody() from plugin/api) to survive plugin restarts`
    );
  }

  /** Releases the source (closes a file or stream behind it). */
  async close(): Promise<void> {
    const src = this.source;
    this.source = undefined;
    this.recorded = [];
    await src?.return?.();
  }

  private async *counted(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      this.attemptBytes += chunk.byteLength;
      yield chunk;
    }
  }

  /** Not a generator over `source` directly: ending one attempt early must not close the source. */
  private replayThenRead(): AsyncIterable<Uint8Array> {
    const replay = this.recorded.slice();
    let i = 0;
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<Uint8Array>> => {
          if (i < replay.length) return { done: false, value: replay[i++] as Uint8Array };
          const src = this.source;
          if (src === undefined) return { done: true, value: undefined };
          const r = await src.next();
          if (r.done !== true) this.record(r.value);
          return r;
        },
        return: async (): Promise<IteratorResult<Uint8Array>> => ({ done: true, value: undefined }),
      }),
    };
  }

  private record(chunk: Uint8Array): void {
    this.readBytes += chunk.byteLength;
    if (this.overflowed) return;
    this.recorded.push(chunk);
    this.recordedBytes += chunk.byteLength;
    if (this.recordedBytes > this.bufferLimit) {
      this.overflowed = true;
      this.recorded = [];
      this.recordedBytes = 0;
    }
  }
}
