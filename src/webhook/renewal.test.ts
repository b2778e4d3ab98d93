import { describe, expect, it } from 'vitest';
import { createTlsIdentity, expiryOf, renewBeforeMs } from './certs.js';
import { checkIntervalMs, switchDue } from './renewal.js';

describe('switchDue', () => {
  const life = 45_000;
  const start = new Date('2026-01-01T00:00:00Z');
  const old = createTlsIdentity(['127.0.0.1'], start, life);
  const renewed = createTlsIdentity(['127.0.0.1'], new Date(start.getTime() + 30_000), life);
  const oldExpiry = expiryOf(old.cert) ?? 0;

  it('keeps serving the same certificate', () => {
    expect(switchDue(oldExpiry, old, old, start.getTime() + 44_000, life)).toBe(false);
  });

  it('switches to a renewed one only once half of the renewal window has passed, before the old one expires', () => {
    expect(oldExpiry - start.getTime()).toBe(life);
    // Renewed with 15 s (a third) left: the bundle is republished, the old certificate still served.
    expect(switchDue(oldExpiry, renewed, old, start.getTime() + 31_000, life)).toBe(false);
    // With less than 7.5 s left, the new one is served; the bundle has trusted it since the renewal.
    expect(switchDue(oldExpiry, renewed, old, start.getTime() + 38_000, life)).toBe(true);
    expect(renewBeforeMs(life) / 2).toBe(7_500);
  });
});

describe('checkIntervalMs', () => {
  it('checks 30 times a lifetime, between once a second and every 10 minutes', () => {
    expect(checkIntervalMs(45_000)).toBe(1_500);
    expect(checkIntervalMs(10_000)).toBe(1_000);
    expect(checkIntervalMs(365 * 86_400_000)).toBe(600_000);
  });
});
