// Sealing download links to the requester's one-time key: round trip, and every way it must fail.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEAL_ALGORITHM, createLinkKey, parseLinkPublicKey, sealContext, sealLink } from './sealedLink.js';

const URL = 'http://127.0.0.1:8086/download/eyJleHAiOjF9.c2ln';
const CONTEXT = 'DownloadRequest stowage/b1-x7k2p BackupContents b1';

function recipientOf(publicKey: string): crypto.KeyObject {
  const k = parseLinkPublicKey(publicKey);
  if ('error' in k) throw new Error(k.error);
  return k;
}

describe('sealed download links', () => {
  it('opens with the key it was sealed to, and holds no trace of the URL in plain text', () => {
    const key = createLinkKey();
    const sealed = sealLink(recipientOf(key.publicKey), URL, CONTEXT);
    expect(sealed.algorithm).toBe(SEAL_ALGORITHM);
    expect(JSON.stringify(sealed)).not.toMatch(/http|download|127\.0\.0\.1/);
    expect(key.open(sealed, CONTEXT)).toBe(URL);
    // A fresh ephemeral key and nonce every time: two seals of one URL share nothing.
    const again = sealLink(recipientOf(key.publicKey), URL, CONTEXT);
    expect(again.ephemeralPublicKey).not.toBe(sealed.ephemeralPublicKey);
    expect(again.ciphertext).not.toBe(sealed.ciphertext);
  });

  it('does not open with another key, for another request, or when altered', () => {
    const key = createLinkKey();
    const sealed = sealLink(recipientOf(key.publicKey), URL, CONTEXT);
    const refused = { error: "the sealed download link does not open with this request's key (it was sealed for another key or request, or altered)" };
    expect(createLinkKey().open(sealed, CONTEXT)).toEqual(refused);
    expect(key.open(sealed, 'DownloadRequest stowage/other BackupContents b1')).toEqual(refused);
    const ct = Buffer.from(sealed.ciphertext, 'base64');
    ct[0] = (ct[0] ?? 0) ^ 1;
    expect(key.open({ ...sealed, ciphertext: ct.toString('base64') }, CONTEXT)).toEqual(refused);
    const other = createLinkKey().publicKey;
    expect(key.open({ ...sealed, ephemeralPublicKey: other }, CONTEXT)).toEqual(refused);
    expect(key.open({ ...sealed, algorithm: 'ROT13' }, CONTEXT)).toEqual({ error: `the download link is sealed with ROT13, which this client does not know (expected ${SEAL_ALGORITHM})` });
    expect(key.open({ ...sealed, nonce: 'AAAA' }, CONTEXT)).toEqual({ error: 'the sealed download link is malformed' });
  });

  it('accepts only X25519 public keys in SPKI DER form, base64', () => {
    const bad = { error: 'spec.publicKey is not an X25519 public key (base64 of its SPKI DER form)' };
    expect(parseLinkPublicKey(createLinkKey().publicKey)).toBeInstanceOf(crypto.KeyObject);
    expect(parseLinkPublicKey('not base64!')).toEqual(bad);
    expect(parseLinkPublicKey(Buffer.alloc(32, 1).toString('base64'))).toEqual(bad);
    const p256 = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    expect(parseLinkPublicKey(p256)).toEqual(bad);
  });

  it('binds a seal to the request namespace/name and its target', () => {
    const dr = { metadata: { name: 'b1-x7k2p', namespace: 'stowage' }, spec: { target: { kind: 'BackupContents' as const, name: 'b1' } } };
    expect(sealContext(dr)).toBe(CONTEXT);
  });
});
