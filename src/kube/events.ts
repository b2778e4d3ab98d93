// core/v1 Events on our custom resources, so `kubectl describe backup x` tells the story. Repeats of
// the same event within a window bump `count` on the existing Event instead of adding new ones,
// as client-go's recorder does. Recording never throws: an event is not worth failing a backup.
import os from 'node:os';
import crypto from 'node:crypto';
import type { DynamicClient } from './client.js';
import { isNotFound } from './errors.js';
import type { KubeObject } from './resources.js';
import { CORE } from './wellKnown.js';

export type EventType = 'Normal' | 'Warning';

/** What an Event points at; any object read from the apiserver qualifies. */
export type InvolvedObject = Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>;

export interface EventRecorderOptions {
  /** `source.component` / `reportingComponent`. Default 'stowage'. */
  component?: string;
  /** `source.host` / `reportingInstance`. Default os.hostname(). */
  host?: string;
  /** Repeats within this window are merged. Default 10 minutes. */
  windowMs?: number;
  /** Told when an event could not be recorded (RBAC, apiserver down). */
  onError?: (err: unknown) => void;
  now?: () => Date;
}

export interface EventRecorder {
  event(obj: InvolvedObject, type: EventType, reason: string, message: string): Promise<void>;
}

const MAX_MESSAGE = 1024;
const MAX_CACHE = 1024;

/** RFC 3339 without fractional seconds, the form metav1.Time writes. */
function stamp(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

export function createEventRecorder(client: DynamicClient, opts: EventRecorderOptions = {}): EventRecorder {
  const component = opts.component ?? 'stowage';
  const host = opts.host ?? os.hostname();
  const windowMs = opts.windowMs ?? 10 * 60_000;
  const now = opts.now ?? (() => new Date());
  const seen = new Map<string, { name: string; namespace: string; count: number; last: number }>();

  return {
    async event(obj, type, reason, message) {
      const md = obj.metadata ?? {};
      const namespace = md.namespace || 'default';
      const msg = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
      const key = `${md.uid ?? `${namespace}/${obj.kind}/${md.name}`}\n${type}\n${reason}\n${msg}`;
      const t = now();
      try {
        const prev = seen.get(key);
        if (prev !== undefined && t.getTime() - prev.last < windowMs) {
          try {
            await client.patch(CORE.events, prev.namespace, prev.name, { count: prev.count + 1, lastTimestamp: stamp(t) }, 'merge');
            prev.count += 1;
            prev.last = t.getTime();
            return;
          } catch (err) {
            if (!isNotFound(err)) throw err;
            seen.delete(key);
          }
        }
        // An object name may use all 253 characters an Event's name may have: cut it to fit the suffix.
        const base = (md.name ?? 'object').slice(0, 253 - 17).replace(/[-.]+$/, '');
        const name = `${base}.${crypto.randomBytes(8).toString('hex')}`;
        await client.create(CORE.events, namespace, {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name, namespace },
          involvedObject: {
            apiVersion: obj.apiVersion,
            kind: obj.kind,
            name: md.name,
            namespace: md.namespace,
            uid: md.uid,
            resourceVersion: md.resourceVersion,
          },
          reason,
          message: msg,
          type,
          source: { component, host },
          reportingComponent: component,
          reportingInstance: host,
          firstTimestamp: stamp(t),
          lastTimestamp: stamp(t),
          count: 1,
        });
        if (seen.size >= MAX_CACHE) {
          const oldest = seen.keys().next();
          if (oldest.done !== true) seen.delete(oldest.value);
        }
        seen.set(key, { name, namespace, count: 1, last: t.getTime() });
      } catch (err) {
        opts.onError?.(err);
      }
    },
  };
}

const defaultRecorders = new WeakMap<DynamicClient, EventRecorder>();

/** Records an event through a default recorder kept per client (errors are dropped; use createEventRecorder to see them). */
export function recordEvent(client: DynamicClient, involvedObject: InvolvedObject, type: EventType, reason: string, message: string): Promise<void> {
  let rec = defaultRecorders.get(client);
  if (rec === undefined) {
    rec = createEventRecorder(client);
    defaultRecorders.set(client, rec);
  }
  return rec.event(involvedObject, type, reason, message);
}
