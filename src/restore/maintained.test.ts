import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../plugin/api/index.js';
import { ENDPOINTSLICE_MANAGED_BY, hasSelector, maintainedBy, withoutControllerAnnotations } from './maintained.js';

const o = (apiVersion: string, kind: string, namespace: string, name: string, labels?: Record<string, string>, rest: Record<string, unknown> = {}): KubeObject => ({
  apiVersion, kind, metadata: { name, namespace, ...(labels !== undefined ? { labels } : {}) }, ...rest,
});

describe('maintainedBy', () => {
  const never = (): Promise<boolean> => Promise.reject(new Error('the Service is only asked about for Endpoints'));

  it('leaves the Endpoints of a Service with a selector to the endpoints controller, and restores the others', async () => {
    const ep = o('v1', 'Endpoints', 'app', 'web');
    expect(await maintainedBy('endpoints', ep, 'app', () => Promise.resolve(true))).toBe(
      "maintained by the endpoints controller, which writes them from the cluster's Pods (Service web has a selector); left to it",
    );
    // A Service without a selector (or none at all): its Endpoints are the user's.
    expect(await maintainedBy('endpoints', ep, 'app', () => Promise.resolve(false))).toBeUndefined();
  });

  it("leaves the kubernetes Service's endpoints to the API server", async () => {
    expect(await maintainedBy('endpoints', o('v1', 'Endpoints', 'default', 'kubernetes'), 'default', never)).toContain('maintained by the API server');
    const slice = o('discovery.k8s.io/v1beta1', 'EndpointSlice', 'default', 'kubernetes', { 'kubernetes.io/service-name': 'kubernetes' });
    expect(await maintainedBy('endpointslices.discovery.k8s.io', slice, 'default', never)).toContain('maintained by the API server');
    // Restored into another namespace, they are an ordinary Service's: what counts is where they go.
    expect(await maintainedBy('endpoints', o('v1', 'Endpoints', 'default', 'kubernetes'), 'copy', () => Promise.resolve(false))).toBeUndefined();
  });

  it('leaves EndpointSlices with a managed-by label to that controller, and restores hand-made ones', async () => {
    const managed = o('discovery.k8s.io/v1beta1', 'EndpointSlice', 'app', 'web-x1', { [ENDPOINTSLICE_MANAGED_BY]: 'endpointslice-controller.k8s.io', 'kubernetes.io/service-name': 'web' });
    expect(await maintainedBy('endpointslices.discovery.k8s.io', managed, 'app', never)).toBe(
      `maintained by endpointslice-controller.k8s.io (its ${ENDPOINTSLICE_MANAGED_BY} label), which writes it from the cluster as it is; left to it`,
    );
    const handMade = o('discovery.k8s.io/v1beta1', 'EndpointSlice', 'app', 'ext', { 'kubernetes.io/service-name': 'ext' });
    expect(await maintainedBy('endpointslices.discovery.k8s.io', handMade, 'app', never)).toBeUndefined();
  });

  it('says nothing of other kinds', async () => {
    expect(await maintainedBy('configmaps', o('v1', 'ConfigMap', 'default', 'kubernetes', { [ENDPOINTSLICE_MANAGED_BY]: 'x' }), 'default', never)).toBeUndefined();
  });
});

describe('hasSelector', () => {
  it('is true only for a non-empty spec.selector', () => {
    expect(hasSelector(o('v1', 'Service', 'a', 's', undefined, { spec: { selector: { app: 'web' } } }))).toBe(true);
    expect(hasSelector(o('v1', 'Service', 'a', 's', undefined, { spec: { selector: {} } }))).toBe(false);
    expect(hasSelector(o('v1', 'Service', 'a', 's', undefined, { spec: { ports: [] } }))).toBe(false);
  });
});

describe('withoutControllerAnnotations', () => {
  it('drops the status-like annotations and keeps the rest, without changing its input', () => {
    const a = { 'deployment.kubernetes.io/revision': '3', 'autoscaling.alpha.kubernetes.io/metrics': '[]', team: 'x' };
    expect(withoutControllerAnnotations(a)).toEqual({ 'autoscaling.alpha.kubernetes.io/metrics': '[]', team: 'x' });
    expect(a['deployment.kubernetes.io/revision']).toBe('3');
    expect(withoutControllerAnnotations(undefined)).toEqual({});
  });
});
