// A PutObject body the host can send again when the plugin process dies mid-upload. Bodies made
// with replayableBody() are re-opened from the start. Other bodies are replayed from memory while
// what has been read of them fits in a bounded buffer; beyond it a retry is refused with a reason,
// so memory stays bounded whatever the object's size.
import { isReplayable } from '../api/index.js';

export class PutBody {
  private readonly replayable: boolean;
  private source: AsyncIterator<Uint8Array> | undefined;
  /** Chunks read of a one-shot body: all of them while they fit the buffer, then only those the current attempt has yet to take. */
  private recorded: Uint8Array[] = [];
  /** How many of `recorded` the current attempt has taken. */
  private taken = 0;
  private recordedBytes = 0;
  private overflowed = false;
  private ended = false;
  private readBytes = 0;
  /** The one read of the source in flight, whichever attempt asked for it. */
  private reading: Promise<void> | undefined;
  /** Which attempt is current: an abandoned one (its plugin process died) neither reads nor counts. */
  private attempts = 0;
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
    const n = ++this.attempts;
    if (this.replayable) return this.counted(this.body, n);
    this.source ??= this.body[Symbol.asyncIterator]();
    this.taken = 0;
    return this.counted(this.replayThenRead(n), n);
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
    this.taken = 0;
    await src?.return?.();
  }

  private async *counted(source: AsyncIterable<Uint8Array>, n: number): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      // The writer of a dead process may still pull: what it gets is not the current attempt's.
      if (n !== this.attempts) return;
      this.attemptBytes += chunk.byteLength;
      yield chunk;
    }
  }

  /**
   * Not a generator over `source` directly: ending one attempt early must not close the source.
   * A chunk is taken from `recorded` only, never straight from a read: a read an abandoned attempt
   * started may end after the next attempt began, and its chunk is then that attempt's to send.
   */
  private replayThenRead(n: number): AsyncIterable<Uint8Array> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<Uint8Array>> => {
          for (;;) {
            if (n !== this.attempts) return { done: true, value: undefined };
            if (this.taken < this.recorded.length) {
              const value = this.recorded[this.taken++] as Uint8Array;
              if (this.overflowed) this.dropTaken();
              return { done: false, value };
            }
            const src = this.source;
            if (src === undefined || this.ended) return { done: true, value: undefined };
            await this.read(src);
          }
        },
        return: async (): Promise<IteratorResult<Uint8Array>> => ({ done: true, value: undefined }),
      }),
    };
  }

  /** Reads the next chunk into `recorded`; one read at a time, shared by whoever waits for it. */
  private read(src: AsyncIterator<Uint8Array>): Promise<void> {
    this.reading ??= src.next().then((r) => {
      if (r.done === true) this.ended = true;
      else this.record(r.value);
    }).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private record(chunk: Uint8Array): void {
    this.readBytes += chunk.byteLength;
    this.recorded.push(chunk);
    if (this.overflowed) return;
    this.recordedBytes += chunk.byteLength;
    if (this.recordedBytes > this.bufferLimit) {
      // No retry is possible any more (blocker): keep only what the current attempt has yet to take.
      this.overflowed = true;
      this.dropTaken();
    }
  }

  private dropTaken(): void {
    this.recorded.splice(0, this.taken);
    this.taken = 0;
  }
}
