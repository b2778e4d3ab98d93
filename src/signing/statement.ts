// What a backup's signature covers, and the signature file (backups/<b>/<b>-signature.json):
//   { "kind": "StowageBackupSignature", "version": 1, "algorithm": "Ed25519" | "HMAC-SHA256",
//     "keyId": "...", "statement": { ... }, "signature": "<base64>" }
// The statement holds the SHA-256 of the manifest's JSON (item digests and the tarball's), of the
// resource list's JSON, the tarball's digest again (for readers), and what of stowage-backup.json
// steers sync and selection: the backup's name, the location it was written to, its phase, start
// time and labels (the schedule-name label picks a restore from a schedule). The signed bytes are a
// fixed prefix and the statement as canonical JSON (keys sorted), so the file's own formatting
// does not matter.
import crypto from 'node:crypto';
import { SignatureError } from './errors.js';
import { canSign, ED25519_ALGORITHM, HMAC_ALGORITHM, signingKeysOf, type SigningKey, type SigningKeys } from './keys.js';

export const SIGNATURE_KIND = 'StowageBackupSignature';
const SIGNATURE_VERSION = 1;
const DOMAIN = 'stowage.dev/backup-signature/v1\n';

export interface SignedStatement {
  backup: string;
  location: string;
  phase: string;
  startTimestamp: string;
  labels: Record<string, string>;
  manifestSha256: string;
  resourceListSha256: string;
  tarballSha256: string;
}

export interface SignatureFile {
  kind: typeof SIGNATURE_KIND;
  version: number;
  algorithm: string;
  keyId: string;
  statement: SignedStatement;
  signature: string;
}

/** JSON with object keys sorted at every level: the same statement always gives the same bytes. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function signedBytes(statement: SignedStatement): Buffer {
  return Buffer.from(DOMAIN + canonicalJson(statement), 'utf8');
}

function hmac(secret: Buffer, data: Buffer): Buffer {
  return crypto.createHmac('sha256', secret).update(data).digest();
}

/** The signature file for a statement, signed with `key` (which must be able to sign). */
export function signStatement(key: SigningKey, statement: SignedStatement): SignatureFile {
  const data = signedBytes(statement);
  let sig: Buffer;
  if (key.algorithm === HMAC_ALGORITHM) sig = hmac(key.secret, data);
  else if (key.privateKey !== undefined) sig = crypto.sign(null, data, key.privateKey);
  else throw new SignatureError('no-private-key', `key "${key.entry}" (${key.id}) is an Ed25519 public key: it verifies backups but cannot sign them`);
  return { kind: SIGNATURE_KIND, version: SIGNATURE_VERSION, algorithm: key.algorithm, keyId: key.id, statement, signature: sig.toString('base64') };
}

const HEX64 = /^[0-9a-f]{64}$/;

/** A signature file read from storage, checked for shape; throws a 'malformed' SignatureError naming what is wrong. */
export function parseSignatureFile(value: unknown, what: string): SignatureFile {
  const fail = (why: string): never => {
    throw new SignatureError('malformed', `${what} is malformed: ${why}`);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return fail('not an object');
  const f = value as Record<string, unknown>;
  if (f.kind !== SIGNATURE_KIND) fail(`kind is not ${SIGNATURE_KIND}`);
  if (f.version !== SIGNATURE_VERSION) fail(`version ${JSON.stringify(f.version)} is not ${SIGNATURE_VERSION}`);
  for (const k of ['algorithm', 'keyId', 'signature'] as const) if (typeof f[k] !== 'string' || f[k] === '') fail(`"${k}" is missing`);
  const s = f.statement as Record<string, unknown> | null;
  if (s === null || typeof s !== 'object' || Array.isArray(s)) return fail('"statement" is missing');
  for (const k of ['backup', 'location', 'phase', 'startTimestamp'] as const) if (typeof s[k] !== 'string') fail(`statement.${k} is missing`);
  for (const k of ['manifestSha256', 'resourceListSha256', 'tarballSha256'] as const) {
    if (typeof s[k] !== 'string' || !HEX64.test(s[k])) fail(`statement.${k} is not a SHA-256`);
  }
  const labels = s.labels;
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels) || Object.values(labels).some((v) => typeof v !== 'string')) fail('statement.labels is not a map of strings');
  return value as SignatureFile;
}

function keyFor(keys: SigningKeys, file: SignatureFile, what: string): SigningKey {
  const all = signingKeysOf(keys);
  const key = all.find((k) => k.id === file.keyId && k.algorithm === file.algorithm);
  if (key !== undefined) return key;
  if (file.algorithm !== HMAC_ALGORITHM && file.algorithm !== ED25519_ALGORITHM) {
    throw new SignatureError('unknown-key', `${what} is signed with ${JSON.stringify(file.algorithm)}, which this server does not verify (it verifies ${HMAC_ALGORITHM} and ${ED25519_ALGORITHM})`);
  }
  const listed = all.map((k) => `${k.algorithm} "${k.id}"`).join(', ');
  throw new SignatureError('unknown-key',
    `${what} is signed with ${file.algorithm} key "${file.keyId}", which Secret ${keys.secret} does not hold (it holds ${listed === '' ? 'no usable key' : listed}); add that key to verify it`);
}

/**
 * Verifies a signature file with the Secret's keys: returns the key that signed, or throws a
 * SignatureError ('unknown-key', 'bad-signature') naming the file and why.
 */
export function verifySignatureFile(keys: SigningKeys, file: SignatureFile, what: string): SigningKey {
  const key = keyFor(keys, file, what);
  const data = signedBytes(file.statement);
  const sig = Buffer.from(file.signature, 'base64');
  let ok: boolean;
  if (key.algorithm === HMAC_ALGORITHM) {
    const want = hmac(key.secret, data);
    ok = sig.length === want.length && crypto.timingSafeEqual(sig, want);
  } else {
    ok = crypto.verify(null, data, key.publicKey, sig);
  }
  if (!ok) {
    throw new SignatureError('bad-signature', `${what} does not verify with ${key.algorithm} key "${key.id}": the signature or what it covers was altered, or it was made with another key of that name`);
  }
  return key;
}

/** Checks a key can both sign and verify a probe (location validation). Throws naming the problem. */
export function probeSigningKey(keys: SigningKeys, key: SigningKey): void {
  if (!canSign(key)) return;
  const probe: SignedStatement = {
    backup: 'probe', location: 'probe', phase: 'Completed', startTimestamp: '', labels: {},
    manifestSha256: '0'.repeat(64), resourceListSha256: '0'.repeat(64), tarballSha256: '0'.repeat(64),
  };
  verifySignatureFile(keys, signStatement(key, probe), 'the location\'s probe signature');
}
