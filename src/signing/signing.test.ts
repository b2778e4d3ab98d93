import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson, currentSigningKey, ED25519_ALGORITHM, HMAC_ALGORITHM, parseSignatureFile, parseSigningKey, SignatureError, signingKeyProblems, signStatement,
  verifySignatureFile, type SignedStatement, type SigningKeys,
} from './index.js';

const hex = (c: string): string => c.repeat(64);
const statement: SignedStatement = {
  backup: 'b1', location: 'primary', phase: 'Completed', startTimestamp: '2026-01-01T00:00:00Z', labels: { 'stowage.dev/schedule-name': 'nightly' },
  manifestSha256: hex('a'), resourceListSha256: hex('b'), tarballSha256: hex('c'),
};
const ed = crypto.generateKeyPairSync('ed25519');
const privatePem = ed.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const publicPem = ed.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const hmacKey = crypto.randomBytes(32);
const keys = (current: string, data: Record<string, string | Buffer>): SigningKeys => ({
  secret: 'ns/signing', current, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v)])),
});
const reasonOf = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (err) {
    return err instanceof SignatureError ? `${err.reason}: ${err.message}` : String(err);
  }
};

describe('signing keys', () => {
  it('reads HMAC keys, Ed25519 private and public keys, and names entries that are neither (never their values)', () => {
    const h = parseSigningKey('hmac', hmacKey, 'ns/s');
    expect(h).toMatchObject({ algorithm: HMAC_ALGORITHM, id: 'hmac' });
    const priv = parseSigningKey('ed', Buffer.from(privatePem), 'ns/s');
    const pub = parseSigningKey('pub', Buffer.from(publicPem), 'ns/s');
    expect(priv).toMatchObject({ algorithm: ED25519_ALGORITHM });
    expect('id' in priv && 'id' in pub && priv.id === pub.id).toBe(true);
    expect('id' in pub ? pub.id : '').toMatch(/^ed25519:[0-9a-f]{32}$/);
    expect('privateKey' in pub).toBe(false);
    const short = parseSigningKey('short', Buffer.from('too-short'), 'ns/s');
    expect(short).toEqual({ problem: 'key "short" of Secret ns/s is neither an Ed25519 PEM key nor an HMAC key of at least 32 bytes (e.g. openssl rand -base64 32)' });
    const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(parseSigningKey('rsa', Buffer.from(rsa), 'ns/s')).toEqual({ problem: expect.stringContaining('key "rsa" of Secret ns/s is a rsa key; signing keys in PEM must be Ed25519') });
    // A text key with a final newline is the same key.
    const text = crypto.randomBytes(32).toString('base64');
    const a = parseSigningKey('t', Buffer.from(text), 'ns/s');
    const b = parseSigningKey('t', Buffer.from(`${text}\n`), 'ns/s');
    expect('secret' in a && 'secret' in b && a.secret.equals(b.secret)).toBe(true);
    expect(signingKeyProblems(keys('missing', { short: 'x' }))).toEqual([
      'Secret ns/signing has no key "missing" (it has "short")',
      'key "short" of Secret ns/signing is neither an Ed25519 PEM key nor an HMAC key of at least 32 bytes (e.g. openssl rand -base64 32)',
    ]);
  });

  it('signs and verifies with HMAC and Ed25519; a public key alone verifies but cannot sign', () => {
    for (const [current, data] of [['hmac', { hmac: hmacKey }], ['ed', { ed: privatePem }]] as const) {
      const ks = keys(current, data);
      const key = currentSigningKey(ks);
      if (key === undefined) throw new Error('no key');
      const file = signStatement(key, statement);
      expect(file.algorithm).toBe(key.algorithm);
      expect(verifySignatureFile(ks, parseSignatureFile(JSON.parse(JSON.stringify(file)), 'f'), 'f').id).toBe(key.id);
    }
    const pubOnly = keys('pub', { pub: publicPem });
    const signed = signStatement(currentSigningKey(keys('ed', { ed: privatePem }))!, statement);
    expect(verifySignatureFile(pubOnly, signed, 'f').entry).toBe('pub');
    expect(reasonOf(() => signStatement(currentSigningKey(pubOnly)!, statement))).toMatch(/^no-private-key: key "pub" \(ed25519:[0-9a-f]+\) is an Ed25519 public key: it verifies backups but cannot sign them$/);
  });

  it('refuses an altered statement, a forged signature, an unknown key and an HMAC signature made with a public key', () => {
    const ks = keys('hmac', { hmac: hmacKey, pub: publicPem });
    const file = signStatement(currentSigningKey(ks)!, statement);
    for (const altered of [
      { ...file, statement: { ...statement, labels: { 'stowage.dev/schedule-name': 'other' } } },
      { ...file, statement: { ...statement, manifestSha256: hex('d') } },
      { ...file, statement: { ...statement, phase: 'PartiallyFailed' } },
    ]) {
      expect(reasonOf(() => verifySignatureFile(ks, altered, 'the signature of backup "b1"')))
        .toBe('bad-signature: the signature of backup "b1" does not verify with HMAC-SHA256 key "hmac": the signature or what it covers was altered, or it was made with another key of that name');
    }
    // A forger who knows the public key computes an HMAC with it and names that entry: it is no HMAC key.
    const pemHmac = crypto.createHmac('sha256', Buffer.from(publicPem)).update('x').digest('base64');
    expect(reasonOf(() => verifySignatureFile(ks, { ...file, keyId: 'pub', signature: pemHmac }, 'f'))).toMatch(/^unknown-key: f is signed with HMAC-SHA256 key "pub", which Secret ns\/signing does not hold \(it holds /);
    expect(reasonOf(() => verifySignatureFile(keys('x', { x: crypto.randomBytes(32) }), file, 'f'))).toBe('unknown-key: f is signed with HMAC-SHA256 key "hmac", which Secret ns/signing does not hold (it holds HMAC-SHA256 "x"); add that key to verify it');
    expect(reasonOf(() => verifySignatureFile(ks, { ...file, algorithm: 'RSA' }, 'f'))).toBe('unknown-key: f is signed with "RSA", which this server does not verify (it verifies HMAC-SHA256 and Ed25519)');
  });

  it('rotation: a backup signed with an older entry verifies while that entry is listed', () => {
    const old = keys('k1', { k1: hmacKey });
    const file = signStatement(currentSigningKey(old)!, statement);
    const rotated = keys('k2', { k1: hmacKey, k2: crypto.randomBytes(40) });
    expect(verifySignatureFile(rotated, file, 'f').id).toBe('k1');
    expect(reasonOf(() => verifySignatureFile(keys('k2', { k2: crypto.randomBytes(40) }), file, 'f'))).toMatch(/^unknown-key: f is signed with HMAC-SHA256 key "k1"/);
  });

  it('parses signature files strictly and signs canonical JSON', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 'x'], c: null } })).toBe('{"a":{"c":null,"d":[1,"x"]},"b":1}');
    expect(reasonOf(() => parseSignatureFile({ kind: 'Other' }, 'f'))).toBe('malformed: f is malformed: kind is not StowageBackupSignature');
    const file = signStatement(currentSigningKey(keys('hmac', { hmac: hmacKey }))!, statement);
    expect(reasonOf(() => parseSignatureFile({ ...file, statement: { ...statement, manifestSha256: 'nope' } }, 'f'))).toBe('malformed: f is malformed: statement.manifestSha256 is not a SHA-256');
    expect(reasonOf(() => parseSignatureFile({ ...file, statement: { ...statement, labels: { a: 1 } } }, 'f'))).toBe('malformed: f is malformed: statement.labels is not a map of strings');
    // Key order in the stored file does not matter.
    const reordered = JSON.parse(JSON.stringify({ ...file, statement: Object.fromEntries(Object.entries(statement).reverse()) })) as unknown;
    expect(verifySignatureFile(keys('hmac', { hmac: hmacKey }), parseSignatureFile(reordered, 'f'), 'f').id).toBe('hmac');
  });
});
