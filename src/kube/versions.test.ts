import { describe, expect, it } from 'vitest';
import { chooseVersion, compareVersionPriority } from './versions.js';

describe('compareVersionPriority', () => {
  it('orders as Kubernetes does: GA, beta, alpha, by number, then other strings alphabetically', () => {
    const shuffled = ['v10beta3', 'v2', 'foo10', 'v1', 'v3beta1', 'v11alpha2', 'v11beta2', 'v12alpha1', 'foo1', 'v10'];
    expect([...shuffled].sort(compareVersionPriority)).toEqual(
      ['v10', 'v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10'],
    );
  });

  it('puts GA before any beta whatever the numbers, and a later beta before an earlier one', () => {
    expect(compareVersionPriority('v1', 'v2beta1')).toBeLessThan(0);
    expect(compareVersionPriority('v2beta2', 'v2beta1')).toBeLessThan(0);
    expect(compareVersionPriority('v1beta1', 'v1alpha9')).toBeLessThan(0);
    expect(compareVersionPriority('v1alpha1', 'v1alpha1')).toBe(0);
    // Not Kubernetes-shaped (a leading zero, no "v"): after every conforming version.
    expect(compareVersionPriority('v01', 'v1alpha1')).toBeGreaterThan(0);
    expect(compareVersionPriority('1', 'v1alpha1')).toBeGreaterThan(0);
  });
});

describe('chooseVersion', () => {
  it("takes the group's preferred version when it serves the resource", () => {
    expect(chooseVersion('v1', ['v1beta1', 'v1'])).toBe('v1');
    expect(chooseVersion('v1beta1', ['v1', 'v1beta1'])).toBe('v1beta1');
  });

  it('otherwise takes the highest-priority version that serves it (cronjobs at batch/v1beta1 on 1.20)', () => {
    expect(chooseVersion('v1', ['v2alpha1', 'v1beta1'])).toBe('v1beta1');
    expect(chooseVersion('v1', ['v1alpha1'])).toBe('v1alpha1');
    expect(chooseVersion(undefined, ['v1alpha1', 'v2beta1', 'v1beta2'])).toBe('v2beta1');
  });

  it('refuses an empty list', () => {
    expect(() => chooseVersion('v1', [])).toThrow(/at least one/);
  });
});
