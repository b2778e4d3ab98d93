import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeyUnavailableError } from './errors.js';
import { parseKeyMaterial, secretKeyManager, secretKeyProblems, type SecretKeys } from './secretKeys.js';

const k1 = crypto.randomBytes(32);
const k2 = crypto.randomBytes(32);

async function refusal(p: Promise<unknown>): Promise<KeyUnavailableError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(KeyUnavailableError);
  return err as KeyUnavailableError;
}

describe('the Secret-backed key manager', () => {
  it('reads 256-bit keys as raw bytes, base64 or hex, and names bad entries without their values', () => {
    expect(parseKeyMaterial(k1)?.equals(k1)).toBe(true);
    expect(parseKeyMaterial(Buffer.from(`${k1.toString('base64')}\n`))?.equals(k1)).toBe(true);
    expect(parseKeyMaterial(Buffer.from(k1.toString('hex')))?.equals(k1)).toBe(true);
    expect(parseKeyMaterial(Buffer.from('too short'))).toBeUndefined();
    const keys: SecretKeys = { secret: 'stowage/kek', current: 'k3', data: { k1, bad: Buffer.from('hunter2') } };
    const problems = secretKeyProblems(keys);
    expect(problems).toEqual([
      'Secret stowage/kek has no key "k3" (it has "bad", "k1")',
      'key "bad" of Secret stowage/kek is not a 256-bit key: give 32 random bytes, or their base64 or hex (e.g. openssl rand -base64 32)',
    ]);
    expect(problems.join()).not.toContain('hunter2');
  });

  it('wraps with the current key, unwraps after rotation while the old key is listed, and refuses precisely', async () => {
    const dataKey = crypto.randomBytes(32);
    const before = secretKeyManager({ secret: 'stowage/kek', current: 'k1', data: { k1 } });
    const w = await before.wrapKey(dataKey, 'backup/b1/data-key');
    expect(w.keyId).toBe('k1');
    expect(Buffer.from(w.ciphertext).includes(dataKey)).toBe(false);

    const rotated = secretKeyManager({ secret: 'stowage/kek', current: 'k2', data: { k1, k2 } });
    expect(Buffer.from(await rotated.unwrapKey('k1', w.ciphertext, 'backup/b1/data-key')).equals(dataKey)).toBe(true);
    expect((await rotated.wrapKey(dataKey, 'backup/b2/data-key')).keyId).toBe('k2');

    const gone = secretKeyManager({ secret: 'stowage/kek', current: 'k2', data: { k2 } });
    const unknown = await refusal(gone.unwrapKey('k1', w.ciphertext, 'backup/b1/data-key'));
    expect(unknown.reason).toBe('unknown-key');
    expect(unknown.message).toBe('the data key is wrapped with key "k1", which Secret stowage/kek no longer lists (it lists "k2"); put that key back to read this backup');

    const replaced = secretKeyManager({ secret: 'stowage/kek', current: 'k1', data: { k1: k2 } });
    expect((await refusal(replaced.unwrapKey('k1', w.ciphertext, 'backup/b1/data-key'))).reason).toBe('wrong-key');
    const moved = await refusal(before.unwrapKey('k1', w.ciphertext, 'backup/other/data-key'));
    expect(moved.message).toContain('does not unwrap with key "k1" of Secret stowage/kek');
    expect(moved.message).not.toContain(k1.toString('base64'));
  });
});
