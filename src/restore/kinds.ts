// Resources a restore never creates, whatever the filters say, and why. The list is documented
// here and in the restore's log: an item of one of these resources is left out with its reason.
import { GROUP } from '../apis/v1/index.js';
import { splitGroupResource } from '../archive/index.js';

/** Never restored, by group-resource, with the reason given in the restore log. */
export const NEVER_RESTORED: Readonly<Record<string, string>> = {
  nodes: 'nodes belong to the target cluster, not to the workloads being restored',
  events: 'events are a transient record of what happened, not state to bring back',
  'events.events.k8s.io': 'events are a transient record of what happened, not state to bring back',
  componentstatuses: 'component statuses are computed by the apiserver on read',
  'nodes.metrics.k8s.io': 'metrics are computed on read',
  'pods.metrics.k8s.io': 'metrics are computed on read',
  // Node-bound: each names a node of the source cluster, and the target's kubelets and attach/detach
  // controller write their own.
  'csinodes.storage.k8s.io': "CSINodes are written by each node's kubelet for the drivers on that node; they belong to the target cluster's nodes",
  'volumeattachments.storage.k8s.io': "VolumeAttachments record a volume attached to a node of the source cluster; the target cluster's attach/detach controller creates its own",
};

/**
 * Why a resource is never restored, or undefined when it may be. Besides NEVER_RESTORED, every
 * resource of Stowage's own group (backups, restores, schedules, deletebackuprequests,
 * downloadrequests, serverstatusrequests, backupstoragelocations, volumesnapshotlocations) is left
 * out: restoring a Restore or DeleteBackupRequest would replay it, and Backups come back through
 * backup sync from object storage instead.
 */
export function neverRestoredReason(groupResource: string): string | undefined {
  const fixed = Object.hasOwn(NEVER_RESTORED, groupResource) ? NEVER_RESTORED[groupResource] : undefined;
  if (fixed !== undefined) return fixed;
  if (splitGroupResource(groupResource).group === GROUP) {
    return `${GROUP} objects are Stowage's own records; backups return through backup sync and the rest would replay old requests`;
  }
  return undefined;
}
