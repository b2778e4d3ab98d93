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
}

export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

export function unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, ctx: CallContext): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    method(request, ctx.metadata, { deadline: ctx.deadline }, (err, res) => {
      if (err !== null) reject(fromServiceError(err));
      else resolve(res);
    });
  });
}
