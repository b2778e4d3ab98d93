// The CSI stack the volume-snapshot feature relies on (scripts/node/csi.ts), proved on the real node
// with nothing of Stowage in the loop: provisioning, a pod's bytes, a dynamic snapshot, a static
// restore into another namespace and class, the driver's test knobs, and deletion through the
// VolumeSnapshotContents' policy reaching the data on the host.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  CSI_DRIVER, CSI_KNOB_CLASSES, CSI_KNOBS, CSI_SNAPSHOT_CLASS, CSI_STORAGE_CLASS, CSI_STORAGE_CLASS_B, VELERO_SNAPSHOT_CLASS_LABEL,
} from '../../scripts/node/csi.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { claimBound, csiStack, idleContainer, inCluster, kubectl, kubectlOk, podReady, timed } from './context.js';

const GROUP = 'snapshot.storage.k8s.io';
/** The snapshot-controller's finalizer on bound contents; a content made to be deleted must carry it (scripts/csi/README.md). */
const VSC_PROTECTION_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection';

interface SnapshotStatus {
  readyToUse?: boolean;
  boundVolumeSnapshotContentName?: string;
  creationTime?: string;
  restoreSize?: string;
  error?: { message?: string };
}
interface VolumeSnapshot {
  metadata: { name: string; namespace: string };
  status?: SnapshotStatus;
}
interface VolumeSnapshotContent {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { deletionPolicy: string; driver: string };
  status?: { readyToUse?: boolean; snapshotHandle?: string; restoreSize?: number; creationTime?: number; error?: { message?: string } };
}

function custom(): k8s.CustomObjectsApi {
  return inCluster().kc.makeApiClient(k8s.CustomObjectsApi);
}

async function readVs(namespace: string, name: string): Promise<VolumeSnapshot> {
  return (await custom().getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace, plural: 'volumesnapshots', name })) as VolumeSnapshot;
}

async function readVsc(name: string): Promise<VolumeSnapshotContent | undefined> {
  try {
    return (await custom().getClusterCustomObject({ group: GROUP, version: 'v1', plural: 'volumesnapshotcontents', name })) as VolumeSnapshotContent;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** Waits for readyToUse and returns the snapshot with the content it is bound to; the driver's logs if it never is. */
async function readySnapshot(namespace: string, name: string): Promise<{ vs: VolumeSnapshot; vsc: VolumeSnapshotContent }> {
  return waitUntil(`VolumeSnapshot ${namespace}/${name} readyToUse`, async () => {
    const vs = await readVs(namespace, name);
    const content = vs.status?.boundVolumeSnapshotContentName;
    if (vs.status?.readyToUse !== true || content === undefined) return undefined;
    const vsc = await readVsc(content);
    return vsc?.status?.snapshotHandle === undefined ? undefined : { vs, vsc };
  }, 120_000, 250).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${csiStack().logs()}`);
  });
}

function volumeSnapshot(namespace: string, name: string, source: { pvc: string; className: string } | { content: string }): string {
  const spec = 'pvc' in source
    ? { volumeSnapshotClassName: source.className, source: { persistentVolumeClaimName: source.pvc } }
    : { source: { volumeSnapshotContentName: source.content } };
  return JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'VolumeSnapshot', metadata: { namespace, name }, spec });
}

function pvc(namespace: string, name: string, storageClassName: string, dataSource?: string): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace, name },
    spec: {
      storageClassName, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } },
      ...(dataSource === undefined ? {} : { dataSource: { apiGroup: GROUP, kind: 'VolumeSnapshot', name: dataSource } }),
    },
  });
}

/** A busybox pod with the claim at /data; it ends at once on SIGTERM. */
function pod(namespace: string, name: string, claim: string, readOnly = false): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name, labels: { app: name } },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [idleContainer('c', [{ name: 'data', mountPath: '/data' }])],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim, readOnly } }],
    },
  });
}

async function boundPv(namespace: string, claim: string): Promise<k8s.V1PersistentVolume> {
  const bound = await claimBound(namespace, claim);
  return inCluster().core.readPersistentVolume({ name: bound.spec?.volumeName ?? '' });
}

export function csiStackSuite(): void {
  describe('csi stack: the test driver with csi-provisioner, csi-snapshotter and snapshot-controller on the real node', () => {
    // 48 KiB of random bytes as base64 text, so kubectl exec carries them unchanged.
    const blob = crypto.randomBytes(48 * 1024).toString('base64');
    const blobSha = crypto.createHash('sha256').update(blob).digest('hex');
    let srcNs = '';
    let handle = '';

    it('registers the driver on the node, and a PVC on stowage-csi is provisioned and a pod writes bytes to it', async () => {
      const { kc, cluster } = inCluster();
      const csiNode = await kc.makeApiClient(k8s.StorageV1Api).readCSINode({ name: cluster.node.name });
      expect(csiNode.spec.drivers.map((d) => [d.name, d.nodeID])).toContainEqual([CSI_DRIVER, cluster.node.name]);

      srcNs = uniqueName('csi-src');
      kubectlOk(['create', 'namespace', srcNs]);
      kubectlOk(['apply', '-f', '-'], `${pvc(srcNs, 'data', CSI_STORAGE_CLASS)}\n${pod(srcNs, 'writer', 'data')}`);
      const pv = await timed('csi: PVC provisioned and bound', () => boundPv(srcNs, 'data'));
      expect(pv.spec?.csi?.driver).toBe(CSI_DRIVER);
      expect(pv.spec?.storageClassName).toBe(CSI_STORAGE_CLASS);
      await timed('csi: pod with the volume Ready', () => podReady(srcNs, 'app=writer', 1));
      kubectlOk(['exec', '-i', '-n', srcNs, 'writer', '--', 'sh', '-c', 'mkdir -p /data/sub && cat > /data/sub/blob && chown 1234:2345 /data/sub/blob && echo hello > /data/hello && sync'], blob);
      expect(kubectlOk(['exec', '-n', srcNs, 'writer', '--', 'sha256sum', '/data/sub/blob']).split(' ')[0]).toBe(blobSha);
      // The pod's /data is the driver's directory for this volume on the host.
      expect(fs.readFileSync(path.join(csiStack().volumeDir(pv.spec?.csi?.volumeHandle ?? ''), 'sub', 'blob'), 'utf8')).toBe(blob);
    }, 300_000);

    it('a VolumeSnapshot of it with the Velero-labelled class becomes readyToUse, with a handle, size and time', async () => {
      const cls = await custom().getClusterCustomObject({ group: GROUP, version: 'v1', plural: 'volumesnapshotclasses', name: CSI_SNAPSHOT_CLASS }) as { metadata: { labels?: Record<string, string> }; deletionPolicy: string; driver: string };
      expect(cls.metadata.labels?.[VELERO_SNAPSHOT_CLASS_LABEL]).toBe('true');
      expect([cls.driver, cls.deletionPolicy]).toEqual([CSI_DRIVER, 'Delete']);

      kubectlOk(['apply', '-f', '-'], volumeSnapshot(srcNs, 'snap', { pvc: 'data', className: CSI_SNAPSHOT_CLASS }));
      const { vs, vsc } = await timed('csi: dynamic snapshot readyToUse', () => readySnapshot(srcNs, 'snap'));
      handle = vsc.status?.snapshotHandle ?? '';
      expect(handle).toMatch(/^snap-[0-9a-f]{20}$/);
      expect(vsc.spec.deletionPolicy).toBe('Delete');
      // The restore size is the source volume's capacity (1Mi).
      expect(vsc.status?.restoreSize).toBe(1024 * 1024);
      expect(vs.status?.restoreSize).toBe('1Mi');
      expect(Math.abs(Date.parse(vs.status?.creationTime ?? '') - Date.now())).toBeLessThan(5 * 60_000);
      expect(csiStack().snapshotExists(handle)).toBe(true);
    }, 300_000);

    it('a static content (the handle, Retain) and a VolumeSnapshot bound to it give a PVC of the other class in another namespace whose pod reads the exact bytes', async () => {
      const ns = uniqueName('csi-restore');
      const content = uniqueName('csi-static');
      kubectlOk(['create', 'namespace', ns]);
      kubectlOk(['apply', '-f', '-'], [
        JSON.stringify({
          apiVersion: `${GROUP}/v1`, kind: 'VolumeSnapshotContent', metadata: { name: content },
          spec: {
            deletionPolicy: 'Retain', driver: CSI_DRIVER, volumeSnapshotClassName: CSI_SNAPSHOT_CLASS, sourceVolumeMode: 'Filesystem',
            source: { snapshotHandle: handle }, volumeSnapshotRef: { namespace: ns, name: 'restored' },
          },
        }),
        volumeSnapshot(ns, 'restored', { content }),
        pvc(ns, 'data', CSI_STORAGE_CLASS_B, 'restored'),
        pod(ns, 'reader', 'data'),
      ].join('\n---\n'));
      const { vsc } = await timed('csi: static snapshot readyToUse', () => readySnapshot(ns, 'restored'));
      expect([vsc.metadata.name, vsc.status?.snapshotHandle]).toEqual([content, handle]);
      const pv = await timed('csi: PVC from the snapshot bound', () => boundPv(ns, 'data'));
      expect(pv.spec?.storageClassName).toBe(CSI_STORAGE_CLASS_B);
      await timed('csi: reader pod Ready', () => podReady(ns, 'app=reader', 1));
      expect(kubectlOk(['exec', '-n', ns, 'reader', '--', 'cat', '/data/sub/blob'])).toBe(blob);
      expect(kubectlOk(['exec', '-n', ns, 'reader', '--', 'cat', '/data/hello'])).toBe('hello\n');
      expect(kubectlOk(['exec', '-n', ns, 'reader', '--', 'stat', '-c', '%u:%g', '/data/sub/blob']).trim()).toBe('1234:2345');

      // A read-only claim in a second pod: the driver remounts its bind mount read-only.
      kubectlOk(['apply', '-f', '-'], pod(ns, 'viewer', 'data', true));
      await podReady(ns, 'app=viewer', 1);
      expect(kubectlOk(['exec', '-n', ns, 'viewer', '--', 'cat', '/data/hello'])).toBe('hello\n');
      const write = kubectl(['exec', '-n', ns, 'viewer', '--', 'sh', '-c', 'echo x > /data/hello']);
      expect(write.status).not.toBe(0);
      expect(write.stderr).toContain('Read-only file system');
      kubectlOk(['delete', 'namespace', ns, '--wait=false']);
    }, 300_000);

    it('the fail knob: the VolumeSnapshot gets status.error.message with the driver\'s message and never becomes ready', async () => {
      const refuses = CSI_KNOB_CLASSES.refuses;
      kubectlOk(['apply', '-f', '-'], volumeSnapshot(srcNs, 'refused', { pvc: 'data', className: refuses.name }));
      const message = await waitUntil('VolumeSnapshot refused has status.error', async () => (await readVs(srcNs, 'refused')).status?.error?.message, 120_000, 250);
      expect(message).toContain(refuses.parameters[CSI_KNOBS.fail]);
      expect((await readVs(srcNs, 'refused')).status?.readyToUse).not.toBe(true);
    }, 300_000);

    it('a claim for a block volume is refused by the driver: its directories are file systems only', async () => {
      kubectlOk(['apply', '-f', '-'], JSON.stringify({
        apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace: srcNs, name: 'block' },
        spec: { storageClassName: CSI_STORAGE_CLASS, volumeMode: 'Block', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
      }));
      const message = await waitUntil('a ProvisioningFailed event on PVC block', async () => {
        const list = await inCluster().core.listNamespacedEvent({ namespace: srcNs, fieldSelector: 'involvedObject.name=block,reason=ProvisioningFailed' });
        return list.items[0]?.message;
      }, 120_000, 250);
      expect(message).toContain('block volumes are not supported');
      expect((await inCluster().core.readNamespacedPersistentVolumeClaim({ namespace: srcNs, name: 'block' })).status?.phase).toBe('Pending');
    }, 300_000);

    it('the ready-after knob keeps a snapshot readyToUse=false for that long, then it becomes ready', async () => {
      const cls = uniqueName('stowage-csi-after');
      kubectlOk(['apply', '-f', '-'], [
        JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'VolumeSnapshotClass', metadata: { name: cls }, driver: CSI_DRIVER, deletionPolicy: 'Delete', parameters: { [CSI_KNOBS.readyAfter]: '15s' } }),
        volumeSnapshot(srcNs, 'later', { pvc: 'data', className: cls }),
      ].join('\n---\n'));
      // Cut (it has a content with a handle) but not ready.
      const cut = await waitUntil('VolumeSnapshot later cut', async () => {
        const vs = await readVs(srcNs, 'later');
        const vsc = vs.status?.boundVolumeSnapshotContentName === undefined ? undefined : await readVsc(vs.status.boundVolumeSnapshotContentName);
        return vsc?.status?.snapshotHandle === undefined ? undefined : vsc;
      }, 120_000, 250);
      expect(cut.status?.readyToUse).toBe(false);
      const { vsc } = await readySnapshot(srcNs, 'later');
      const readySeen = Date.now();
      // creationTime is in nanoseconds since the epoch.
      expect(readySeen - (vsc.status?.creationTime ?? 0) / 1e6).toBeGreaterThanOrEqual(15_000);
      kubectlOk(['delete', 'volumesnapshotclass', cls]);
    }, 300_000);

    it('deleting a VolumeSnapshot whose content has policy Delete removes the snapshot\'s data on the host', async () => {
      kubectlOk(['apply', '-f', '-'], volumeSnapshot(srcNs, 'doomed', { pvc: 'data', className: CSI_SNAPSHOT_CLASS }));
      const { vsc } = await readySnapshot(srcNs, 'doomed');
      const doomed = vsc.status?.snapshotHandle ?? '';
      expect(csiStack().snapshotExists(doomed)).toBe(true);
      kubectlOk(['delete', 'volumesnapshot', '-n', srcNs, 'doomed', '--wait=false']);
      await waitUntil(`VolumeSnapshotContent ${vsc.metadata.name} gone`, async () => (await readVsc(vsc.metadata.name)) === undefined ? true : undefined, 120_000, 250);
      expect(csiStack().snapshotExists(doomed)).toBe(false);
    }, 300_000);

    it('deleting a static Delete-policy VolumeSnapshotContent (as a backup deletion does) removes the data only with the protection finalizer; a marker makes it fail until removed', async () => {
      // The handle cut above, restored from already: contents only, their VolumeSnapshot never made.
      const staticContent = async (name: string, finalizers: string[]): Promise<void> => {
        kubectlOk(['apply', '-f', '-'], JSON.stringify({
          apiVersion: `${GROUP}/v1`, kind: 'VolumeSnapshotContent', metadata: { name, finalizers },
          spec: { deletionPolicy: 'Delete', driver: CSI_DRIVER, source: { snapshotHandle: handle }, volumeSnapshotRef: { namespace: srcNs, name: 'never-made' } },
        }));
        // Deleting before the sidecar has read the snapshot's status would delete nothing (it needs status.snapshotHandle).
        await waitUntil(`VolumeSnapshotContent ${name} readyToUse`, async () => (await readVsc(name))?.status?.readyToUse === true ? true : undefined, 120_000, 250);
      };
      const gone = (name: string): Promise<true> =>
        waitUntil(`VolumeSnapshotContent ${name} gone`, async () => (await readVsc(name)) === undefined ? true : undefined, 120_000, 250);

      // Unbound, nothing puts the finalizer on: the API server removes the object at once and DeleteSnapshot is never called.
      const bare = uniqueName('csi-bare');
      await staticContent(bare, []);
      kubectlOk(['delete', 'volumesnapshotcontent', bare, '--wait=false']);
      await gone(bare);
      expect(csiStack().snapshotExists(handle)).toBe(true);

      const content = uniqueName('csi-delete');
      await staticContent(content, [VSC_PROTECTION_FINALIZER]);
      csiStack().makeUndeletable(handle, 'stowage.test driver: held by a test');
      kubectlOk(['delete', 'volumesnapshotcontent', content, '--wait=false']);
      // The csi-snapshotter reports a failed DeleteSnapshot as an event on the content, which stays.
      await waitUntil(`a SnapshotDeleteError event on ${content}`, async () => {
        const list = await inCluster().core.listEventForAllNamespaces({ fieldSelector: `involvedObject.name=${content},reason=SnapshotDeleteError` });
        return list.items.length > 0 ? true : undefined;
      }, 120_000, 250);
      expect((await readVsc(content))?.metadata.deletionTimestamp).toBeDefined();
      expect(csiStack().snapshotExists(handle)).toBe(true);

      csiStack().makeDeletable(handle);
      await gone(content);
      expect(csiStack().snapshotExists(handle)).toBe(false);
    }, 300_000);

    it('the undeletable class: deleting its snapshot leaves the content and the data, with a SnapshotDeleteError event', async () => {
      const { name } = CSI_KNOB_CLASSES.undeletable;
      kubectlOk(['apply', '-f', '-'], volumeSnapshot(srcNs, 'kept', { pvc: 'data', className: name }));
      const { vsc } = await readySnapshot(srcNs, 'kept');
      kubectlOk(['delete', 'volumesnapshot', '-n', srcNs, 'kept', '--wait=false']);
      await waitUntil(`a SnapshotDeleteError event on ${vsc.metadata.name}`, async () => {
        const list = await inCluster().core.listEventForAllNamespaces({ fieldSelector: `involvedObject.name=${vsc.metadata.name},reason=SnapshotDeleteError` });
        return list.items.length > 0 ? true : undefined;
      }, 120_000, 250);
      expect((await readVsc(vsc.metadata.name))?.metadata.deletionTimestamp).toBeDefined();
      expect(csiStack().snapshotExists(vsc.status?.snapshotHandle ?? '')).toBe(true);
      // Its VolumeSnapshot and content stay (terminating) until the cluster goes: the snapshot cannot be deleted.
      kubectlOk(['delete', 'namespace', srcNs, '--wait=false']);
    }, 300_000);
  });
}
