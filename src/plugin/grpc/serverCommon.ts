// Shared plumbing for the plugin-side service adapters: the per-call hook, unary handlers, and
// lookup of a plugin by name.
import { randomUUID } from 'node:crypto';
import { status, type Metadata, type handleUnaryCall } from '@grpc/grpc-js';
import type { PluginKind, RunIdentity } from '../api/index.js';
import { StatusError, toServiceError } from './errors.js';
import { outageWindowFromMetadata, runFromMetadata } from './metadata.js';

export interface CallInfo {
  service: string;
  method: string;
  /** The plugin the request names ('' for calls about the whole process). */
  plugin: string;
  run: RunIdentity | undefined;
  /** Aborted when the host cancels the call (its run was canceled, or it gave up waiting). */
  signal: AbortSignal;
  /** The call's own outage window, when the host gave it one (OUTAGE_WINDOW_KEY). */
  outageWindowMs?: number;
}

/** The CallInfo of a call, with a signal that aborts when the host cancels it. */
export function callInfo(
  call: { metadata: Metadata; on(event: 'cancelled', listener: () => void): unknown },
  service: string, method: string, plugin: string,
): CallInfo {
  const cancelled = new AbortController();
  call.on('cancelled', () => cancelled.abort(new StatusError(status.CANCELLED, `${service}.${method} was cancelled by the host`)));
  const window = outageWindowFromMetadata(call.metadata);
  return { service, method, plugin, run: runFromMetadata(call.metadata), signal: cancelled.signal, ...(window !== undefined ? { outageWindowMs: window } : {}) };
}

/** Wraps every call's implementation; the SDK binds the run identity to the plugin logger here. */
export interface ServeHooks {
  call<T>(info: CallInfo, fn: () => Promise<T>): Promise<T>;
}

export type Factory<T> = () => T | Promise<T>;

export function unaryHandler<Req, Res>(
  hooks: ServeHooks,
  service: string,
  method: string,
  pluginOf: (req: NoInfer<Req>) => string,
  impl: (req: Req) => Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const info = callInfo(call, service, method, pluginOf(call.request));
    hooks.call(info, () => impl(call.request)).then(
      (res) => callback(null, res),
      (err: unknown) => callback(toServiceError(err)),
    );
  };
}

export function unknownPlugin(kind: PluginKind, name: string, served: string[]): StatusError {
  const list = served.length > 0 ? served.join(', ') : 'none';
  return new StatusError(status.INVALID_ARGUMENT, `this executable serves no ${kind} named "${name}" (it serves: ${list})`);
}

/** Creates each named plugin once, on first use, and hands out the same object afterwards. */
export function dispenser<T>(kind: PluginKind, factories: Record<string, Factory<T>>): (name: string) => Promise<T> {
  const made = new Map<string, Promise<T>>();
  return (name) => {
    const factory = factories[name];
    if (factory === undefined) return Promise.reject(unknownPlugin(kind, name, Object.keys(factories)));
    let p = made.get(name);
    if (p === undefined) {
      p = Promise.resolve().then(factory);
      made.set(name, p);
      // A factory that failed is retried on the next call rather than failing forever.
      p.catch(() => made.delete(name));
    }
    return p;
  };
}

/** Instances of a stateful plugin, one per Init, addressed by the id Init returned. */
export class InstanceTable<T> {
  private readonly byId = new Map<string, { plugin: string; instance: T }>();

  add(plugin: string, instance: T): string {
    const id = randomUUID();
    this.byId.set(id, { plugin, instance });
    return id;
  }

  get(kind: PluginKind, ref: { plugin: string; instanceId: string } | undefined): T {
    if (ref === undefined) throw new StatusError(status.INVALID_ARGUMENT, `${kind} request names no instance`);
    const entry = this.byId.get(ref.instanceId);
    if (entry === undefined || entry.plugin !== ref.plugin) {
      throw new StatusError(
        status.FAILED_PRECONDITION,
        `${kind} ${ref.plugin} has no instance "${ref.instanceId}" in this process (Init was not called here)`,
      );
    }
    return entry.instance;
  }
}
