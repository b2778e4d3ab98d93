// A run's lightweight handle on the plugin pool: dispenses plugins bound to the run's identity,
// records what it used, and holds references to the stateful instances it initialised (so they
// are replayed on a restart). Releasing it never stops a process.
import type {
  BackupItemAction,
  DeleteItemAction,
  KeyManager,
  ObjectStore,
  PluginConfig,
  PluginKind,
  RestoreItemAction,
  RunIdentity,
  VolumeSnapshotter,
} from '../api/index.js';
import { callPlugin, type CallPolicy, type CallSite, type RunCallOptions } from './call.js';
import type { PluginInstance, StatefulKind } from './instances.js';
import { runKey } from './logRouter.js';
import { remoteBackupItemAction, remoteDeleteItemAction, remoteRestoreItemAction, type Named } from './remoteActions.js';
import { asKeyUnavailable, remoteKeyManager } from './remoteKeyManager.js';
import { remoteObjectStore, type ObjectStorePolicies } from './remoteObjectStore.js';
import { remoteVolumeSnapshotter } from './remoteSnapshotter.js';

/** What a run uses; create with pool.handle(run, logger) and release in `finally`. */
export interface PluginHandle {
  readonly run: RunIdentity;
  /**
   * An initialised store for `config` (instances are shared per (plugin, config) across runs);
   * `name` may be an alias the pool knows (a location's provider, e.g. `aws`).
   */
  objectStore(name: string, config: PluginConfig): Promise<ObjectStore>;
  volumeSnapshotter(name: string, config: PluginConfig): Promise<VolumeSnapshotter>;
  /**
   * An initialised KeyManager plugin for `config` (a location's spec.encryption.keyManager). It and
   * its methods reject with a KeyUnavailableError only: 'unknown-key' or 'wrong-key' when the
   * plugin refuses an unwrap, 'key-manager' for anything else (no such plugin, Init failed, crash).
   */
  keyManager(name: string, config: PluginConfig): Promise<KeyManager>;
  /** Every registered action of the kind, sorted by name. */
  backupItemActions(): Named<BackupItemAction>[];
  restoreItemActions(): Named<RestoreItemAction>[];
  deleteItemActions(): Named<DeleteItemAction>[];
  backupItemAction(name: string): Named<BackupItemAction>;
  restoreItemAction(name: string): Named<RestoreItemAction>;
  deleteItemAction(name: string): Named<DeleteItemAction>;
  /** What this handle dispensed, as "Kind name" strings. */
  used(): string[];
  /** Ends the handle: its run's log routing and instance references. Never stops a process. */
  release(): void;
}

/** What a handle needs from the pool. */
export interface HandlePool {
  /** Names of the registered plugins of `kind`, sorted. */
  names(kind: PluginKind): string[];
  /** The registered plugin `name` means (itself, or what it is an alias of). */
  resolve(kind: PluginKind, name: string): string;
  /** A call site for the named plugin; throws when no such plugin is registered. */
  site(kind: PluginKind, name: string, run: RunIdentity, check: () => void): CallSite;
  /** The shared instance of a stateful plugin for `config`. */
  instance(kind: StatefulKind, name: string, config: PluginConfig): PluginInstance;
  /** Drops an instance nobody holds whose Init failed, so bad configs do not accumulate. */
  forget(inst: PluginInstance): void;
  readonly unary: CallPolicy;
  readonly objectStore: ObjectStorePolicies;
}

type ActionKind = 'BackupItemAction' | 'RestoreItemAction' | 'DeleteItemAction';

/** `options` is read at each call (see RunCallOptions): how the holder's calls are canceled and how long they wait out an outage. */
export function createHandle(pool: HandlePool, run: RunIdentity, unregister: () => void, options?: () => RunCallOptions): PluginHandle {
  const siteOf = (kind: PluginKind, name: string, check: () => void): CallSite => {
    const site = pool.site(kind, name, run, check);
    return options === undefined ? site : { ...site, options };
  };
  const used = new Set<string>();
  const held: PluginInstance[] = [];
  let released = false;
  const check = (): void => {
    if (released) throw new Error(`the plugin handle of ${runKey(run)} was already released`);
  };
  const hold = (inst: PluginInstance): void => {
    inst.refs++;
    held.push(inst);
  };
  const drop = (inst: PluginInstance): void => {
    const i = held.indexOf(inst);
    if (i < 0) return;
    held.splice(i, 1);
    inst.refs--;
  };

  /** Holds the instance for `config` and calls Init now, so a bad config fails here. */
  const acquireInstance = async (site: CallSite, kind: StatefulKind, name: string, config: PluginConfig): Promise<PluginInstance> => {
    const inst = pool.instance(kind, name, config);
    hold(inst);
    try {
      await callPlugin(site, 'Init', pool.unary, async (live, ctx) => {
        await inst.idOn(live, ctx);
      });
    } catch (err) {
      drop(inst);
      pool.forget(inst);
      throw err;
    }
    return inst;
  };

  const stateful = async <T>(
    kind: StatefulKind,
    alias: string,
    config: PluginConfig,
    make: (site: CallSite, current: () => PluginInstance, reinit: (c: PluginConfig) => Promise<void>) => T,
  ): Promise<T> => {
    check();
    const name = pool.resolve(kind, alias);
    const site = siteOf(kind, name, check);
    used.add(`${kind} ${name}`);
    let current = await acquireInstance(site, kind, name, config);
    // init() on a dispensed stateful plugin switches it to another config.
    const reinit = async (c: PluginConfig): Promise<void> => {
      check();
      const next = await acquireInstance(site, kind, name, c);
      drop(current);
      current = next;
    };
    return make(site, () => current, reinit);
  };

  const action = <T>(kind: ActionKind, name: string, make: (site: CallSite, policy: CallPolicy) => T): T => {
    check();
    const site = siteOf(kind, name, check);
    used.add(`${kind} ${name}`);
    return make(site, pool.unary);
  };

  return {
    run,
    objectStore: (name, config) =>
      stateful('ObjectStore', name, config, (site, instance, reinit) =>
        remoteObjectStore({ site, instance, reinit, policies: pool.objectStore }),
      ),
    volumeSnapshotter: (name, config) =>
      stateful('VolumeSnapshotter', name, config, (site, instance, reinit) => remoteVolumeSnapshotter(site, instance, reinit, pool.unary)),
    keyManager: (name, config) =>
      stateful('KeyManager', name, config, (site, instance, reinit) => remoteKeyManager(site, instance, reinit, pool.unary)).catch((err: unknown) => {
        throw asKeyUnavailable(err);
      }),
    backupItemAction: (name) => action('BackupItemAction', name, remoteBackupItemAction),
    restoreItemAction: (name) => action('RestoreItemAction', name, remoteRestoreItemAction),
    deleteItemAction: (name) => action('DeleteItemAction', name, remoteDeleteItemAction),
    backupItemActions: () => pool.names('BackupItemAction').map((n) => action('BackupItemAction', n, remoteBackupItemAction)),
    restoreItemActions: () => pool.names('RestoreItemAction').map((n) => action('RestoreItemAction', n, remoteRestoreItemAction)),
    deleteItemActions: () => pool.names('DeleteItemAction').map((n) => action('DeleteItemAction', n, remoteDeleteItemAction)),
    used: () => [...used].sort(),
    release: () => {
      if (released) return;
      released = true;
      for (const inst of held.splice(0)) inst.refs--;
      unregister();
    },
  };
}
