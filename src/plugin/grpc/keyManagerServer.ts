// Plugin side of the KeyManager service. A KeyUnavailableError thrown by unwrapKey with reason
// 'unknown-key' or 'wrong-key' is sent as a refusal (an answer); anything else is an error status.
import type { KeyManager } from '../api/index.js';
import { KeyRefusalReason, type KeyManagerServer, type UnwrapKeyResponse } from '../../gen/stowage/plugin/v1/key_manager.js';
import { InstanceTable, unaryHandler, unknownPlugin, type Factory, type ServeHooks } from './serverCommon.js';

/**
 * The refusal `err` stands for, or undefined. Matched by name and reason rather than instanceof,
 * so a plugin bundling its own copy of the SDK is understood too.
 */
export function refusalOf(err: unknown): { reason: KeyRefusalReason; message: string } | undefined {
  if (!(err instanceof Error) || err.name !== 'KeyUnavailableError') return undefined;
  const reason = (err as { reason?: unknown }).reason;
  if (reason === 'unknown-key') return { reason: KeyRefusalReason.KEY_REFUSAL_REASON_UNKNOWN_KEY, message: err.message };
  if (reason === 'wrong-key') return { reason: KeyRefusalReason.KEY_REFUSAL_REASON_WRONG_KEY, message: err.message };
  return undefined;
}

export function keyManagerServer(factories: Record<string, Factory<KeyManager>>, hooks: ServeHooks): KeyManagerServer {
  const service = 'KeyManager';
  const instances = new InstanceTable<KeyManager>();
  const of = (ref: { plugin: string; instanceId: string } | undefined) => instances.get('KeyManager', ref);
  const pluginOf = (r: { instance?: { plugin: string } | undefined }) => r.instance?.plugin ?? '';
  return {
    init: unaryHandler(hooks, service, 'Init', (r) => r.plugin, async (req) => {
      const factory = factories[req.plugin];
      if (factory === undefined) throw unknownPlugin('KeyManager', req.plugin, Object.keys(factories));
      const km = await factory();
      await km.init({ ...req.config });
      return { instanceId: instances.add(req.plugin, km) };
    }),
    wrapKey: unaryHandler(hooks, service, 'WrapKey', pluginOf, async (req) => {
      const wrapped = await of(req.instance).wrapKey(req.plaintext, req.context);
      return { keyId: wrapped.keyId, ciphertext: Buffer.from(wrapped.ciphertext) };
    }),
    unwrapKey: unaryHandler(hooks, service, 'UnwrapKey', pluginOf, async (req): Promise<UnwrapKeyResponse> => {
      const km = of(req.instance);
      try {
        return { result: { $case: 'plaintext', plaintext: Buffer.from(await km.unwrapKey(req.keyId, req.ciphertext, req.context)) } };
      } catch (err) {
        const refusal = refusalOf(err);
        if (refusal === undefined) throw err;
        return { result: { $case: 'refusal', refusal } };
      }
    }),
  };
}
