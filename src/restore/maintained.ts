// What the cluster's controllers maintain, which a restore neither compares nor writes: the one place
// that lists it, with the reason for each entry (the restore README points here).
//
// 1. Annotations that hold status, or state a controller or the apiserver writes. They are left
//    out of the comparison of an existing object with the backup (so they never make an unchanged
//    object "differ"), and `existingResourcePolicy: update` never sets or removes them. A created
//    object keeps them as backed up: the apiserver and the controllers reset them as they must.
// 2. Whole objects a controller writes from other objects: Endpoints of a Service with a selector,
//    EndpointSlices with a managed-by label, and the kubernetes Service's endpoints. A restore
//    neither creates nor rewrites them: their controller makes them from the cluster as it is
//    (the restored Pods have new IPs), and would overwrite a restored copy anyway.
import type { KubeObject } from '../plugin/api/index.js';
import { isRecord } from './objects.js';

/** Annotation -> why it is status-like. Deliberately absent: annotations that are spec (see below). */
export const CONTROLLER_ANNOTATIONS: ReadonlyMap<string, string> = new Map([
  // autoscaling/v1 has no fields for these parts of an HPA's status, so the apiserver shows them as
  // annotations when an HPA is read at v1; the HPA controller writes them through the status
  // subresource. (autoscaling.alpha.kubernetes.io/metrics and .../behavior are the v2 spec.metrics
  // and spec.behavior at v1: spec, so they are compared and restored.)
  ['autoscaling.alpha.kubernetes.io/conditions', 'status.conditions of an HPA read at autoscaling/v1, written by the HPA controller'],
  ['autoscaling.alpha.kubernetes.io/current-metrics', 'status.currentMetrics of an HPA read at autoscaling/v1, written by the HPA controller'],
  ['deployment.kubernetes.io/revision', 'rollout counter of the deployment controller (Deployments, ReplicaSets): a recreated Deployment starts again at 1'],
  ['deployment.kubernetes.io/revision-history', 'earlier revisions of a ReplicaSet, kept by the deployment controller'],
  ['deployment.kubernetes.io/desired-replicas', 'written on ReplicaSets by the deployment controller for proportional scaling'],
  ['deployment.kubernetes.io/max-replicas', 'written on ReplicaSets by the deployment controller for proportional scaling'],
  ['deprecated.daemonset.template.generation', "a DaemonSet's template generation, set by the apiserver: a recreated DaemonSet starts again at 1"],
  ['endpoints.kubernetes.io/last-change-trigger-time', 'time of the last Pod or Service change, written by the endpoints controller'],
  ['endpoints.kubernetes.io/over-capacity', 'written by the endpoints controller when it truncates an Endpoints object'],
  ['control-plane.alpha.kubernetes.io/leader', 'leader-election record, renewed every few seconds by the current leader'],
  ['pv.kubernetes.io/bind-completed', "the PV controller's binding state of a claim or volume; writing it would tell the binder a bind is done"],
  ['pv.kubernetes.io/bound-by-controller', "the PV controller's binding state of a claim or volume"],
  ['volume.beta.kubernetes.io/storage-provisioner', 'the provisioner the PV controller chose for a claim'],
  ['volume.kubernetes.io/storage-provisioner', 'the provisioner the PV controller chose for a claim'],
  ['volume.kubernetes.io/selected-node', 'the node the scheduler chose for a WaitForFirstConsumer claim'],
  ['batch.kubernetes.io/job-tracking', 'how the job controller tracks a Job\'s Pods'],
]);

/** `annotations` without the controller-maintained ones (a copy; also for undefined). */
export function withoutControllerAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = { ...annotations };
  for (const k of CONTROLLER_ANNOTATIONS.keys()) delete out[k];
  return out;
}

/**
 * Top-level fields of `obj` that a controller writes, left out of the comparison and of updates:
 * the `rules` of a ClusterRole with an `aggregationRule` are the clusterrole-aggregation
 * controller's union of the roles it selects, and change whenever a restore recreates one of them.
 */
export function controllerFields(obj: KubeObject): readonly string[] {
  const rbac = obj.kind === 'ClusterRole' && (obj.apiVersion ?? '').startsWith('rbac.authorization.k8s.io/');
  return rbac && isRecord(obj.aggregationRule) ? ['rules'] : [];
}

/** The label that names the controller of an EndpointSlice (the endpointslice and mirroring controllers, service meshes). */
export const ENDPOINTSLICE_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** A Service as the check needs it: whether it has a selector, so the endpoints controller fills its Endpoints. */
export function hasSelector(service: KubeObject): boolean {
  const spec = service.spec;
  return isRecord(spec) && isRecord(spec.selector) && Object.keys(spec.selector).length > 0;
}

const API_SERVER = "maintained by the API server: the kubernetes Service's endpoints are the API servers' own addresses; left to it";

/**
 * Why a controller maintains `obj` (an item of `groupResource`, as backed up, restored into
 * `namespace`), as the reason the restore skips it; undefined when the restore handles it like any
 * other item. For Endpoints, `serviceSelects` says whether the Service of the same name the cluster
 * will have (the one restored, or else the live one) has a selector; it is only called for Endpoints.
 */
export async function maintainedBy(groupResource: string, obj: KubeObject, namespace: string, serviceSelects: () => Promise<boolean>): Promise<string | undefined> {
  const { name } = obj.metadata;
  if (groupResource === 'endpoints') {
    if (namespace === 'default' && name === 'kubernetes') return API_SERVER;
    if (await serviceSelects()) return `maintained by the endpoints controller, which writes them from the cluster's Pods (Service ${name} has a selector); left to it`;
    return undefined;
  }
  if (groupResource === 'endpointslices.discovery.k8s.io') {
    const labels = obj.metadata.labels ?? {};
    if (namespace === 'default' && labels[SERVICE_NAME_LABEL] === 'kubernetes') return API_SERVER;
    const by = labels[ENDPOINTSLICE_MANAGED_BY];
    if (by !== undefined && by !== '') return `maintained by ${by} (its ${ENDPOINTSLICE_MANAGED_BY} label), which writes it from the cluster as it is; left to it`;
  }
  return undefined;
}
