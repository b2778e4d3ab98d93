// Public surface of kube/: kubeconfig loading, the dynamic client, errors, events, CRD install.
export { loadKubeConfig } from './config.js';
export {
  createDynamicClient,
  type ClientOptions,
  type DeleteOptions,
  type DiscoverOptions,
  type DynamicClient,
  type Impersonation,
  impersonationHeaders,
  type ListOptions,
  type ListPage,
  type PatchOptions,
  type PatchType,
  type RawRequest,
  type ServerVersion,
  type WatchEvent,
  type WatchEventType,
  type WatchOptions,
  type WriteOptions,
} from './client.js';
export {
  KubeError,
  describeTarget,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTransient,
  type RequestTarget,
  type Status,
} from './errors.js';
export { createTokenBucket, type RateLimiter, type TokenBucketOptions } from './rateLimiter.js';
export { apiVersionOf, groupResourceOf, resolveResource, resourcePath, servedVersions, type ApiResource, type KubeObject, type ResourceRef } from './resources.js';
export { chooseVersion, compareVersionPriority } from './versions.js';
export { createEventRecorder, recordEvent, type EventRecorder, type EventRecorderOptions, type EventType, type InvolvedObject } from './events.js';
export { ensureCrds } from './crds.js';
export { isApiUnreachable } from './outage.js';
export { CORE, CUSTOM_RESOURCE_DEFINITIONS, LEASES, SUBJECT_ACCESS_REVIEWS } from './wellKnown.js';
