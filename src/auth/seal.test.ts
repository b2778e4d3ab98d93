import { describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION } from './requester.js';
import { SEAL_ANNOTATION, SEAL_WINDOW_MS, createSealKey, sealRefusal, sealStamp } from './seal.js';

const key = createSealKey();
const stamp = JSON.stringify({ username: 'admin', uid: '', groups: ['system:masters'] });
const at = new Date('2026-01-02T03:04:05.123Z');

function obj(o: { kind?: string; name?: string; namespace?: string; created?: string; seal?: string; stamp?: string }): Parameters<typeof sealRefusal>[1] {
  return {
    kind: o.kind ?? 'Backup',
    metadata: {
      name: o.name ?? 'b1', namespace: o.namespace ?? 'stowage', creationTimestamp: o.created ?? '2026-01-02T03:04:05Z',
      annotations: { [REQUESTER_ANNOTATION]: o.stamp ?? stamp, ...(o.seal !== undefined ? { [SEAL_ANNOTATION]: o.seal } : {}) },
    },
  };
}
const sealed = sealStamp(key, { kind: 'Backup', namespace: 'stowage', name: 'b1', stamp }, at);
const NOT_OURS = 'so it was not written by this server\'s admission webhook (it was written by hand, copied from another object, or set while the webhook did not cover this namespace) and cannot say whose rights to use';

describe('sealRefusal', () => {
  it('accepts the seal the webhook wrote for this object, created within the window', () => {
    expect(sealRefusal(key, obj({ seal: sealed }))).toBeUndefined();
    expect(sealRefusal(key, obj({ seal: sealed, created: new Date(at.getTime() + SEAL_WINDOW_MS).toISOString() }))).toBeUndefined();
  });

  it('refuses a hand-written stamp without a seal, or with an unreadable one', () => {
    expect(sealRefusal(key, obj({}))).toBe(`its stowage.dev/requester annotation carries no stowage.dev/requester-seal, ${NOT_OURS}`);
    expect(sealRefusal(key, obj({ seal: 'v1 yesterday abc' }))).toBe(`its stowage.dev/requester-seal annotation is unreadable (expected "v1 <time> <mac>"), ${NOT_OURS}`);
  });

  it('refuses a seal copied to another name, namespace or kind, or kept with another stamp', () => {
    const mismatch = (kind: string): string => `its stowage.dev/requester-seal does not match this ${kind}'s name, namespace and stowage.dev/requester annotation, ${NOT_OURS}`;
    expect(sealRefusal(key, obj({ seal: sealed, name: 'b2' }))).toBe(mismatch('Backup'));
    expect(sealRefusal(key, obj({ seal: sealed, namespace: 'other' }))).toBe(mismatch('Backup'));
    expect(sealRefusal(key, obj({ seal: sealed, kind: 'Restore' }))).toBe(mismatch('Restore'));
    expect(sealRefusal(key, obj({ seal: sealed, stamp: JSON.stringify({ username: 'admin', uid: '', groups: ['system:masters', 'x'] }) }))).toBe(mismatch('Backup'));
    expect(sealRefusal(createSealKey(), obj({ seal: sealed }))).toBe(mismatch('Backup'));
  });

  it('refuses a seal replayed on an object of the same name created again later', () => {
    expect(sealRefusal(key, obj({ seal: sealed, created: '2026-01-02T03:05:00Z' }))).toBe(
      'its stowage.dev/requester-seal was made at 2026-01-02T03:04:05.123Z but the object was created at 2026-01-02T03:05:00.000Z: the stamp was copied from an earlier object of this name, not written by this server\'s admission webhook for this one, so it cannot say whose rights to use',
    );
  });

  it('refuses every stamp when the server holds no key', () => {
    expect(sealRefusal(undefined, obj({ seal: sealed }))).toBe('this server holds no key to check the stowage.dev/requester annotation\'s seal (the admission webhook is not running), so it cannot say whose rights to use');
  });
});
