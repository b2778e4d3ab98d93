import { describe, expect, it } from 'vitest';
import type { ApiResource } from '../kube/index.js';
import { chooseCopy, type ArchivedItem } from './plan.js';

const widgets = (version: string, versions: string[]): ApiResource => ({
  group: 'example.com', version, resource: 'widgets', kind: 'Widget', namespaced: true, verbs: ['create', 'get', 'list'],
  groupResource: 'widgets.example.com', apiVersion: `example.com/${version}`, shortNames: [], singularName: 'widget', versions,
});
const copy = (version: string, versionDir?: string): ArchivedItem => ({
  groupResource: 'widgets.example.com', namespace: 'ns', name: 'w', apiVersion: `example.com/${version}`, kind: 'Widget',
  bytes: 0, offset: 0, crc32: 0, picked: undefined, ...(versionDir === undefined ? {} : { versionDir }),
});

describe('chooseCopy', () => {
  const stored = copy('v1', 'v1-preferredversion');

  it('keeps the stored copy at its version when the cluster serves it and there are no other copies', () => {
    expect(chooseCopy(stored, widgets('v2', ['v2', 'v1']), undefined)).toEqual({ copy: stored, version: 'v1' });
  });

  it("prefers a copy at the cluster's preferred version, even when the stored version is served (Velero's rule)", () => {
    const v2 = copy('v2', 'v2');
    expect(chooseCopy(stored, widgets('v2', ['v2', 'v1']), [v2])).toEqual({
      copy: v2, version: 'v2', change: { stored: 'example.com/v1', used: 'example.com/v2', copy: true, storedServed: true },
    });
  });

  it('otherwise takes a copy at a served version, in the cluster\'s priority order', () => {
    const a1 = copy('v1alpha1', 'v1alpha1');
    const b1 = copy('v1beta1', 'v1beta1');
    expect(chooseCopy(stored, widgets('v3', ['v3', 'v1beta1', 'v1alpha1']), [a1, b1])).toMatchObject({
      copy: b1, version: 'v1beta1', change: { used: 'example.com/v1beta1', copy: true, storedServed: false },
    });
  });

  it("with no copy at a served version, sends the stored object to the cluster's preferred version", () => {
    expect(chooseCopy(stored, widgets('v2', ['v2']), [copy('v1alpha1', 'v1alpha1')])).toEqual({
      copy: stored, version: 'v2', change: { stored: 'example.com/v1', used: 'example.com/v2', copy: false, storedServed: false },
    });
  });

  it('keeps the stored version for a resource the cluster does not serve yet (its CRD comes with the restore)', () => {
    expect(chooseCopy(stored, undefined, [copy('v2', 'v2')])).toEqual({ copy: stored, version: 'v1' });
  });
});
