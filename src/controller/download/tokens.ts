// The download endpoint's tokens: a /download/<token> URL carries an HMAC-signed, expiring
// description of one target (its kind and name, location, bucket and key), so the endpoint needs no
// state and a link for one object cannot fetch another. The key is the server process's own.
import crypto from 'node:crypto';
import type { DownloadTargetKind } from '../../apis/v1/index.js';

export const EXPIRED_LINK = 'the download link has expired; run the command again';

/**
 * What a /download/<token> URL stands for: one target, and the one object it is stored as. Signed
 * (every field), so the endpoint trusts it without a lookup, and it fetches nothing else.
 */
export interface DownloadToken {
  /** Expiry, ms since epoch. */
  exp: number;
  /** The DownloadRequest target the link was made for. */
  kind: DownloadTargetKind;
  name: string;
  /** Location name, bucket and key of the object ('' for ServerLog, which is not stored). */
  loc: string;
  bucket: string;
  key: string;
  /** A run whose live log is served while it runs on this server. */
  run?: { kind: 'backup' | 'restore'; namespace: string; name: string };
  /** The encrypted backup whose key opens the object (the target's own, or the restore's): served decrypted. */
  sealedBy?: { namespace: string; name: string };
}

/** Why a token is refused, with its HTTP status: 410 for an expired link, 403 for anything else. */
export interface TokenRefusal {
  error: string;
  status: 403 | 410;
}

export interface TokenSigner {
  sign(t: DownloadToken): string;
  /** The token's content, or the reason it is refused. */
  verify(token: string, now: number): DownloadToken | TokenRefusal;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';

export function createTokenSigner(secret: Buffer = crypto.randomBytes(32)): TokenSigner {
  const mac = (data: string): string => crypto.createHmac('sha256', secret).update(data).digest('base64url');
  return {
    sign(t) {
      const body = Buffer.from(JSON.stringify(t)).toString('base64url');
      return `${body}.${mac(body)}`;
    },
    verify(token, now) {
      const malformed: TokenRefusal = { error: 'malformed download token', status: 403 };
      const dot = token.indexOf('.');
      if (dot <= 0) return malformed;
      const body = token.slice(0, dot);
      const sig = Buffer.from(token.slice(dot + 1));
      const want = Buffer.from(mac(body));
      if (sig.length !== want.length || !crypto.timingSafeEqual(sig, want)) {
        return { error: 'invalid download token (it was issued by another server process, or altered)', status: 403 };
      }
      let t: Partial<DownloadToken>;
      try {
        t = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<DownloadToken>;
      } catch {
        return malformed;
      }
      // Signed by this process, so well-formed; checked anyway, since what it names is served.
      if (typeof t.exp !== 'number' || !isString(t.kind) || !isString(t.name)) return malformed;
      if (t.kind !== 'ServerLog' && (!isString(t.loc) || !isString(t.bucket) || !isString(t.key))) return malformed;
      if (t.exp <= now) return { error: EXPIRED_LINK, status: 410 };
      return t as DownloadToken;
    },
  };
}
