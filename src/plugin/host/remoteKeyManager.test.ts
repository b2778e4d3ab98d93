import { describe, expect, it } from 'vitest';
import { KeyUnavailableError } from '../api/index.js';
import { KeyUnavailableError as FromEncryption } from '../../encryption/index.js';
import { PluginCallError } from './errors.js';
import { asKeyUnavailable } from './remoteKeyManager.js';

describe('asKeyUnavailable', () => {
  it('keeps refusals as they are and makes every other failure a key-manager one, keeping the cause', () => {
    const refusal = new KeyUnavailableError('unknown-key', 'no key "k1"');
    expect(asKeyUnavailable(refusal)).toBe(refusal);
    const crash = new PluginCallError('KeyManager example.com/file-kms (executable /p/kms): UnwrapKey failed: the plugin process (pid 7) died', undefined);
    const mapped = asKeyUnavailable(crash);
    expect(mapped).toBeInstanceOf(KeyUnavailableError);
    expect(mapped).toMatchObject({ reason: 'key-manager', message: crash.message, cause: crash });
    expect(asKeyUnavailable('odd')).toMatchObject({ reason: 'key-manager', message: 'odd' });
  });

  it('is the class encryption/ exports, so callers catch one type', () => {
    expect(FromEncryption).toBe(KeyUnavailableError);
  });
});
