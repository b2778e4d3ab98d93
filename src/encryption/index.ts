export {
  CHUNKED_ALGORITHM, DATA_KEY_BYTES, DEFAULT_CHUNK_SIZE, decryptBuffer, decryptStream, encryptBuffer, encryptStream, looksEncrypted, newDataKey,
  type DecryptOptions, type EncryptOptions, type Source,
} from './chunked.js';
export { backupArtifactContext, dataKeyContext, restoreArtifactContext, type BackupArtifact, type RestoreArtifact } from './context.js';
export { DecryptionError, KeyUnavailableError } from './errors.js';
export { parseKeyMaterial, SECRET_KEY_MANAGER, secretKeyManager, secretKeyProblems, type SecretKeys } from './secretKeys.js';
