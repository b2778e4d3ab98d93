import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptBuffer, decryptStream, encryptBuffer, encryptStream, looksEncrypted, newDataKey } from './chunked.js';
import { DecryptionError } from './errors.js';

const CHUNK = 1024;
const SEALED = CHUNK + 16;
const HEADER = 28;
const what = 'the tarball of backup "b1"';

async function failure(p: Promise<unknown>): Promise<DecryptionError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(DecryptionError);
  return err as DecryptionError;
}

describe('chunked AES-256-GCM objects', () => {
  const key = newDataKey();
  const plain = crypto.randomBytes(CHUNK * 5 + 300);

  it('round-trips any size, streamed in odd pieces, and hides the plaintext', async () => {
    for (const n of [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, CHUNK * 3, plain.length]) {
      const src = plain.subarray(0, n);
      const pieces = async function* (): AsyncGenerator<Uint8Array> {
        for (let i = 0; i < src.length; i += 77) yield src.subarray(i, i + 77);
      };
      const parts: Buffer[] = [];
      for await (const p of encryptStream(pieces(), key, 'ctx', { chunkSize: CHUNK })) parts.push(p);
      const sealed = Buffer.concat(parts);
      expect(looksEncrypted(sealed)).toBe(true);
      expect(sealed.length).toBe(HEADER + Math.max(1, Math.ceil(n / CHUNK)) * 16 + n);
      const out: Buffer[] = [];
      for await (const p of decryptStream([sealed.subarray(0, 10), sealed.subarray(10)], key, 'ctx', { what })) out.push(p);
      expect(Buffer.concat(out).equals(src)).toBe(true);
    }
    const sealed = await encryptBuffer(plain, key, 'ctx', { chunkSize: CHUNK });
    expect(sealed.includes(plain.subarray(100, 132))).toBe(false);
  });

  it('names a flipped bit, a dropped chunk, swapped chunks, truncation, another context and a wrong key', async () => {
    const sealed = await encryptBuffer(plain, key, 'ctx', { chunkSize: CHUNK });
    const flipped = Buffer.from(sealed);
    flipped[HEADER + SEALED * 2 + 5] = (flipped[HEADER + SEALED * 2 + 5] as number) ^ 1;
    expect((await failure(decryptBuffer(flipped, key, 'ctx', { what }))).message)
      .toBe(`${what} fails authentication at chunk 2 (at byte ${HEADER + SEALED * 2}): it was altered, or the chunk comes from another backup`);

    const dropped = Buffer.concat([sealed.subarray(0, HEADER + SEALED), sealed.subarray(HEADER + SEALED * 2)]);
    const d = await failure(decryptBuffer(dropped, key, 'ctx', { what }));
    expect(d.reason).toBe('reordered');
    expect(d.message).toBe(`${what} has lost chunks: chunk 1 (at byte ${HEADER + SEALED}) holds chunk 2 (chunks were dropped or reordered)`);

    const swapped = Buffer.concat([sealed.subarray(0, HEADER), sealed.subarray(HEADER + SEALED, HEADER + SEALED * 2), sealed.subarray(HEADER, HEADER + SEALED), sealed.subarray(HEADER + SEALED * 2)]);
    expect((await failure(decryptBuffer(swapped, key, 'ctx', { what }))).reason).toBe('reordered');

    const atBoundary = sealed.subarray(0, HEADER + SEALED * 3);
    const t = await failure(decryptBuffer(atBoundary, key, 'ctx', { what }));
    expect(t.reason).toBe('truncated');
    expect(t.message).toBe(`${what} is truncated: it ends after chunk 2 (at byte ${HEADER + SEALED * 2}) without its final chunk`);
    expect((await failure(decryptBuffer(sealed.subarray(0, HEADER + SEALED * 3 + 100), key, 'ctx', { what }))).message).toContain('altered or truncated');
    expect((await failure(decryptBuffer(sealed.subarray(0, 20), key, 'ctx', { what }))).reason).toBe('truncated');

    const other = await encryptBuffer(plain, key, 'ctx', { chunkSize: CHUNK });
    const mixed = Buffer.concat([sealed.subarray(0, HEADER + SEALED), other.subarray(HEADER + SEALED, HEADER + SEALED * 2), sealed.subarray(HEADER + SEALED * 2)]);
    expect((await failure(decryptBuffer(mixed, key, 'ctx', { what }))).message).toContain('fails authentication at chunk 1');

    expect((await failure(decryptBuffer(sealed, key, 'other', { what }))).message)
      .toBe(`${what} fails authentication at chunk 0 (at byte ${HEADER}): it was altered, it belongs to another backup, or the data key is wrong`);
    expect((await failure(decryptBuffer(sealed, newDataKey(), 'ctx', { what }))).reason).toBe('tampered');
    expect((await failure(decryptBuffer(Buffer.concat([sealed, Buffer.from('x')]), key, 'ctx', { what }))).reason).toBe('tampered');
    expect((await failure(decryptBuffer(plain, key, 'ctx', { what }))).reason).toBe('not-encrypted');
    const badSize = Buffer.from(sealed);
    badSize.writeUInt32BE(1 << 30, 8);
    expect((await failure(decryptBuffer(badSize, key, 'ctx', { what }))).reason).toBe('malformed');
  });
});
