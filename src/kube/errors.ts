// One error type for every apiserver failure. Its message names the verb, the resource, the
// namespace and the object, then quotes the apiserver, so an RBAC 403 says which permission is missing.

/** The metav1.Status body the apiserver returns with errors. */
export type Status = {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; group?: string; kind?: string; causes?: { reason?: string; message?: string; field?: string }[] };
};

export interface RequestTarget {
  verb: string;
  /** Plural resource, with its group when it has one (`deployments.apps`), or a raw path. */
  resource: string;
  namespace?: string | undefined;
  name?: string | undefined;
}

export class KubeError extends Error {
  override readonly name = 'KubeError';
  /** HTTP status code; 0 when no response arrived (connection refused, reset, timeout). */
  readonly status: number;
  /** The apiserver's reason (`NotFound`, `Forbidden`, `Conflict`, `Expired`, ...), or a transport reason. */
  readonly reason: string;
  /** The apiserver's own message, or the transport error's. */
  readonly apiMessage: string;
  readonly target: RequestTarget;
  readonly details: Status['details'];

  constructor(target: RequestTarget, status: number, reason: string, apiMessage: string, details?: Status['details'], cause?: unknown) {
    super(`${describeTarget(target)}: ${apiMessage}${status > 0 ? ` (${status} ${reason})` : ''}`, cause === undefined ? undefined : { cause });
    this.status = status;
    this.reason = reason;
    this.apiMessage = apiMessage;
    this.target = target;
    this.details = details;
  }
}

export function describeTarget(t: RequestTarget): string {
  let s = `${t.verb} ${t.resource}`;
  if (t.name !== undefined && t.name !== '') s += ` "${t.name}"`;
  if (t.namespace !== undefined && t.namespace !== '') s += ` in namespace "${t.namespace}"`;
  return s;
}

const REASON_BY_STATUS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** Builds a KubeError from an HTTP response body, which is normally a metav1.Status. */
export function errorFromResponse(target: RequestTarget, status: number, body: string): KubeError {
  let parsed: Status | undefined;
  try {
    const v: unknown = JSON.parse(body);
    if (typeof v === 'object' && v !== null) parsed = v as Status;
  } catch {
    parsed = undefined;
  }
  const reason = parsed?.reason || REASON_BY_STATUS[status] || 'Unknown';
  const text = parsed?.message || body.trim().slice(0, 500) || `HTTP ${status}`;
  return new KubeError(target, status, reason, text, parsed?.details);
}

export function errorFromStatus(target: RequestTarget, status: Status): KubeError {
  const code = status.code ?? 500;
  return new KubeError(target, code, status.reason || REASON_BY_STATUS[code] || 'Unknown', status.message || `HTTP ${code}`, status.details);
}

function hasStatus(err: unknown, code: number): boolean {
  return err instanceof KubeError && err.status === code;
}

export const isNotFound = (err: unknown): boolean => hasStatus(err, 404);
export const isConflict = (err: unknown): boolean => hasStatus(err, 409) && (err as KubeError).reason !== 'AlreadyExists';
export const isAlreadyExists = (err: unknown): boolean => err instanceof KubeError && err.status === 409 && err.reason === 'AlreadyExists';
export const isForbidden = (err: unknown): boolean => hasStatus(err, 403);
export const isGone = (err: unknown): boolean => hasStatus(err, 410);
export const isInvalid = (err: unknown): boolean => hasStatus(err, 422);
/** Connection-level failures (no HTTP response) and server-side 5xx/429 that a retry may cure. */
/** The reason of a request that gave up on an outage after --api-outage-timeout (outage.ts). */
export const API_UNREACHABLE = 'APIUnreachable';

// Not a request that already waited out an outage: retrying that waits it out again.
export const isTransient = (err: unknown): boolean =>
  err instanceof KubeError && err.reason !== API_UNREACHABLE && (err.status === 0 || err.status === 429 || err.status >= 500);
