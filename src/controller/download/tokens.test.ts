import { describe, expect, it } from 'vitest';
import { EXPIRED_LINK, createTokenSigner, type DownloadToken } from './tokens.js';

describe('download tokens', () => {
  const signer = createTokenSigner(Buffer.alloc(32, 7));
  const t: DownloadToken = { exp: 2_000, kind: 'BackupContents', name: 'x', loc: 'default', bucket: 'b', key: 'backups/x/x.tar.gz' };

  it('round-trips a token until it expires, then refuses it with 410', () => {
    const token = signer.sign(t);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(signer.verify(token, 1_999)).toEqual(t);
    expect(signer.verify(token, 2_000)).toEqual({ error: 'the download link has expired; run the command again', status: 410 });
    expect(EXPIRED_LINK).toBe('the download link has expired; run the command again');
  });

  it('refuses altered tokens and tokens signed with another secret with 403', () => {
    const token = signer.sign(t);
    const [body, sig] = token.split('.') as [string, string];
    const invalid = { error: 'invalid download token (it was issued by another server process, or altered)', status: 403 };
    expect(createTokenSigner(Buffer.alloc(32, 8)).verify(token, 0)).toEqual(invalid);
    expect(signer.verify(body, 0)).toEqual({ error: 'malformed download token', status: 403 });
    expect(signer.verify(`${body}.${sig}x`, 0)).toEqual(invalid);
  });

  it('binds the link to its object: changing the key, bucket, location, target or expiry breaks the signature', () => {
    const sig = signer.sign(t).split('.')[1] ?? '';
    const forged = (over: Partial<DownloadToken>): string => `${Buffer.from(JSON.stringify({ ...t, ...over })).toString('base64url')}.${sig}`;
    const invalid = { error: 'invalid download token (it was issued by another server process, or altered)', status: 403 };
    // The log's link cannot become the tarball's, nor another backup's, nor outlive its expiry.
    expect(signer.verify(forged({ key: 'backups/y/y.tar.gz' }), 0)).toEqual(invalid);
    expect(signer.verify(forged({ kind: 'BackupLog', key: 'backups/x/x-logs.gz' }), 0)).toEqual(invalid);
    expect(signer.verify(forged({ bucket: 'other' }), 0)).toEqual(invalid);
    expect(signer.verify(forged({ loc: 'second' }), 0)).toEqual(invalid);
    expect(signer.verify(forged({ name: 'y' }), 0)).toEqual(invalid);
    expect(signer.verify(forged({ exp: 9_999_999 }), 3_000)).toEqual(invalid);
  });

  it('refuses a signed token that does not name one whole object', () => {
    const partial = signer.sign({ exp: 2_000, loc: 'default', bucket: 'b' } as unknown as DownloadToken);
    expect(signer.verify(partial, 0)).toEqual({ error: 'malformed download token', status: 403 });
  });

  it('takes a ServerLog token without an object, but no stored target without one', () => {
    const serverLog: DownloadToken = { exp: 2_000, kind: 'ServerLog', name: 'stowage', loc: '', bucket: '', key: '' };
    expect(signer.verify(signer.sign(serverLog), 0)).toEqual(serverLog);
    expect(signer.verify(signer.sign({ ...serverLog, kind: 'BackupLog' }), 0)).toEqual({ error: 'malformed download token', status: 403 });
  });
});
