// The run a call belongs to travels in gRPC metadata, so the plugin can stamp it on its log lines
// and the host can route those lines into that run's own log.
import { Metadata } from '@grpc/grpc-js';
import type { RunIdentity } from '../api/index.js';

export const RUN_KIND_KEY = 'stowage-run-kind';
export const RUN_NAMESPACE_KEY = 'stowage-run-namespace';
export const RUN_NAME_KEY = 'stowage-run-name';

/** Metadata carrying `run`, or empty metadata for calls made on behalf of no run. */
export function runMetadata(run: RunIdentity | undefined): Metadata {
  const md = new Metadata();
  if (run !== undefined) {
    md.set(RUN_KIND_KEY, run.kind);
    md.set(RUN_NAMESPACE_KEY, run.namespace);
    md.set(RUN_NAME_KEY, run.name);
  }
  return md;
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
