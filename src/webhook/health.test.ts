// The probe's decision: what a dry-run create returned says about the webhook, and when to probe next.
import { describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, createSealKey, formatRequester, sealStamp } from '../auth/index.js';
import type { KubeObject } from '../kube/index.js';
import { nextProbeDelay, probeVerdict } from './health.js';

const key = createSealKey();
const stamp = formatRequester({ username: 'system:serviceaccount:stowage:stowage', uid: '', groups: ['system:authenticated'] });
const created = new Date('2026-12-05T02:00:00Z');
const returned = (annotations: Record<string, string>): KubeObject => ({
  apiVersion: 'stowage.dev/v1', kind: 'Backup',
  metadata: { name: 'stowage-webhook-probe', namespace: 'stowage', creationTimestamp: created.toISOString(), annotations },
});
const sealedWith = (k: Buffer): Record<string, string> => ({
  [REQUESTER_ANNOTATION]: stamp,
  [SEAL_ANNOTATION]: sealStamp(k, { kind: 'Backup', namespace: 'stowage', name: 'stowage-webhook-probe', stamp }, created),
});
const NOT_CALLED = 'the API server did not call it for a Backup created in namespace stowage (MutatingWebhookConfiguration stowage-webhook is missing, or does not select this namespace)';

describe('probeVerdict', () => {
  it('passes an object sealed with this server\'s key', () => {
    expect(probeVerdict('stowage-webhook', 'stowage', key, returned(sealedWith(key)))).toBeUndefined();
  });

  it('says the webhook was not called when the object came back without stamp or seal', () => {
    expect(probeVerdict('stowage-webhook', 'stowage', key, returned({}))).toBe(NOT_CALLED);
    expect(probeVerdict('stowage-webhook', 'stowage', key, returned({ [REQUESTER_ANNOTATION]: stamp }))).toBe(NOT_CALLED);
  });

  it('says the configuration points elsewhere when the seal is made with another key', () => {
    expect(probeVerdict('stowage-webhook', 'stowage', key, returned(sealedWith(createSealKey())))).toBe(
      'MutatingWebhookConfiguration stowage-webhook does not point at this server (the seal on a Backup created in namespace stowage is not made with this server\'s key)',
    );
  });
});

describe('nextProbeDelay', () => {
  it('waits the interval while healthy, and probes sooner (never later than the interval) while not', () => {
    expect(nextProbeDelay(30_000, 0)).toBe(30_000);
    expect(nextProbeDelay(30_000, 1)).toBe(500);
    expect(nextProbeDelay(30_000, 2)).toBe(2000);
    expect(nextProbeDelay(30_000, 50)).toBe(2000);
    expect(nextProbeDelay(300, 5)).toBe(300);
  });
});
