// The parts of metav1.ObjectMeta Stowage reads or writes. Type aliases (not interfaces) so these
// objects stay assignable to index-signature types such as plugin/api's KubeObject.

export type OwnerReference = {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
};

export type ObjectMeta = {
  /** Empty when creating with generateName; the apiserver fills it in. */
  name: string;
  namespace?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [k: string]: unknown;
};

export type ListMeta = {
  resourceVersion?: string;
  continue?: string;
};
