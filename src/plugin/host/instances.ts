// Stateful plugins (ObjectStore, VolumeSnapshotter, KeyManager) are instantiated per configuration. An
// instance remembers its config and the id Init returned on each process generation, so after a
// restart Init is replayed and later calls carry the new id.
import type { PluginConfig } from '../api/index.js';
import type { CallContext, PluginConnection } from '../grpc/index.js';
import type { Live } from './restartable.js';

export type StatefulKind = 'ObjectStore' | 'VolumeSnapshotter' | 'KeyManager';
export type InitCall = (conn: PluginConnection, ctx: CallContext, plugin: string, config: PluginConfig) => Promise<string>;

export class PluginInstance {
  /** Handles currently using this instance; only those instances are replayed eagerly on restart. */
  refs = 0;
  /** Successful Init calls, across all generations (1 + replays). */
  inits = 0;
  private readonly ids = new Map<number, Promise<string>>();

  constructor(
    readonly kind: StatefulKind,
    readonly plugin: string,
    readonly config: Readonly<PluginConfig>,
    private readonly init: InitCall,
  ) {}

  /** The instance id on `live`, calling Init there first when this generation has not seen it. */
  idOn(live: Live, ctx: CallContext): Promise<string> {
    let id = this.ids.get(live.generation);
    if (id === undefined) {
      for (const gen of this.ids.keys()) if (gen < live.generation) this.ids.delete(gen);
      id = this.init(live.conn, ctx, this.plugin, { ...this.config });
      this.ids.set(live.generation, id);
      id.then(
        () => {
          this.inits++;
        },
        () => {
          if (this.ids.get(live.generation) === id) this.ids.delete(live.generation);
        },
      );
    }
    return id;
  }
}

/** Identity of an instance: kind, plugin, and the config with keys sorted. Never logged (may hold credentials). */
export function instanceKey(kind: StatefulKind, plugin: string, config: PluginConfig): string {
  const sorted = Object.keys(config)
    .sort()
    .map((k) => [k, config[k]]);
  return JSON.stringify([kind, plugin, sorted]);
}
