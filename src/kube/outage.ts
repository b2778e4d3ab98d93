// Riding out an unreachable Kubernetes API. A request that fails because the apiserver itself does
// not answer (connection refused or reset, a timeout, 429, or a 5xx while /version fails too) is
// retried with backoff until the API answers again or the outage has lasted the client's outage
// timeout; then it fails naming the outage. The clock is the client's, not the request's: a run
// whose requests follow each other during one outage fails once the outage, not each request, is
// that old.
import { formatDuration } from '../util/duration.js';
import { KubeError } from './errors.js';

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

/** Tracks, for one client, since when the API has not answered. */
export class OutageClock {
  private downSince: number | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  /** The API answered: any outage is over. */
  up(): void {
    this.downSince = undefined;
  }

  /** A request failed for an outage; returns how long the API has been unreachable. */
  down(): number {
    const t = this.now();
    this.downSince ??= t;
    return t - this.downSince;
  }
}

/** The error a request ends with when the outage outlasted the timeout. */
export function outageError(last: KubeError, timeoutMs: number): KubeError {
  return new KubeError(last.target, 0, 'APIUnreachable', `the Kubernetes API was unreachable for ${formatDuration(timeoutMs)}: ${last.apiMessage}`, undefined, last);
}
