// Object bodies that survive a plugin restart: a PutObject body the host can read again from the
// start, and the optional store capability of streaming from an offset (a resumed GetObject).

const REPLAYABLE = Symbol.for('stowage.plugin.replayableBody');

/** A PutObject body that can be read again from the start; each iteration opens a fresh stream. */
export interface ReplayableBody extends AsyncIterable<Uint8Array> {
  readonly [REPLAYABLE]: true;
}

async function* fromIterable(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  yield* source;
}

/**
 * Wraps `open` (called once per read, e.g. `() => fs.createReadStream(file)`) as a body the plugin
 * host can replay when the plugin process dies mid-upload. Bodies not made this way are replayed
 * only while they fit in the host's bounded replay buffer.
 */
export function replayableBody(open: () => AsyncIterable<Uint8Array> | Iterable<Uint8Array>): ReplayableBody {
  return {
    [REPLAYABLE]: true,
    [Symbol.asyncIterator]: () => fromIterable(open())[Symbol.asyncIterator](),
  };
}

export function isReplayable(body: AsyncIterable<Uint8Array>): body is ReplayableBody {
  return (body as Partial<ReplayableBody>)[REPLAYABLE] === true;
}

/** Optional ObjectStore capability: stream an object from byte `offset` (resumes a download). */
export interface ResumableGetObject {
  getObjectFrom(bucket: string, key: string, offset: number): Promise<AsyncIterable<Uint8Array>>;
}

export function isResumable(store: object): store is ResumableGetObject {
  return typeof (store as Partial<ResumableGetObject>).getObjectFrom === 'function';
}
