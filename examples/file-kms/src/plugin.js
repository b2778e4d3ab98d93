// Serves the example KeyManager. `servePlugins` does the protocol work: it checks that the Stowage
// server started this process, listens on a private unix socket, prints the handshake line, and
// exits when the server goes away. Each Init (one per location config) gets its own FileKms.
import { setTimeout as sleep } from 'node:timers/promises';
import { log, servePlugins } from 'stowage/plugin-sdk';
import { parseConfig } from './keys.js';
import { unwrap, wrap } from './kms.js';

export const FILE_KMS = 'example.com/file-kms';

export class FileKms {
  async init(config) {
    this.state = parseConfig(config);
    log.info('file-kms ready', { currentKeyId: this.state.currentKeyId, keyIds: [...this.state.keys.keys()].sort() });
  }

  async wrapKey(plaintext, context) {
    const { currentKeyId, keys, latencyMs } = this.state;
    // Lines logged during a call land in that backup's own log (ids and contexts only, never keys).
    log.info('wrapping data key', { keyId: currentKeyId, context });
    if (latencyMs > 0) await sleep(latencyMs);
    return { keyId: currentKeyId, ciphertext: wrap(keys, currentKeyId, plaintext, context) };
  }

  async unwrapKey(keyId, ciphertext, context) {
    log.info('unwrapping data key', { keyId, context });
    if (this.state.latencyMs > 0) await sleep(this.state.latencyMs);
    return unwrap(this.state.keys, keyId, ciphertext, context);
  }
}

export async function main() {
  await servePlugins({ keyManagers: { [FILE_KMS]: () => new FileKms() } });
}
