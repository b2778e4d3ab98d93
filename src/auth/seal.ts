// Proof that this server's admission webhook wrote a requester stamp for one object. A stamp alone
// proves nothing: whoever creates an object while the webhook does not see it (its configuration
// deleted, its namespace selector not matching) can write any stamp. So the webhook also writes a
// seal: an HMAC, under a key only the server holds (kept in the webhook's TLS Secret, shared by the
// replicas), over the kind, namespace, name, stamp and the time of sealing. At mutating admission
// on create the object has neither uid nor creationTimestamp, so the seal binds the name and the
// time; the check then requires the object's creationTimestamp to be close to that time, so a seal
// copied onto an object deleted and created again later does not pass either.
import crypto from 'node:crypto';
import { REQUESTER_ANNOTATION } from './requester.js';

export const SEAL_ANNOTATION = 'stowage.dev/requester-seal';
const VERSION = 'v1';
/** Bytes of a seal key. */
export const SEAL_KEY_BYTES = 32;
/**
 * How far creationTimestamp may lie from the sealing time. It covers the API server setting the
 * timestamp after admission (in whole seconds), later webhooks in the chain, and clock skew
 * between the server's pods and the API server; a replay must delete and recreate within it.
 */
export const SEAL_WINDOW_MS = 30_000;

export const createSealKey = (): Buffer => crypto.randomBytes(SEAL_KEY_BYTES);

export interface SealSubject { kind: string; namespace: string; name: string; stamp: string }

function mac(key: Buffer, s: SealSubject, sealedAt: string): string {
  return crypto.createHmac('sha256', key).update(JSON.stringify([SEAL_ANNOTATION, VERSION, s.kind, s.namespace, s.name, s.stamp, sealedAt])).digest('base64url');
}

/** The seal annotation's value: `v1 <sealedAt ISO> <mac>`. */
export function sealStamp(key: Buffer, s: SealSubject, sealedAt: Date): string {
  const at = sealedAt.toISOString();
  return `${VERSION} ${at} ${mac(key, s, at)}`;
}

interface Sealable { kind?: string; metadata?: { name?: string; namespace?: string; annotations?: Record<string, string>; [k: string]: unknown } }

/**
 * Why the stamp on `obj` is not one this server's webhook wrote for it, or undefined when it is.
 * Only called for objects that carry a stamp.
 */
export function sealRefusal(key: Buffer | undefined, obj: Sealable): string | undefined {
  const stamp = obj.metadata?.annotations?.[REQUESTER_ANNOTATION] ?? '';
  const raw = obj.metadata?.annotations?.[SEAL_ANNOTATION];
  const notOurs = 'so it was not written by this server\'s admission webhook (it was written by hand, copied from another object, or set while the webhook did not cover this namespace) and cannot say whose rights to use';
  if (key === undefined) return `this server holds no key to check the ${REQUESTER_ANNOTATION} annotation's seal (the admission webhook is not running), so it cannot say whose rights to use`;
  if (raw === undefined) return `its ${REQUESTER_ANNOTATION} annotation carries no ${SEAL_ANNOTATION}, ${notOurs}`;
  const parts = raw.split(' ');
  const [version, at, given] = parts;
  const sealedAt = at === undefined ? NaN : Date.parse(at);
  if (parts.length !== 3 || version !== VERSION || at === undefined || given === undefined || Number.isNaN(sealedAt)) {
    return `its ${SEAL_ANNOTATION} annotation is unreadable (expected "${VERSION} <time> <mac>"), ${notOurs}`;
  }
  const kind = obj.kind ?? '';
  const expected = Buffer.from(mac(key, { kind, namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '', stamp }, at));
  const got = Buffer.from(given);
  if (got.length !== expected.length || !crypto.timingSafeEqual(got, expected)) {
    return `its ${SEAL_ANNOTATION} does not match this ${kind === '' ? 'object' : kind}'s name, namespace and ${REQUESTER_ANNOTATION} annotation, ${notOurs}`;
  }
  const created = typeof obj.metadata?.creationTimestamp === 'string' ? Date.parse(obj.metadata.creationTimestamp) : NaN;
  if (Number.isNaN(created)) return `it has no creationTimestamp to check its ${SEAL_ANNOTATION} against, so it cannot say whose rights to use`;
  if (Math.abs(created - sealedAt) > SEAL_WINDOW_MS) {
    return `its ${SEAL_ANNOTATION} was made at ${at} but the object was created at ${new Date(created).toISOString()}: the stamp was copied from an earlier object of this name, not written by this server's admission webhook for this one, so it cannot say whose rights to use`;
  }
  return undefined;
}
