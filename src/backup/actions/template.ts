// Built-in actions on pod specs (a Pod's or a workload's template): the PriorityClass and
// RuntimeClass it names (cluster-scoped, so a namespace backup would lack them), and a
// StatefulSet's volume claim templates' StorageClasses.
import { claimTemplateClasses, GR, podClassesOf, POD_SPEC_RESOURCES } from '../../kube/references.js';
import { clusterDependency, dependencyAction, itemName, type Dependency } from './dependency.js';

export const podClassesAction = dependencyAction(POD_SPEC_RESOURCES, (item) => {
  const { priorityClass, runtimeClass } = podClassesOf(item);
  const out: Dependency[] = [];
  if (priorityClass !== undefined) out.push(clusterDependency(GR.priorityClasses, priorityClass, `PriorityClass "${priorityClass}" is named by ${itemName(item)}`));
  if (runtimeClass !== undefined) out.push(clusterDependency(GR.runtimeClasses, runtimeClass, `RuntimeClass "${runtimeClass}" is named by ${itemName(item)}`));
  return out;
});

export const statefulSetStorageClassesAction = dependencyAction([GR.statefulSets], (item) =>
  // A class named only to match static volumes may have no object, as with PersistentVolumes.
  claimTemplateClasses(item).map(({ template, storageClass }) =>
    clusterDependency(GR.storageClasses, storageClass, `StorageClass "${storageClass}" is the class of volume claim template "${template}" of ${itemName(item)}`, true)),
);
