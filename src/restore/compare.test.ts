import { describe, expect, it } from 'vitest';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME } from '../apis/v1/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { containedIn, patchToMatch } from './compare.js';

const own = { [LABEL_BACKUP_NAME]: 'b', [LABEL_RESTORE_NAME]: 'r' };

describe('patchToMatch', () => {
  const original: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', labels: { app: 'a' }, uid: 'old' }, data: { a: '1' } };
  const item: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', labels: { app: 'a', ...own } }, data: { a: '1' } };

  it('is undefined when the live object holds everything (cluster metadata, defaults and older restore labels do not count)', () => {
    const live: KubeObject = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'n', uid: 'new', resourceVersion: '5', labels: { app: 'a', [LABEL_RESTORE_NAME]: 'earlier' } },
      data: { a: '1' },
    };
    expect(patchToMatch(live, item, original)).toBeUndefined();
  });

  it('sets changed fields, removes fields added after the backup, and sets the restore labels', () => {
    const live: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n', labels: { app: 'b', extra: 'x' } }, data: { a: '2', b: 'added' } };
    expect(patchToMatch(live, item, original)).toEqual({ data: { a: '1', b: null }, metadata: { labels: { app: 'a', extra: null, ...own } } });
  });

  it('keeps live values of fields the restore cleared for the cluster to assign (a Service clusterIP)', () => {
    const svcOriginal: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { clusterIP: '10.0.0.5', clusterIPs: ['10.0.0.5'], ports: [{ port: 80, protocol: 'TCP' }] } };
    const svcItem: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80, protocol: 'TCP' }] } };
    const live: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { clusterIP: '10.0.0.9', clusterIPs: ['10.0.0.9'], ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }], type: 'ClusterIP' } };
    // type was in neither the original nor the item: it was added after the backup and is removed.
    expect(patchToMatch(live, svcItem, svcOriginal, false)).toEqual({ spec: { type: null } });
    const liveUntyped: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { clusterIP: '10.0.0.9', clusterIPs: ['10.0.0.9'], ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] } };
    expect(patchToMatch(liveUntyped, svcItem, svcOriginal)).toBeUndefined();
  });

  it('replaces an array whose elements differ', () => {
    const o: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [1, 2] } };
    const live: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [1, 3] } };
    expect(patchToMatch(live, o, o, false)).toEqual({ spec: { list: [1, 2] } });
  });

  it('never compares status', () => {
    const o: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, status: { a: 1 } };
    const live: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, status: { a: 2 } };
    expect(patchToMatch(live, o, o)).toBeUndefined();
  });
});

describe('containedIn', () => {
  it('treats records as subsets and arrays element by element', () => {
    expect(containedIn({ a: [{ x: 1 }] }, { a: [{ x: 1, y: 2 }], b: 3 })).toBe(true);
    expect(containedIn({ a: [{ x: 1 }] }, { a: [{ x: 1 }, { x: 2 }] })).toBe(false);
    expect(containedIn('a', 'b')).toBe(false);
    expect(containedIn({ a: null }, { a: null })).toBe(true);
  });
});
