import { describe, expect, it } from 'vitest';
import { negotiateVersion, validatePluginNames } from './serve.js';

describe('negotiateVersion', () => {
  it('picks the highest version both sides speak', () => {
    expect(negotiateVersion('1,2,3', [1, 2])).toBe(2);
    expect(negotiateVersion(' 1 ', [1])).toBe(1);
    expect(negotiateVersion(undefined, [1, 2])).toBe(2);
    expect(negotiateVersion('3,4', [1, 2])).toBeUndefined();
  });
});

describe('validatePluginNames', () => {
  it('reports malformed names, repeats per kind, and an empty set', () => {
    expect(validatePluginNames([{ kind: 'ObjectStore', name: 'example.com/a' }, { kind: 'VolumeSnapshotter', name: 'example.com/a' }])).toEqual([]);
    expect(
      validatePluginNames([
        { kind: 'ObjectStore', name: 'example.com/a' },
        { kind: 'ObjectStore', name: 'example.com/a' },
        { kind: 'BackupItemAction', name: 'NoDomain' },
      ]),
    ).toEqual([
      'ObjectStore "example.com/a" is registered twice',
      'BackupItemAction name "NoDomain" is not of the form domain/name (e.g. example.com/my-plugin)',
    ]);
    expect(validatePluginNames([])).toEqual(['no plugins to serve']);
  });
});
