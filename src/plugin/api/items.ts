/** A Kubernetes object as JSON. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/** Names an item: its group-resource (`deployments.apps`, `configmaps`), namespace and name. */
export interface ResourceIdentifier {
  groupResource: string;
  namespace: string;
  name: string;
}

/** Which items an action applies to. Empty lists mean "all"; names use group-resource form. */
export interface ResourceSelector {
  includedNamespaces: string[];
  excludedNamespaces: string[];
  includedResources: string[];
  excludedResources: string[];
  /** A label selector in string form (`app=web,tier!=db`), or '' for none. */
  labelSelector: string;
}
