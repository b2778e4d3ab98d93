import { describe, expect, it } from 'vitest';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME } from '../apis/v1/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import { containedIn, patchToMatch } from './compare.js';
import { CONTROLLER_ANNOTATIONS } from './maintained.js';

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

  it('compares and patches a data key named __proto__ like any other key', () => {
    const parse = (json: string): KubeObject => JSON.parse(json) as KubeObject;
    const md = '"metadata":{"name":"c","namespace":"n"}';
    const orig = parse(`{"apiVersion":"v1","kind":"ConfigMap",${md},"data":{"__proto__":"old","a":"1"}}`);
    const want = parse(`{"apiVersion":"v1","kind":"ConfigMap",${md},"data":{"__proto__":"backed up","a":"1"}}`);
    const changed = parse(`{"apiVersion":"v1","kind":"ConfigMap",${md},"data":{"__proto__":"changed","a":"1"}}`);
    const patch = patchToMatch(changed, want, orig, false);
    expect(JSON.stringify(patch)).toBe('{"data":{"__proto__":"backed up"}}');
    expect(Object.getPrototypeOf(patch?.data)).toBe(Object.prototype);
    expect(patchToMatch(want, want, orig, false)).toBeUndefined();
    // Missing live: set. Added after a backup that did not have it: removed. An object value too.
    const without = parse(`{"apiVersion":"v1","kind":"ConfigMap",${md},"data":{"a":"1"}}`);
    expect(JSON.stringify(patchToMatch(without, want, orig, false))).toBe('{"data":{"__proto__":"backed up"}}');
    expect(JSON.stringify(patchToMatch(changed, without, without, false))).toBe('{"data":{"__proto__":null}}');
    const nested = parse(`{"apiVersion":"v1","kind":"X",${md},"spec":{"__proto__":{"polluted":"yes"}}}`);
    const nestedLive = parse(`{"apiVersion":"v1","kind":"X",${md},"spec":{}}`);
    expect(JSON.stringify(patchToMatch(nestedLive, nested, nested, false))).toBe('{"spec":{"__proto__":{"polluted":"yes"}}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // An absent key never reads Object.prototype: a live toString key is compared as data.
    const live = parse(`{"apiVersion":"v1","kind":"ConfigMap",${md},"data":{"toString":"x","a":"1"}}`);
    expect(JSON.stringify(patchToMatch(live, without, without, false))).toBe('{"data":{"toString":null}}');
  });

  it('replaces an array whose elements differ', () => {
    const o: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [1, 2] } };
    const live: KubeObject = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [1, 3] } };
    expect(patchToMatch(live, o, o, false)).toEqual({ spec: { list: [1, 2] } });
  });

  it('neither compares nor patches the status an autoscaling/v1 HPA keeps in annotations, but compares its metrics spec', () => {
    const ann = (conditions: string, extra: Record<string, string> = {}): Record<string, string> => ({
      'autoscaling.alpha.kubernetes.io/conditions': conditions,
      'autoscaling.alpha.kubernetes.io/current-metrics': `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":${conditions.length}}}]`,
      ...extra,
    });
    const hpa = (annotations: Record<string, string>): KubeObject => ({
      apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h', namespace: 'n', annotations },
      spec: { maxReplicas: 3, scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' } },
    });
    const backedUp = hpa(ann('[{"type":"AbleToScale","status":"False","reason":"FailedGetScale"}]'));
    const live = hpa(ann('[{"type":"AbleToScale","status":"True","reason":"SucceededGetScale"},{"type":"ScalingActive","status":"False"}]'));
    expect(patchToMatch(live, backedUp, backedUp)).toBeUndefined();
    // Present on one side only: not a difference, and never removed or set.
    expect(patchToMatch(hpa({}), backedUp, backedUp)).toBeUndefined();
    expect(patchToMatch(live, hpa({}), hpa({}))).toBeUndefined();
    // autoscaling.alpha.kubernetes.io/metrics is spec.metrics at v1: a change is a difference, and the patch holds nothing else.
    const metrics = '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]';
    const withMetrics = hpa(ann('[]', { 'autoscaling.alpha.kubernetes.io/metrics': metrics }));
    expect(patchToMatch(live, withMetrics, withMetrics, false)).toEqual({ metadata: { annotations: { 'autoscaling.alpha.kubernetes.io/metrics': metrics } } });
  });

  it("leaves an aggregated ClusterRole's rules to the aggregation controller, and compares a plain ClusterRole's", () => {
    const role = (rules: unknown[], aggregated: boolean): KubeObject => ({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'view' }, rules,
      ...(aggregated ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.example.com/aggregate-to-view': 'true' } }] } } : {}),
    });
    const before = [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }];
    const after = [...before, { apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get'] }];
    expect(patchToMatch(role(after, true), role(before, true), role(before, true))).toBeUndefined();
    expect(patchToMatch(role(after, false), role(before, false), role(before, false), false)).toEqual({ rules: before });
  });

  it('ignores the status-like annotations controllers and the apiserver keep, and only those', () => {
    const d = (annotations: Record<string, string>): KubeObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', annotations }, spec: { replicas: 1 } });
    const backedUp = d({ 'deployment.kubernetes.io/revision': '7', 'control-plane.alpha.kubernetes.io/leader': '{"holderIdentity":"a"}', team: 'x' });
    const live = d({ 'deployment.kubernetes.io/revision': '1', 'endpoints.kubernetes.io/last-change-trigger-time': '2026-01-01T00:00:00Z', team: 'x' });
    expect(patchToMatch(live, backedUp, backedUp)).toBeUndefined();
    // A user annotation still counts, and the patch carries it alone.
    expect(patchToMatch(d({ ...live.metadata.annotations, team: 'y' }), backedUp, backedUp, false)).toEqual({ metadata: { annotations: { team: 'x' } } });
    for (const key of CONTROLLER_ANNOTATIONS.keys()) {
      expect(patchToMatch(d({ [key]: 'live' }), d({ [key]: 'backup' }), d({ [key]: 'backup' })), key).toBeUndefined();
      expect(CONTROLLER_ANNOTATIONS.get(key), key).not.toBe('');
    }
    expect(CONTROLLER_ANNOTATIONS.has('autoscaling.alpha.kubernetes.io/metrics')).toBe(false);
    expect(CONTROLLER_ANNOTATIONS.has('autoscaling.alpha.kubernetes.io/behavior')).toBe(false);
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
