// The KeyManager adapters over a real gRPC server on a unix socket, in-process: what a plugin
// returns or throws arrives on the host side with the same meaning.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyUnavailableError, type KeyManager } from '../api/index.js';
import { connectPlugin, type PluginConnection } from './connection.js';
import { listPlugins } from './coreClient.js';
import { keyManagerInit, keyManagerUnwrap, keyManagerWrap } from './keyManagerClient.js';
import { refusalOf } from './keyManagerServer.js';
import { runMetadata } from './metadata.js';
import { startPluginServer, type RunningPluginServer } from './server.js';
import type { CallContext } from './unary.js';

const PLUGIN = 'example.com/xor';

/** A toy key manager: XOR with a one-byte key per id; context must match what wrap saw. */
function xorKeyManager(): KeyManager {
  let keys: Record<string, number> = {};
  let current = '';
  const xor = (b: Uint8Array, k: number): Buffer => Buffer.from(b.map((x) => x ^ k));
  return {
    init: (config) => {
      if (config.current === undefined) return Promise.reject(new Error('config has no "current"'));
      current = config.current;
      keys = Object.fromEntries(Object.entries(config).filter(([k]) => k !== 'current').map(([k, v]) => [k, Number(v)]));
      return Promise.resolve();
    },
    wrapKey: (plaintext, context) => Promise.resolve({ keyId: current, ciphertext: Buffer.concat([Buffer.from(`${context}|`), xor(plaintext, keys[current] ?? 0)]) }),
    unwrapKey: (keyId, ciphertext, context) => {
      const k = keys[keyId];
      if (keyId === 'broken') return Promise.reject(new KeyUnavailableError('key-manager', 'the KMS is unreachable'));
      if (keyId === 'crash') return Promise.reject(new Error('unexpected failure'));
      if (k === undefined) return Promise.reject(new KeyUnavailableError('unknown-key', `no key "${keyId}"`));
      const prefix = Buffer.from(`${context}|`);
      const ct = Buffer.from(ciphertext);
      if (!ct.subarray(0, prefix.length).equals(prefix)) return Promise.reject(new KeyUnavailableError('wrong-key', `does not open under "${keyId}"`));
      return Promise.resolve(xor(ct.subarray(prefix.length), k));
    },
  };
}

let dir: string;
let server: RunningPluginServer;
let conn: PluginConnection;
const ctx = (): CallContext => ({ metadata: runMetadata(undefined), deadline: new Date(Date.now() + 5000) });

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-km-'));
  const socket = path.join(dir, 's.sock');
  server = await startPluginServer({ keyManagers: { [PLUGIN]: xorKeyManager } }, { call: (_info, fn) => fn() }, socket, () => undefined);
  conn = connectPlugin(`unix:${socket}`);
});

afterAll(async () => {
  conn.close();
  await server.close(100);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('KeyManager over gRPC', () => {
  it('is listed with its kind', async () => {
    expect(await listPlugins(conn, ctx())).toEqual([{ kind: 'KeyManager', rawKind: 6, name: PLUGIN }]);
  });

  it('wraps and unwraps through an instance, with the key id the plugin chose', async () => {
    const id = await keyManagerInit(conn, ctx(), PLUGIN, { current: 'k2', k1: '7', k2: '9' });
    const ref = { plugin: PLUGIN, instanceId: id };
    const key = Buffer.alloc(32, 5);
    const wrapped = await keyManagerWrap(conn, ctx(), ref, key, 'backup/b1/data-key');
    expect(wrapped.keyId).toBe('k2');
    expect(await keyManagerUnwrap(conn, ctx(), ref, 'k2', wrapped.ciphertext, 'backup/b1/data-key')).toEqual(key);
  });

  it('brings an unknown key id and a wrong ciphertext back as refusals with the plugin reason and message', async () => {
    const ref = { plugin: PLUGIN, instanceId: await keyManagerInit(conn, ctx(), PLUGIN, { current: 'k1', k1: '7' }) };
    const wrapped = await keyManagerWrap(conn, ctx(), ref, Buffer.alloc(32, 1), 'backup/b1/data-key');
    const unknown = keyManagerUnwrap(conn, ctx(), ref, 'k9', wrapped.ciphertext, 'backup/b1/data-key');
    await expect(unknown).rejects.toBeInstanceOf(KeyUnavailableError);
    await expect(unknown).rejects.toMatchObject({ reason: 'unknown-key', message: 'no key "k9"' });
    await expect(keyManagerUnwrap(conn, ctx(), ref, 'k1', wrapped.ciphertext, 'backup/b2/data-key')).rejects.toMatchObject({
      reason: 'wrong-key',
      message: 'does not open under "k1"',
    });
  });

  it('sends other failures as errors from the plugin, not refusals', async () => {
    const ref = { plugin: PLUGIN, instanceId: await keyManagerInit(conn, ctx(), PLUGIN, { current: 'k1', k1: '7' }) };
    await expect(keyManagerUnwrap(conn, ctx(), ref, 'broken', Buffer.from('x'), 'c')).rejects.toMatchObject({
      name: 'RemoteCallError',
      message: 'the KMS is unreachable',
      fromPlugin: true,
    });
    await expect(keyManagerUnwrap(conn, ctx(), ref, 'crash', Buffer.from('x'), 'c')).rejects.toMatchObject({ name: 'RemoteCallError', message: 'unexpected failure' });
  });

  it('refuses Init of an unserved plugin and calls on an instance this process never created', async () => {
    await expect(keyManagerInit(conn, ctx(), 'example.com/nope', {})).rejects.toThrow(
      `this executable serves no KeyManager named "example.com/nope" (it serves: ${PLUGIN})`,
    );
    await expect(keyManagerInit(conn, ctx(), PLUGIN, {})).rejects.toThrow('config has no "current"');
    await expect(keyManagerWrap(conn, ctx(), { plugin: PLUGIN, instanceId: 'gone' }, Buffer.alloc(32), 'c')).rejects.toThrow(
      `KeyManager ${PLUGIN} has no instance "gone" in this process (Init was not called here)`,
    );
  });
});

describe('refusalOf', () => {
  it('takes unknown-key and wrong-key errors by name and reason, whichever copy of the class threw them', () => {
    const foreign = Object.assign(new Error('gone'), { name: 'KeyUnavailableError', reason: 'unknown-key' });
    expect(refusalOf(foreign)).toEqual({ reason: 1, message: 'gone' });
    expect(refusalOf(new KeyUnavailableError('wrong-key', 'altered'))).toEqual({ reason: 2, message: 'altered' });
    expect(refusalOf(new KeyUnavailableError('key-manager', 'down'))).toBeUndefined();
    expect(refusalOf(Object.assign(new Error('x'), { reason: 'unknown-key' }))).toBeUndefined();
    expect(refusalOf('unknown-key')).toBeUndefined();
  });
});
