import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAwsConfig } from './awsConfig.js';
import { createEncryption, customerKey, describeEncryption, parseServerSideEncryption } from './awsSse.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-sse-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A key file whose bytes are recognisable in any message that leaks them. */
function keyFile(name: string, bytes: number): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, Buffer.alloc(bytes, 'K'), { mode: 0o600 });
  return p;
}

const HTTPS = 'https://s3.example.com';

describe('parseServerSideEncryption', () => {
  it('reads each mode with Velero\'s keys; kmsKeyId alone means aws:kms, as in Velero', () => {
    expect(parseServerSideEncryption({}, undefined)).toEqual({ kind: 'none' });
    expect(parseServerSideEncryption({ serverSideEncryption: '' }, undefined)).toEqual({ kind: 'none' });
    expect(parseServerSideEncryption({ serverSideEncryption: 'AES256' }, undefined)).toEqual({ kind: 'AES256' });
    expect(parseServerSideEncryption({ serverSideEncryption: 'aws:kms' }, undefined)).toEqual({ kind: 'aws:kms', kmsKeyId: undefined });
    expect(parseServerSideEncryption({ serverSideEncryption: 'aws:kms', kmsKeyId: 'k1' }, undefined)).toEqual({ kind: 'aws:kms', kmsKeyId: 'k1' });
    expect(parseServerSideEncryption({ kmsKeyId: 'alias/x' }, undefined)).toEqual({ kind: 'aws:kms', kmsKeyId: 'alias/x' });
    const sse = parseServerSideEncryption({ customerKeyEncryptionFile: keyFile('good', 32) }, HTTPS);
    expect(sse).toEqual({ kind: 'customer', key: Buffer.alloc(32, 'K') });
    // AWS itself (no s3Url) is reached over https.
    expect(parseServerSideEncryption({ customerKeyEncryptionFile: keyFile('good', 32) }, undefined).kind).toBe('customer');
  });

  it('refuses unknown modes and contradictory keys with the keys named', () => {
    expect(() => parseServerSideEncryption({ serverSideEncryption: 'aes256' }, undefined)).toThrow('aws object store: serverSideEncryption must be AES256 or aws:kms, not "aes256"');
    expect(() => parseServerSideEncryption({ serverSideEncryption: 'aws:kms:dsse' }, undefined)).toThrow('serverSideEncryption must be AES256 or aws:kms');
    expect(() => parseServerSideEncryption({ serverSideEncryption: 'AES256', kmsKeyId: 'k' }, undefined)).toThrow('kmsKeyId needs serverSideEncryption aws:kms (or no serverSideEncryption, which then means aws:kms), not AES256');
    const good = keyFile('good', 32);
    expect(() => parseServerSideEncryption({ customerKeyEncryptionFile: good, serverSideEncryption: 'AES256' }, HTTPS)).toThrow('customerKeyEncryptionFile (SSE-C) cannot be combined with serverSideEncryption AES256');
    expect(() => parseServerSideEncryption({ customerKeyEncryptionFile: good, kmsKeyId: 'k' }, HTTPS)).toThrow('customerKeyEncryptionFile (SSE-C) cannot be combined with kmsKeyId');
    expect(() => parseServerSideEncryption({ customerKeyEncryptionFile: good }, 'http://minio:9000')).toThrow('customerKeyEncryptionFile (SSE-C) needs an https:// s3Url');
  });

  it('refuses a key file that is missing, not a file, or not exactly 32 bytes, naming the file and never its bytes', () => {
    const cases: [string, string][] = [
      [path.join(dir, 'absent'), `customerKeyEncryptionFile ${path.join(dir, 'absent')} cannot be read (ENOENT)`],
      [dir, `customerKeyEncryptionFile ${dir} is not a regular file`],
      [keyFile('short', 31), `customerKeyEncryptionFile ${path.join(dir, 'short')} holds 31 bytes; an SSE-C key is exactly 32 raw bytes`],
      [keyFile('newline', 33), 'holds 33 bytes; an SSE-C key is exactly 32 raw bytes (e.g. head -c 32 /dev/urandom > key; no trailing newline, not base64)'],
      [keyFile('base64', 44), 'holds 44 bytes'],
      [keyFile('empty', 0), 'holds 0 bytes'],
    ];
    for (const [file, message] of cases) {
      let err: unknown;
      try {
        parseServerSideEncryption({ customerKeyEncryptionFile: file }, HTTPS);
      } catch (e) {
        err = e;
      }
      expect(err, file).toBeInstanceOf(Error);
      expect((err as Error).message).toContain(message);
      expect((err as Error).message).not.toMatch(/KKKK/);
    }
  });

  it('is part of the Init config: the keys are known, and checked with the rest', () => {
    expect(parseAwsConfig({ serverSideEncryption: 'AES256' }).sse).toEqual({ kind: 'AES256' });
    expect(parseAwsConfig({ s3Url: HTTPS, customerKeyEncryptionFile: keyFile('good', 32) }).sse.kind).toBe('customer');
    expect(() => parseAwsConfig({ s3Url: 'http://127.0.0.1:9000', customerKeyEncryptionFile: keyFile('good', 32) })).toThrow('needs an https:// s3Url');
  });
});

describe('request parameters', () => {
  const key = Buffer.alloc(32, 7);

  it('asks for SSE-S3/KMS only when creating an object, and sends the SSE-C key on every request', () => {
    expect(createEncryption({ kind: 'none' })).toEqual({});
    expect(customerKey({ kind: 'none' })).toEqual({});
    expect(createEncryption({ kind: 'AES256' })).toEqual({ ServerSideEncryption: 'AES256' });
    expect(customerKey({ kind: 'AES256' })).toEqual({});
    expect(createEncryption({ kind: 'aws:kms', kmsKeyId: undefined })).toEqual({ ServerSideEncryption: 'aws:kms' });
    expect(createEncryption({ kind: 'aws:kms', kmsKeyId: 'k1' })).toEqual({ ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'k1' });
    expect(customerKey({ kind: 'aws:kms', kmsKeyId: 'k1' })).toEqual({});
    const ssec = { SSECustomerAlgorithm: 'AES256', SSECustomerKey: key.toString('base64') };
    expect(createEncryption({ kind: 'customer', key })).toEqual(ssec);
    expect(customerKey({ kind: 'customer', key })).toEqual(ssec);
  });

  it('describes the mode for the log without the key', () => {
    expect(describeEncryption({ kind: 'customer', key })).toBe('SSE-C');
    expect(describeEncryption({ kind: 'aws:kms', kmsKeyId: 'k' })).toBe('aws:kms (given key)');
    expect(describeEncryption({ kind: 'none' })).toBe('none');
  });
});
