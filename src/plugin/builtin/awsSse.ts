// Server-side encryption of stowage.dev/aws, with Velero's config keys:
//   serverSideEncryption       AES256 (SSE-S3) or aws:kms (SSE-KMS)
//   kmsKeyId                   the KMS key for aws:kms; alone it means aws:kms, as in Velero
//   customerKeyEncryptionFile  path of a file holding a 32-byte key (SSE-C); the server's pod
//                              mounts it (a Secret), the plugin process reads it at Init
// What each request carries follows S3's rules: SSE-S3/KMS headers only on the requests that
// create an object (PutObject, CreateMultipartUpload: S3 answers 400 to them on reads and parts);
// SSE-C headers on every request that touches the object's data (creation, parts, completion,
// GetObject, HeadObject), since S3 keeps no copy of the key.
// The key never leaves this module's callers: messages name the file, never its bytes.
import fs from 'node:fs';
import type { ServerSideEncryption as SdkServerSideEncryption } from '@aws-sdk/client-s3';

/** SSE-C keys are AES-256 keys: exactly this many raw bytes. */
export const CUSTOMER_KEY_BYTES = 32;

export type ServerSideEncryption =
  | { kind: 'none' }
  | { kind: 'AES256' }
  | { kind: 'aws:kms'; kmsKeyId: string | undefined }
  | { kind: 'customer'; key: Buffer };

export const SSE_MODES = ['AES256', 'aws:kms'] as const;

/** Input fields of PutObject and CreateMultipartUpload that ask for encryption. */
export interface CreateEncryption {
  ServerSideEncryption?: SdkServerSideEncryption;
  SSEKMSKeyId?: string;
  SSECustomerAlgorithm?: string;
  SSECustomerKey?: string;
}

/** Input fields of UploadPart, CompleteMultipartUpload, GetObject and HeadObject for SSE-C. */
export interface CustomerKey {
  SSECustomerAlgorithm?: string;
  SSECustomerKey?: string;
}

const fail = (message: string): Error => new Error(`aws object store: ${message}`);

function readCustomerKey(file: string): Buffer {
  const unreadable = (err: unknown): Error => fail(`customerKeyEncryptionFile ${file} cannot be read (${(err as { code?: string }).code ?? 'unknown error'})`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    throw unreadable(err);
  }
  if (!stat.isFile()) throw fail(`customerKeyEncryptionFile ${file} is not a regular file`);
  // Checked before reading: a wrong path to a large file is not read into memory.
  if (stat.size !== CUSTOMER_KEY_BYTES) throw sizeError(file, stat.size);
  let key: Buffer;
  try {
    key = fs.readFileSync(file);
  } catch (err) {
    throw unreadable(err);
  }
  if (key.length !== CUSTOMER_KEY_BYTES) throw sizeError(file, key.length);
  return key;
}

function sizeError(file: string, size: number): Error {
  return fail(
    `customerKeyEncryptionFile ${file} holds ${size} bytes; an SSE-C key is exactly ${CUSTOMER_KEY_BYTES} raw bytes ` +
      '(e.g. head -c 32 /dev/urandom > key; no trailing newline, not base64)',
  );
}

/**
 * The encryption the config asks for, or an error naming the keys at fault. `endpoint` is the
 * s3Url (undefined: AWS itself, over https).
 */
export function parseServerSideEncryption(config: Record<string, string>, endpoint: string | undefined): ServerSideEncryption {
  const nonEmpty = (k: string): string | undefined => (config[k] !== undefined && config[k] !== '' ? config[k] : undefined);
  const mode = nonEmpty('serverSideEncryption');
  const kmsKeyId = nonEmpty('kmsKeyId');
  const keyFile = nonEmpty('customerKeyEncryptionFile');
  if (mode !== undefined && !(SSE_MODES as readonly string[]).includes(mode)) {
    throw fail(`serverSideEncryption must be ${SSE_MODES.join(' or ')}, not ${JSON.stringify(mode)} (for SSE-C give customerKeyEncryptionFile instead)`);
  }
  if (keyFile !== undefined) {
    if (mode !== undefined) throw fail(`customerKeyEncryptionFile (SSE-C) cannot be combined with serverSideEncryption ${mode}: an object has one kind of server-side encryption`);
    if (kmsKeyId !== undefined) throw fail('customerKeyEncryptionFile (SSE-C) cannot be combined with kmsKeyId: an object has one kind of server-side encryption');
    if (endpoint !== undefined && new URL(endpoint).protocol !== 'https:') {
      throw fail('customerKeyEncryptionFile (SSE-C) needs an https:// s3Url: the key travels in the headers of every request, and S3 refuses SSE-C over plain HTTP');
    }
    return { kind: 'customer', key: readCustomerKey(keyFile) };
  }
  if (kmsKeyId !== undefined) {
    if (mode === 'AES256') throw fail('kmsKeyId needs serverSideEncryption aws:kms (or no serverSideEncryption, which then means aws:kms), not AES256');
    return { kind: 'aws:kms', kmsKeyId };
  }
  if (mode === 'AES256') return { kind: 'AES256' };
  if (mode === 'aws:kms') return { kind: 'aws:kms', kmsKeyId: undefined };
  return { kind: 'none' };
}

/** What a request creating an object (PutObject, CreateMultipartUpload) adds to its input. */
export function createEncryption(sse: ServerSideEncryption): CreateEncryption {
  switch (sse.kind) {
    case 'none':
      return {};
    case 'AES256':
      return { ServerSideEncryption: 'AES256' };
    case 'aws:kms':
      return { ServerSideEncryption: 'aws:kms', ...(sse.kmsKeyId !== undefined ? { SSEKMSKeyId: sse.kmsKeyId } : {}) };
    case 'customer':
      return customerKey(sse);
  }
}

/**
 * What every other request on an object's data adds: the SSE-C key (the SDK sends it base64 with
 * its MD5), nothing for the other modes.
 */
export function customerKey(sse: ServerSideEncryption): CustomerKey {
  if (sse.kind !== 'customer') return {};
  return { SSECustomerAlgorithm: 'AES256', SSECustomerKey: sse.key.toString('base64') };
}

/** For the Init log line: the mode, never the key. */
export function describeEncryption(sse: ServerSideEncryption): string {
  if (sse.kind === 'customer') return 'SSE-C';
  if (sse.kind === 'aws:kms') return sse.kmsKeyId !== undefined ? 'aws:kms (given key)' : 'aws:kms (default key)';
  return sse.kind;
}
