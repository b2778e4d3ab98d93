// Errors crossing the wire: a plugin's thrown error becomes a gRPC status, and a status becomes an
// Error on the host side, keeping the 'NotFound' code ObjectStore.getObject callers rely on.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';

/** Trailer set on errors raised by plugin code, so the host knows the process is still alive. */
export const ERROR_ORIGIN_KEY = 'stowage-error-origin';
/** Trailer naming a plugin error's `code` the host keeps ('Refused': the store will never take this request). */
export const ERROR_CODE_KEY = 'stowage-error-code';

/** An error returned by a remote call; `grpcCode` is the gRPC status code. */
export class RemoteCallError extends Error {
  override readonly name = 'RemoteCallError';
  constructor(
    message: string,
    readonly grpcCode: status,
    /** 'NotFound' for a missing object, 'Refused' for a request the store will never take, so callers can test `err.code` as for a local store. */
    readonly code: string | undefined,
    /** True when the plugin's own code answered with this error (not a transport failure). */
    readonly fromPlugin = false,
  ) {
    super(message);
  }
}

function pluginTrailer(): Metadata {
  const md = new Metadata();
  md.set(ERROR_ORIGIN_KEY, 'plugin');
  return md;
}

function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Server side: the status a plugin error is sent as. */
export function toServiceError(err: unknown): Partial<ServiceError> {
  if (err instanceof StatusError) return { code: err.grpcCode, details: err.message, metadata: pluginTrailer() };
  const code = errorCode(err) === 'NotFound' ? status.NOT_FOUND : status.UNKNOWN;
  const metadata = pluginTrailer();
  if (errorCode(err) === 'Refused') metadata.set(ERROR_CODE_KEY, 'Refused');
  return { code, details: messageOf(err), metadata };
}

/** Thrown inside server adapters to answer with a specific status (bad request, unknown plugin). */
export class StatusError extends Error {
  constructor(
    readonly grpcCode: status,
    message: string,
  ) {
    super(message);
  }
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number';
}

/** Client side: the Error a failed call rejects with. */
export function fromServiceError(err: unknown): RemoteCallError {
  if (err instanceof RemoteCallError) return err;
  if (isServiceError(err)) {
    const details = err.details !== '' ? err.details : err.message;
    const fromPlugin = err.metadata instanceof Metadata && err.metadata.get(ERROR_ORIGIN_KEY)[0] === 'plugin';
    const refused = fromPlugin && err.metadata.get(ERROR_CODE_KEY)[0] === 'Refused';
    return new RemoteCallError(details, err.code, err.code === status.NOT_FOUND ? 'NotFound' : refused ? 'Refused' : undefined, fromPlugin);
  }
  return new RemoteCallError(messageOf(err), status.UNKNOWN, undefined);
}
