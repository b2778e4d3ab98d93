// List-then-watch with an in-memory cache. Unlike client-node's informer it never gives up: any
// watch or list error restarts it after a capped exponential backoff, a 410 relists, and a relist
// reports what changed while it was away (deletes included). Handlers should only enqueue keys;
// the reconciler reads the current object from the cache or the apiserver.
import { isGone, type DynamicClient, type KubeObject, type ResourceRef } from '../kube/index.js';
import { backoff, sleep } from '../util/backoff.js';
import { errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from './logger.js';

export type InformerEventType = 'add' | 'update' | 'delete';

export interface InformerEvent<T> {
  type: InformerEventType;
  /** `namespace/name`, or `name` for cluster-scoped objects. */
  key: string;
  object: T;
  /** The cached object before an update. */
  old?: T;
}

export type InformerHandler<T> = (event: InformerEvent<T>) => void;

export interface InformerOptions {
  /** Watch one namespace; all namespaces when unset. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  pageSize?: number;
  /** Re-deliver every cached object as an update this often (0 = never). */
  resyncMs?: number;
  /** Restart backoff after errors. Default 250 ms doubling to 10 s. */
  backoff?: { baseMs: number; maxMs: number };
  logger?: Logger;
  /** Name used in log lines. Default the resource's group-resource. */
  name?: string;
}

export interface Informer<T extends KubeObject = KubeObject> {
  /** Starts listing and watching; calling it again does nothing. */
  start(): void;
  stop(): Promise<void>;
  /** True once the first list has filled the cache. */
  hasSynced(): boolean;
  /** Resolves when synced; rejects if the signal aborts or the informer stops first. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  /** Subscribes to changes; returns the unsubscribe function. Existing objects are replayed as adds. */
  addHandler(handler: InformerHandler<T>): () => void;
  get(key: string): T | undefined;
  list(): T[];
  keys(): string[];
  /** How many times the informer restarted after an error, and relisted (for tests and metrics). */
  stats(): { restarts: number; relists: number; lastError: string | undefined };
}

export function keyOf(obj: KubeObject): string {
  const md = obj.metadata ?? {};
  return md.namespace !== undefined && md.namespace !== '' ? `${md.namespace}/${md.name ?? ''}` : (md.name ?? '');
}

export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export function createInformer<T extends KubeObject = KubeObject>(client: DynamicClient, res: ResourceRef, opts: InformerOptions = {}): Informer<T> {
  const logger = opts.logger ?? silentLogger;
  const name = opts.name ?? (res.group === '' ? res.resource : `${res.resource}.${res.group}`);
  const bo = opts.backoff ?? { baseMs: 250, maxMs: 10_000 };
  const cache = new Map<string, T>();
  const handlers = new Set<InformerHandler<T>>();
  let synced = false;
  let started = false;
  let stopped = false;
  const ac = new AbortController();
  let loop: Promise<void> | undefined;
  let resync: NodeJS.Timeout | undefined;
  let syncWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  const stats = { restarts: 0, relists: 0, lastError: undefined as string | undefined };

  function emit(ev: InformerEvent<T>): void {
    for (const h of handlers) {
      try {
        h(ev);
      } catch (err) {
        logger.error(`informer ${name}: a handler threw`, { error: errorMessage(err) });
      }
    }
  }

  function upsert(obj: T): void {
    const key = keyOf(obj);
    const old = cache.get(key);
    cache.set(key, obj);
    if (old === undefined) emit({ type: 'add', key, object: obj });
    else emit({ type: 'update', key, object: obj, old });
  }

  /** Replaces the cache with a fresh list, reporting only what differs from what we had. */
  function replace(items: T[]): void {
    const fresh = new Map<string, T>();
    for (const obj of items) fresh.set(keyOf(obj), obj);
    for (const [key, old] of cache) {
      if (!fresh.has(key)) {
        cache.delete(key);
        emit({ type: 'delete', key, object: old });
      }
    }
    for (const [key, obj] of fresh) {
      const old = cache.get(key);
      if (old !== undefined && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) continue;
      cache.set(key, obj);
      emit(old === undefined ? { type: 'add', key, object: obj } : { type: 'update', key, object: obj, old });
    }
  }

  async function run(): Promise<void> {
    let resourceVersion: string | undefined;
    let attempt = 0;
    const sel = { namespace: opts.namespace, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
    while (!stopped) {
      try {
        if (resourceVersion === undefined) {
          const listed = await client.listAll<T>(res, { ...sel, pageSize: opts.pageSize ?? 500, signal: ac.signal });
          replace(listed.items);
          resourceVersion = listed.resourceVersion;
          if (!synced) {
            synced = true;
            for (const w of syncWaiters) w.resolve();
            syncWaiters = [];
          } else {
            stats.relists++;
          }
          logger.debug(`informer ${name}: listed ${listed.items.length} objects at resourceVersion ${resourceVersion}`);
        }
        for await (const ev of client.watch<T>(res, { ...sel, resourceVersion, allowWatchBookmarks: true, signal: ac.signal })) {
          attempt = 0;
          const rv = ev.object.metadata?.resourceVersion;
          if (rv !== undefined && rv !== '') resourceVersion = rv;
          if (ev.type === 'BOOKMARK') continue;
          if (ev.type === 'DELETED') {
            const key = keyOf(ev.object);
            cache.delete(key);
            emit({ type: 'delete', key, object: ev.object });
          } else {
            upsert(ev.object);
          }
        }
        // The server closed the watch (its timeout): carry on from the last version seen.
      } catch (err) {
        if (stopped) break;
        stats.lastError = errorMessage(err);
        if (isGone(err)) {
          // Our version was compacted away: relist, right away the first time.
          logger.info(`informer ${name}: resourceVersion ${resourceVersion ?? ''} expired; relisting`);
          resourceVersion = undefined;
          if (attempt === 0) {
            attempt++;
            continue;
          }
        }
        stats.restarts++;
        const delay = backoff(attempt++, bo);
        logger.warn(`informer ${name}: ${stats.lastError}; restarting in ${delay} ms`);
        try {
          await sleep(delay, ac.signal);
        } catch {
          break;
        }
      }
    }
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      loop = run();
      if (opts.resyncMs !== undefined && opts.resyncMs > 0) {
        resync = setInterval(() => {
          if (!synced) return;
          for (const [key, obj] of cache) emit({ type: 'update', key, object: obj, old: obj });
        }, opts.resyncMs);
        resync.unref?.();
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      ac.abort();
      if (resync !== undefined) clearInterval(resync);
      for (const w of syncWaiters) w.reject(new Error(`informer ${name} stopped before it synced`));
      syncWaiters = [];
      await loop;
    },
    hasSynced: () => synced,
    waitForSync(signal?: AbortSignal) {
      if (synced) return Promise.resolve();
      if (stopped) return Promise.reject(new Error(`informer ${name} is stopped`));
      return new Promise<void>((resolve, reject) => {
        const w = {
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          reject,
        };
        const onAbort = (): void => {
          syncWaiters = syncWaiters.filter((x) => x !== w);
          reject(signal?.reason ?? new Error('aborted'));
        };
        syncWaiters.push(w);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    addHandler(handler) {
      handlers.add(handler);
      for (const [key, obj] of cache) handler({ type: 'add', key, object: obj });
      return () => handlers.delete(handler);
    },
    get: (key) => cache.get(key),
    list: () => [...cache.values()],
    keys: () => [...cache.keys()],
    stats: () => ({ ...stats }),
  };
}
