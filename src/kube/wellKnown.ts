// Coordinates of the built-in resources Stowage itself reads or writes.
import type { ResourceRef } from './resources.js';

export const CORE = {
  namespaces: { group: '', version: 'v1', resource: 'namespaces', namespaced: false },
  events: { group: '', version: 'v1', resource: 'events', namespaced: true },
  secrets: { group: '', version: 'v1', resource: 'secrets', namespaced: true },
  configMaps: { group: '', version: 'v1', resource: 'configmaps', namespaced: true },
  pods: { group: '', version: 'v1', resource: 'pods', namespaced: true },
  services: { group: '', version: 'v1', resource: 'services', namespaced: true },
  serviceAccounts: { group: '', version: 'v1', resource: 'serviceaccounts', namespaced: true },
  persistentVolumes: { group: '', version: 'v1', resource: 'persistentvolumes', namespaced: false },
  persistentVolumeClaims: { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true },
} as const satisfies Record<string, ResourceRef>;

export const LEASES = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespaced: true } as const satisfies ResourceRef;

export const CUSTOM_RESOURCE_DEFINITIONS = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
  namespaced: false,
} as const satisfies ResourceRef;

export const SUBJECT_ACCESS_REVIEWS = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews', namespaced: false } as const satisfies ResourceRef;
