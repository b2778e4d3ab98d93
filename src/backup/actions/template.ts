// The pod spec of a Pod or of a workload's pod template, and the built-in actions on it: the
// PriorityClass and RuntimeClass it names (cluster-scoped, so a namespace backup would lack them),
// and a StatefulSet's volume claim templates' StorageClasses.
import type { KubeObject } from '../../plugin/api/index.js';
import { clusterDependency, dependencyAction, GR, itemName, type Dependency } from './dependency.js';
import { field, stringField } from './selector.js';

/** Resources that hold a pod spec, by group-resource (any served version: cronjobs at batch/v1beta1 or v1). */
export const POD_SPEC_RESOURCES: readonly string[] = [
  'pods', 'podtemplates', 'replicationcontrollers', 'deployments.apps', 'statefulsets.apps', 'daemonsets.apps',
  'replicasets.apps', 'jobs.batch', 'cronjobs.batch',
];

/** The item's pod spec: `spec` of a Pod, `template.spec` of a PodTemplate, the job template's of a CronJob, else `spec.template.spec`. */
export function podSpecOf(item: KubeObject): unknown {
  switch (item.kind) {
    case 'Pod':
      return field(item, 'spec');
    case 'PodTemplate':
      return field(item, 'template', 'spec');
    case 'CronJob':
      return field(item, 'spec', 'jobTemplate', 'spec', 'template', 'spec');
    default:
      return field(item, 'spec', 'template', 'spec');
  }
}

export const podClassesAction = dependencyAction(POD_SPEC_RESOURCES, (item) => {
  const spec = podSpecOf(item);
  const out: Dependency[] = [];
  const priority = stringField(spec, 'priorityClassName');
  if (priority !== undefined) out.push(clusterDependency(GR.priorityClasses, priority, `PriorityClass "${priority}" is named by ${itemName(item)}`));
  const runtime = stringField(spec, 'runtimeClassName');
  if (runtime !== undefined) out.push(clusterDependency(GR.runtimeClasses, runtime, `RuntimeClass "${runtime}" is named by ${itemName(item)}`));
  return out;
});

/** The beta annotation older manifests still use in place of storageClassName. */
export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

/** A claim's or volume's class: spec.storageClassName, else the beta annotation; undefined for '' (no class). */
export function storageClassOf(obj: unknown): string | undefined {
  return stringField(obj, 'spec', 'storageClassName') ?? stringField(obj, 'metadata', 'annotations', BETA_STORAGE_CLASS_ANNOTATION);
}

export const statefulSetStorageClassesAction = dependencyAction(['statefulsets.apps'], (item) => {
  const templates = field(item, 'spec', 'volumeClaimTemplates');
  const out: Dependency[] = [];
  for (const t of Array.isArray(templates) ? templates : []) {
    const sc = storageClassOf(t);
    if (sc === undefined) continue;
    const claim = stringField(t, 'metadata', 'name') ?? '';
    // A class named only to match static volumes may have no object, as with PersistentVolumes.
    out.push(clusterDependency(GR.storageClasses, sc, `StorageClass "${sc}" is the class of volume claim template "${claim}" of ${itemName(item)}`, true));
  }
  return out;
});
