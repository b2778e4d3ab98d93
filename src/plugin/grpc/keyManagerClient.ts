// Host side of the KeyManager service. An unwrap the plugin refuses (unknown key id, ciphertext that
// does not open) arrives as an answer, not an error, and becomes a KeyUnavailableError carrying
// the plugin's reason and message.
import { KeyUnavailableError, type PluginConfig } from '../api/index.js';
import type { InstanceRef } from '../../gen/stowage/plugin/v1/common.js';
import { KeyRefusalReason } from '../../gen/stowage/plugin/v1/key_manager.js';
import type { PluginConnection } from './connection.js';
import { unary, type CallContext } from './unary.js';

export async function keyManagerInit(conn: PluginConnection, ctx: CallContext, plugin: string, config: PluginConfig): Promise<string> {
  const c = conn.keyManager;
  return (await unary(c.init.bind(c), { plugin, config: { ...config } }, ctx)).instanceId;
}

export async function keyManagerWrap(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  plaintext: Uint8Array,
  context: string,
): Promise<{ keyId: string; ciphertext: Buffer }> {
  const c = conn.keyManager;
  const res = await unary(c.wrapKey.bind(c), { instance: ref, plaintext: Buffer.from(plaintext), context }, ctx);
  if (res.keyId === '') throw new KeyUnavailableError('key-manager', `KeyManager ${ref.plugin} wrapped the data key but named no key id`);
  if (res.ciphertext.length === 0) throw new KeyUnavailableError('key-manager', `KeyManager ${ref.plugin} returned an empty wrapped key`);
  return { keyId: res.keyId, ciphertext: res.ciphertext };
}

const REFUSAL_REASONS: Partial<Record<KeyRefusalReason, 'unknown-key' | 'wrong-key'>> = {
  [KeyRefusalReason.KEY_REFUSAL_REASON_UNKNOWN_KEY]: 'unknown-key',
  [KeyRefusalReason.KEY_REFUSAL_REASON_WRONG_KEY]: 'wrong-key',
};

export async function keyManagerUnwrap(
  conn: PluginConnection,
  ctx: CallContext,
  ref: InstanceRef,
  keyId: string,
  ciphertext: Uint8Array,
  context: string,
): Promise<Buffer> {
  const c = conn.keyManager;
  const res = await unary(c.unwrapKey.bind(c), { instance: ref, keyId, ciphertext: Buffer.from(ciphertext), context }, ctx);
  const result = res.result;
  if (result?.$case === 'plaintext') return result.plaintext;
  if (result?.$case === 'refusal') {
    const reason = REFUSAL_REASONS[result.refusal.reason];
    if (reason === undefined) {
      throw new KeyUnavailableError('key-manager', `KeyManager ${ref.plugin} refused to unwrap with a reason this server does not know (${result.refusal.reason}): ${result.refusal.message}`);
    }
    throw new KeyUnavailableError(reason, result.refusal.message);
  }
  throw new KeyUnavailableError('key-manager', `KeyManager ${ref.plugin} answered UnwrapKey with neither a key nor a refusal`);
}
