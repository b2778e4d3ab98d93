// The host's KeyManager. Wrapping and unwrapping have no side effects, so both are retried on a new
// process (Init replayed) when the old one died mid-call. Every failure rejects with a
// KeyUnavailableError: the plugin's refusals keep their reason ('unknown-key', 'wrong-key') and
// message; a crash, a deadline or any other plugin error is 'key-manager', naming plugin and method.
import { DATA_KEY_BYTES, KeyUnavailableError, type KeyManager, type PluginConfig } from '../api/index.js';
import { keyManagerUnwrap, keyManagerWrap, type CallContext, type InstanceRef } from '../grpc/index.js';
import { callPlugin, type CallPolicy, type CallSite } from './call.js';
import type { PluginInstance } from './instances.js';
import type { Live } from './restartable.js';

/** `err` as a KeyUnavailableError: refusals and this module's own checks pass through, the rest is 'key-manager'. */
export function asKeyUnavailable(err: unknown): KeyUnavailableError {
  if (err instanceof KeyUnavailableError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new KeyUnavailableError('key-manager', message, { cause: err });
}

export function remoteKeyManager(
  site: CallSite,
  instance: () => PluginInstance,
  reinit: (config: PluginConfig) => Promise<void>,
  policy: CallPolicy,
): KeyManager {
  const call = async <T>(method: string, op: (live: Live, ctx: CallContext, r: InstanceRef) => Promise<T>): Promise<T> => {
    try {
      return await callPlugin(site, method, policy, async (live, ctx) => {
        const inst = instance();
        return op(live, ctx, { plugin: inst.plugin, instanceId: await inst.idOn(live, ctx) });
      });
    } catch (err) {
      throw asKeyUnavailable(err);
    }
  };
  return {
    init: async (config) => {
      try {
        await reinit(config);
      } catch (err) {
        throw asKeyUnavailable(err);
      }
    },
    wrapKey: (plaintext, context) => call('WrapKey', (l, c, r) => keyManagerWrap(l.conn, c, r, plaintext, context)),
    unwrapKey: (keyId, ciphertext, context) =>
      call('UnwrapKey', async (l, c, r) => {
        let key: Buffer;
        try {
          key = await keyManagerUnwrap(l.conn, c, r, keyId, ciphertext, context);
        } catch (err) {
          if (err instanceof KeyUnavailableError && err.reason !== 'key-manager') {
            throw new KeyUnavailableError(err.reason, `KeyManager ${site.plugin} cannot unwrap the data key with key "${keyId}": ${err.message}`);
          }
          throw err;
        }
        if (key.length !== DATA_KEY_BYTES) {
          throw new KeyUnavailableError('key-manager', `KeyManager ${site.plugin} unwrapped key "${keyId}" to ${key.length} bytes, not a ${DATA_KEY_BYTES}-byte data key`);
        }
        return key;
      }),
  };
}
