// Promise wrapper for unary calls with the call's metadata and deadline.
import type { CallOptions, ClientUnaryCall, Metadata, ServiceError } from '@grpc/grpc-js';
import { fromServiceError } from './errors.js';

/** What every outgoing call carries: the run's metadata and a deadline. */
export interface CallContext {
  metadata: Metadata;
  /** Absolute deadline of the whole call. */
  deadline: Date;
  /** Streams only: longest wait for the next chunk to move before the call is cancelled. */
  idleTimeoutMs?: number;
  /** Cancels the call at once (the run was canceled or the server is stopping); it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Cancels `call` and rejects with the signal's reason when `signal` aborts; returns the unsubscribe. */
export function cancelOnAbort(signal: AbortSignal | undefined, cancel: () => void, reject: (reason: unknown) => void): () => void {
  if (signal === undefined) return () => undefined;
  const onAbort = (): void => {
    reject(abortReason(signal));
    cancel();
  };
  if (signal.aborted) {
    queueMicrotask(onAbort);
    return () => undefined;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** The reason a signal aborted, as an Error. */
export function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  if (r instanceof Error) return r;
  const err = new Error(r === undefined ? 'the call was aborted' : String(r));
  err.name = 'AbortError';
  return err;
}

export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

export function unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, ctx: CallContext): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    let unsubscribe = (): void => undefined;
    const call = method(request, ctx.metadata, { deadline: ctx.deadline }, (err, res) => {
      unsubscribe();
      if (err !== null) reject(fromServiceError(err));
      else resolve(res);
    });
    unsubscribe = cancelOnAbort(ctx.signal, () => call.cancel(), reject);
  });
}
