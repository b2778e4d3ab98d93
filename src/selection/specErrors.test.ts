import { describe, expect, it } from 'vitest';
import { resourceModifierRefErrors } from './specErrors.js';

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
