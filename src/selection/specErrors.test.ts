import { describe, expect, it } from 'vitest';
import { backupSpecErrors, resourceModifierRefErrors } from './specErrors.js';

describe('spec.resourceModifier', () => {
  it('must name a ConfigMap (kind in any case, as Velero compares it), with an empty apiGroup and a name', () => {
    expect(resourceModifierRefErrors({})).toEqual([]);
    expect(resourceModifierRefErrors({ resourceModifier: { kind: 'ConfigMap', name: 'mods' } })).toEqual([]);
    expect(resourceModifierRefErrors({ resourceModifier: { apiGroup: '', kind: 'configmap', name: 'mods' } })).toEqual([]);
    expect(resourceModifierRefErrors({ resourceModifier: { apiGroup: 'apps', kind: 'Secret', name: '' } })).toEqual([
      'spec.resourceModifier.kind must be ConfigMap, not "Secret"',
      'spec.resourceModifier.apiGroup must be empty (ConfigMaps are core objects), not "apps"',
      'spec.resourceModifier.name is required',
    ]);
  });
});

describe('spec.csiSnapshotTimeout', () => {
  it('is a Go duration above zero, or unset (10m, Velero\'s default)', () => {
    expect(backupSpecErrors({})).toEqual([]);
    expect(backupSpecErrors({ csiSnapshotTimeout: '90s' })).toEqual([]);
    expect(backupSpecErrors({ csiSnapshotTimeout: '0s' })).toEqual(['spec.csiSnapshotTimeout "0s" must be above zero']);
    expect(backupSpecErrors({ csiSnapshotTimeout: 'soon' })).toHaveLength(1);
    expect(backupSpecErrors({ csiSnapshotTimeout: 'soon' })[0]).toMatch(/^spec\.csiSnapshotTimeout/);
  });
});
