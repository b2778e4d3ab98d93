// The run a call belongs to travels in gRPC metadata, so the plugin can stamp it on its log lines
// and the host can route those lines into that run's own log.
import { Metadata } from '@grpc/grpc-js';
import type { RunIdentity } from '../api/index.js';

export const RUN_KIND_KEY = 'stowage-run-kind';
export const RUN_NAMESPACE_KEY = 'stowage-run-namespace';
export const RUN_NAME_KEY = 'stowage-run-name';
/**
 * The longest outage this call may ride out, in ms, when shorter than the plugin's own window: a
 * canceled run's clean-up asks for 0, so a store that is down fails the call at once.
 */
export const OUTAGE_WINDOW_KEY = 'stowage-outage-window-ms';

/** Metadata carrying `run` (none for calls made on behalf of no run) and the call's outage window, if it has one. */
export function runMetadata(run: RunIdentity | undefined, outageWindowMs?: number): Metadata {
  const md = new Metadata();
  if (run !== undefined) {
    md.set(RUN_KIND_KEY, run.kind);
    md.set(RUN_NAMESPACE_KEY, run.namespace);
    md.set(RUN_NAME_KEY, run.name);
  }
  if (outageWindowMs !== undefined) md.set(OUTAGE_WINDOW_KEY, String(Math.max(0, Math.floor(outageWindowMs))));
  return md;
}

/** The call's own outage window (OUTAGE_WINDOW_KEY), or undefined when it has none. */
export function outageWindowFromMetadata(md: Metadata): number | undefined {
  const v = md.get(OUTAGE_WINDOW_KEY)[0];
  const ms = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
  return ms !== undefined && Number.isSafeInteger(ms) ? ms : undefined;
}

/** The run identity in `md`, or undefined when the call belongs to no run. */
export function runFromMetadata(md: Metadata): RunIdentity | undefined {
  const first = (key: string): string | undefined => {
    const v = md.get(key)[0];
    return typeof v === 'string' ? v : undefined;
  };
  const kind = first(RUN_KIND_KEY);
  const name = first(RUN_NAME_KEY);
  if (kind === undefined || name === undefined) return undefined;
  return { kind, namespace: first(RUN_NAMESPACE_KEY) ?? '', name };
}
