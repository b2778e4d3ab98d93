// Riding out an unreachable Kubernetes API. A request that fails because the apiserver itself does
// not answer (connection refused or reset, a timeout, 429, or a 5xx while /version fails too) is
// retried with backoff until the API answers again or the outage has lasted the client's outage
// timeout; then it fails naming the outage. The clock is the request's, from its first failure: a
// run that failed for an outage still gets its final status patch through once the API returns
// within another timeout (a clock shared by the client would fail that patch at once).
import { formatDuration } from '../util/duration.js';
import { API_UNREACHABLE, KubeError } from './errors.js';

/** Socket errors raised before any byte of the request could reach the server. */
const UNSENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * How a failed request relates to an outage. `unsent`: it provably never reached the server (a retry
 * cannot apply it twice). `unknown`: it may have been applied (the connection broke or timed out
 * mid-request). `status`: the server answered 5xx, which is an outage only when the apiserver's own
 * /version fails as well (an aggregated API or a webhook that is down is not). undefined: no outage.
 */
export type OutageFailure = 'unsent' | 'unknown' | 'status';

export function classifyFailure(err: unknown): OutageFailure | undefined {
  if (!(err instanceof KubeError)) return undefined;
  if (err.status === 0) return UNSENT_CODES.has(err.reason) ? 'unsent' : 'unknown';
  // The max-in-flight filter rejects with 429 before the request is processed.
  if (err.status === 429) return 'unsent';
  if (err.status >= 500) return 'status';
  return undefined;
}

/** The error a request ends with when the outage outlasted the timeout. */
export function outageError(last: KubeError, timeoutMs: number): KubeError {
  // No cause: the last error's text is in the message already, and error printers append causes.
  return new KubeError(last.target, 0, API_UNREACHABLE, `the Kubernetes API was unreachable for ${formatDuration(timeoutMs)}: ${last.apiMessage}`);
}

/** Whether `err` is a request that gave up on an outage (outageError): the API is gone, not one object. */
export function isApiUnreachable(err: unknown): boolean {
  return err instanceof KubeError && err.reason === API_UNREACHABLE;
}
