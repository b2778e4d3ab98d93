// Volume data through CSI snapshots (issue 37), on the real node with the CSI test stack
// (scripts/node/csi.ts): the in-process server (test/support/inProcessServer.ts) runs against the
// real cluster, so a backup really snapshots a StatefulSet's volumes, the namespace is really
// deleted, and a restore really brings the bytes back to pods that read them. Validation-only
// cases are unit tests (src/volumes, src/restore/actions/csi.test.ts, specCoverage).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CSI_DRIVER, CSI_KNOB_CLASSES, CSI_SNAPSHOT_CLASS, CSI_STORAGE_CLASS, CSI_STORAGE_CLASS_B,
} from '../../scripts/node/csi.js';
import { RESOURCES, newBackup, newDeleteBackupRequest, newRestore, type Backup, type BackupSpec, type DeleteBackupRequest, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester } from '../../src/auth/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import type { RunResults } from '../../src/persistence/results.js';
import { LABEL_SNAPSHOT_BACKUP_UID, LABEL_SNAPSHOT_RESTORE_UID, VOLUME_SNAPSHOT_CONTENTS, VOLUME_SNAPSHOTS, type VolumeSnapshotRecord } from '../../src/volumes/index.js';
import { stringField } from '../../src/kube/references.js';
import { runCli, show } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { waitFinished } from '../support/server.js';
import { claimBound, csiStack, idleContainer, inCluster, kubectlAsync, kubectlOk, log, podReady, suiteStowage, timed } from './context.js';

const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true } as const;
const CLUSTER_ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', namespaced: false } as const;
const CLUSTER_ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', namespaced: false } as const;
/** The requester stamp of a run dave asked for; admin may impersonate anyone, so the admission webhook lets it stand. */
const AS_DAVE = { [REQUESTER_ANNOTATION]: formatRequester({ username: 'dave', uid: 'dave-uid', groups: ['system:authenticated'] }) };
const STATEFUL_SETS = { group: 'apps', version: 'v1', resource: 'statefulsets', namespaced: true } as const;
const CLASS_ANNOTATION = `velero.io/csi-volumesnapshot-class_${CSI_DRIVER}`;

/** A StatefulSet of `replicas` busybox pods, each with its own claim `data-web-<i>` on `storageClass`. */
function statefulSet(namespace: string, replicas: number, storageClass = CSI_STORAGE_CLASS): string {
  return JSON.stringify({
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { namespace, name: 'web' },
    spec: {
      serviceName: 'web', replicas, selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [idleContainer('c', [{ name: 'data', mountPath: '/data' }])],
        },
      },
      volumeClaimTemplates: [{
        metadata: { name: 'data' },
        spec: { storageClassName: storageClass, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
      }],
    },
  });
}

/** A claim on stowage-csi, bound (the provisioner is Immediate): what a snapshot needs, without a pod. */
async function boundClaim(client: DynamicClient, namespace: string, name: string): Promise<void> {
  await client.create(CORE.persistentVolumeClaims, namespace, {
    metadata: { name }, spec: { storageClassName: CSI_STORAGE_CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
  });
  await claimBound(namespace, name);
}

/** Each pod's own bytes: its name and 32 KiB of random base64, written through kubectl exec. */
function writeData(namespace: string, pod: string): string {
  const data = `${pod}\n${crypto.randomBytes(32 * 1024).toString('base64')}\n`;
  kubectlOk(['exec', '-i', '-n', namespace, pod, '--', 'sh', '-c', 'cat > /data/own && sync'], data);
  return data;
}

function readData(namespace: string, pod: string): string {
  return kubectlOk(['exec', '-n', namespace, pod, '--', 'cat', '/data/own']);
}

async function deleteNamespace(namespace: string): Promise<void> {
  await kubectlAsync(['delete', 'namespace', namespace, '--wait=true', '--timeout=180s']);
}

async function contentsOf(client: DynamicClient, backup: Backup): Promise<KubeObject[]> {
  return (await client.listAll(VOLUME_SNAPSHOT_CONTENTS, { labelSelector: `${LABEL_SNAPSHOT_BACKUP_UID}=${backup.metadata.uid ?? ''}` })).items;
}

export function volumeSnapshotsSuite(): void {
  describe('volume snapshots: backups take CSI snapshots, restores bring the data back, deletion removes them', () => {
    // A snapshot that cannot be deleted is named after 15 s, not Velero's minutes.
    const stowage = suiteStowage('stowage-vol', ['--csi-snapshot-delete-timeout', '15s']);
    const ns = stowage.namespace;
    const loc = stowage.location;
    const app = uniqueName('vol-app');
    const written = new Map<string, string>();
    let backup: Backup;

    const results = (name: string): RunResults => JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(loc.root, 'backups', 'backups', name, `${name}-results.gz`))).toString()) as RunResults;
    const resourceList = (name: string): Record<string, string[]> => JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(loc.root, 'backups', 'backups', name, `${name}-resource-list.json.gz`))).toString()) as Record<string, string[]>;

    async function runBackup(name: string, spec: BackupSpec, annotations: Record<string, string> = {}): Promise<Backup> {
      const b = newBackup(name, ns, spec);
      if (Object.keys(annotations).length > 0) b.metadata.annotations = annotations;
      await stowage.client.create(RESOURCES.Backup, ns, b);
      return waitFinished<Backup>(stowage.client, RESOURCES.Backup, ns, name, 300_000);
    }

    async function runRestore(name: string, spec: RestoreSpec, annotations: Record<string, string> = {}): Promise<Restore> {
      const r = newRestore(name, ns, spec);
      if (Object.keys(annotations).length > 0) r.metadata.annotations = annotations;
      await stowage.client.create(RESOURCES.Restore, ns, r);
      return waitFinished<Restore>(stowage.client, RESOURCES.Restore, ns, name, 300_000);
    }

    /** dave may do what ClusterRole `role` grants, in `namespace` (or cluster-wide without one). */
    async function daveMay(role: string, namespace?: string): Promise<void> {
      const body = {
        metadata: { name: `dave-${role}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dave' }],
      };
      await stowage.client.create(namespace === undefined ? CLUSTER_ROLE_BINDINGS : ROLE_BINDINGS, namespace, body);
    }

    /** A new namespace with one bound claim, `data`, on stowage-csi. */
    async function namespaceWithClaim(prefix: string): Promise<string> {
      const n = uniqueName(prefix);
      kubectlOk(['create', 'namespace', n]);
      await boundClaim(stowage.client, n, 'data');
      return n;
    }

    /** A new namespace with one bound claim, and backup `name` of it, Completed: its namespace, the Backup and its claim's snapshot record. */
    async function claimBackedUp(name: string, prefix: string): Promise<{ namespace: string; b: Backup; rec: VolumeSnapshotRecord | undefined }> {
      const namespace = await namespaceWithClaim(prefix);
      const b = await runBackup(name, { includedNamespaces: [namespace] });
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      return { namespace, b, rec: results(name).volumeSnapshots?.[0] };
    }

    /** The one error of backup `b` in `namespace`, once it is checked that b ended PartiallyFailed with 1 snapshot attempted and none kept. */
    function claimFailed(b: Backup, namespace: string): string {
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('PartiallyFailed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([1, 0]);
      const errs = results(b.metadata.name).errors.namespaces[namespace] ?? [];
      expect(errs).toHaveLength(1);
      return errs[0] ?? '';
    }

    async function deleteBackup(name: string): Promise<DeleteBackupRequest> {
      const d = await stowage.client.create<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, ns, newDeleteBackupRequest(name, ns));
      return waitUntil(`DeleteBackupRequest for ${name} Processed`, async () => {
        const cur = await stowage.client.get<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, ns, d.metadata.name);
        return cur.status?.phase === 'Processed' ? cur : undefined;
      }, 300_000, 250);
    }

    beforeAll(async () => {
      kubectlOk(['create', 'namespace', app]);
      kubectlOk(['apply', '-f', '-'], statefulSet(app, 2));
      const pods = await timed('volumes: StatefulSet of 2 with CSI claims Ready', () => podReady(app, 'app=web', 2));
      for (const p of pods) written.set(p.metadata?.name ?? '', writeData(app, p.metadata?.name ?? ''));
      expect([...written.keys()].sort()).toEqual(['web-0', 'web-1']);
    }, 600_000);

    it('backs up a StatefulSet\'s two claims with snapshotVolumes: each snapshot ready, its content kept (Retain), counted and described', async () => {
      backup = await timed('volumes: backup with 2 snapshots', () => runBackup('sts', { includedNamespaces: [app], snapshotVolumes: true, csiSnapshotTimeout: '2m' }));
      expect(backup.status?.phase, JSON.stringify(backup.status)).toBe('Completed');
      expect([backup.status?.csiVolumeSnapshotsAttempted, backup.status?.csiVolumeSnapshotsCompleted]).toEqual([2, 2]);
      const records = results('sts').volumeSnapshots ?? [];
      expect(records.map((r) => `${r.namespace}/${r.persistentVolumeClaim}`).sort()).toEqual([`${app}/data-web-0`, `${app}/data-web-1`]);
      for (const r of records) {
        expect([r.driver, r.volumeSnapshotClass, r.restoreSize]).toEqual([CSI_DRIVER, CSI_SNAPSHOT_CLASS, String(1024 * 1024)]);
        expect(csiStack().snapshotExists(r.snapshotHandle)).toBe(true);
        expect(Math.abs(Date.parse(r.creationTime ?? '') - Date.now())).toBeLessThan(10 * 60_000);
        // The VolumeSnapshot and its content are stored in the backup.
        expect(resourceList('sts')['volumesnapshots.snapshot.storage.k8s.io']).toContain(`${app}/${r.volumeSnapshot}`);
        expect(resourceList('sts')['volumesnapshotcontents.snapshot.storage.k8s.io']).toContain(r.volumeSnapshotContent);
      }
      // Kept: Retain, labelled with the backup's uid; the VolumeSnapshots are gone from the namespace.
      const contents = await contentsOf(stowage.client, backup);
      expect(contents.map((c) => [c.metadata?.name, (c.spec as { deletionPolicy?: string }).deletionPolicy]).sort()).toEqual(
        records.map((r) => [r.volumeSnapshotContent, 'Retain']).sort());
      expect((await stowage.client.listAll(VOLUME_SNAPSHOTS, { namespace: app })).items).toEqual([]);
      expect(stowage.server.output()).toMatch(new RegExp(`persistentvolumeclaims "${app}/data-web-0": snapshot snap-[0-9a-f]+ of 1048576 ready`));
      // stowage backup describe: the counts, and with --details each volume's handle, size and time.
      const described = await runCli(['backup', 'describe', 'sts', '--details'], { kubeconfig: inCluster().cluster.cp.kubeconfigPath, namespace: ns, timeoutMs: 120_000 });
      expect(described.code, show(described)).toBe(0);
      expect(described.stdout).toMatch(/^CSI volume snapshots:\s+2 of 2 completed$/m);
      for (const r of records) {
        expect(described.stdout).toMatch(new RegExp(`^ {2}${app}/${r.persistentVolumeClaim} +${r.snapshotHandle} +1048576 +${(r.creationTime ?? '').replace(/\./g, '\\.')} +${CSI_SNAPSHOT_CLASS} +${r.volumeSnapshotContent}$`, 'm'));
      }
    }, 600_000);

    it('after the namespace is deleted, a restore brings both pods\' own bytes back from the snapshots', async () => {
      await timed('volumes: namespace deleted', () => deleteNamespace(app));
      const r = await timed('volumes: restore of 2 volumes', () => runRestore('sts-back', { backupName: 'sts' }));
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      for (const i of [0, 1]) {
        const pvc = await stowage.client.get<KubeObject & { spec: { dataSource?: { kind: string; name: string }; volumeName?: string } }>(CORE.persistentVolumeClaims, app, `data-web-${i}`);
        expect(pvc.spec.dataSource?.kind).toBe('VolumeSnapshot');
      }
      await timed('volumes: restored pods Ready', () => podReady(app, 'app=web', 2));
      for (const [pod, data] of written) expect(readData(app, pod)).toBe(data);
    }, 600_000);

    it('into a mapped namespace with a storage-class mapping onto stowage-csi-b, the pods read their own bytes too', async () => {
      const mapped = uniqueName('vol-mapped');
      await stowage.client.create(CORE.configMaps, ns, {
        metadata: { name: 'csi-class-map', labels: { 'velero.io/plugin-config': '', 'velero.io/change-storage-class': 'RestoreItemAction' } },
        data: { [CSI_STORAGE_CLASS]: CSI_STORAGE_CLASS_B },
      });
      try {
        const r = await timed('volumes: restore into a mapped namespace and class', () => runRestore('sts-mapped', { backupName: 'sts', namespaceMapping: { [app]: mapped } }));
        expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
        const sts = await stowage.client.get<KubeObject & { spec: { volumeClaimTemplates: { spec: { storageClassName: string } }[] } }>(STATEFUL_SETS, mapped, 'web');
        expect(sts.spec.volumeClaimTemplates[0]?.spec.storageClassName).toBe(CSI_STORAGE_CLASS_B);
        await timed('volumes: mapped pods Ready', () => podReady(mapped, 'app=web', 2));
        for (const [pod, data] of written) expect(readData(mapped, pod)).toBe(data);
        for (const i of [0, 1]) {
          const pvc = await stowage.client.get<KubeObject & { spec: { storageClassName?: string; volumeName?: string } }>(CORE.persistentVolumeClaims, mapped, `data-web-${i}`);
          expect(pvc.spec.storageClassName).toBe(CSI_STORAGE_CLASS_B);
          const pv = await stowage.client.get<KubeObject & { spec: { storageClassName?: string } }>(CORE.persistentVolumes, undefined, pvc.spec.volumeName ?? '');
          expect(pv.spec.storageClassName).toBe(CSI_STORAGE_CLASS_B);
        }
      } finally {
        await stowage.client.delete(CORE.configMaps, ns, 'csi-class-map');
        kubectlOk(['delete', 'namespace', mapped, '--wait=false']);
      }
    }, 600_000);

    it('restorePVs: false restores the claims as new, empty ones and says so', async () => {
      const empty = uniqueName('vol-empty');
      const r = await runRestore('sts-nodata', { backupName: 'sts', namespaceMapping: { [app]: empty }, includedResources: ['persistentvolumeclaims'], restorePVs: false });
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      expect(r.status?.warnings).toBe(2);
      expect(stowage.server.output()).toContain(`persistentvolumeclaims ${empty}/data-web-0: restored without its data (restorePVs is false)`);
      const pvc = await stowage.client.get<KubeObject & { spec: { dataSource?: unknown } }>(CORE.persistentVolumeClaims, empty, 'data-web-0');
      expect(pvc.spec.dataSource).toBeUndefined();
      kubectlOk(['delete', 'namespace', empty, '--wait=false']);
    }, 300_000);

    it('a snapshot not ready within csiSnapshotTimeout fails its claim: PartiallyFailed, named, and its VolumeSnapshot removed', async () => {
      const slow = await namespaceWithClaim('vol-slow');
      const b = await timed('volumes: backup whose snapshot times out (5s)', () => runBackup('slow', { includedNamespaces: [slow], csiSnapshotTimeout: '5s' }, { [CLASS_ANNOTATION]: CSI_KNOB_CLASSES.slow.name }));
      expect(claimFailed(b, slow)).toMatch(new RegExp(`^persistentvolumeclaims ${slow}/data: its snapshot was not ready within csiSnapshotTimeout \\(5s\\): timed out after 5 s waiting for VolumeSnapshot ${slow}/data-[0-9a-f]{10}; readyToUse is false$`));
      await waitUntil('the timed-out VolumeSnapshot gone', async () => ((await stowage.client.listAll(VOLUME_SNAPSHOTS, { namespace: slow })).items.length === 0 ? true : undefined), 60_000, 250);
      kubectlOk(['delete', 'namespace', slow, '--wait=false']);
    }, 300_000);

    it('a driver that refuses fails the claim with the driver\'s message: PartiallyFailed', async () => {
      const refused = await namespaceWithClaim('vol-refused');
      const b = await runBackup('refused', { includedNamespaces: [refused] }, { [CLASS_ANNOTATION]: CSI_KNOB_CLASSES.refuses.name });
      const err = claimFailed(b, refused);
      expect(err).toContain(`persistentvolumeclaims ${refused}/data: its snapshot failed: `);
      expect(err).toContain('stowage.test driver: this volume refuses to be snapshotted');
      kubectlOk(['delete', 'namespace', refused, '--wait=false']);
    }, 300_000);

    it('a requester who may not create VolumeSnapshots in the namespace cannot snapshot it: refused with the API\'s message', async () => {
      const team = await namespaceWithClaim('vol-team');
      await daveMay('edit', team);
      const done = await runBackup('dave', { includedNamespaces: [team] }, AS_DAVE);
      expect(claimFailed(done, team)).toMatch(new RegExp(`^persistentvolumeclaims ${team}/data: not snapshotted: dave .*may not create volumesnapshots\\.snapshot\\.storage\\.k8s\\.io in namespace ${team}: .*User "dave" cannot create resource "volumesnapshots" in API group "snapshot\\.storage\\.k8s\\.io" in the namespace "${team}"`));
      expect((await stowage.client.listAll(VOLUME_SNAPSHOTS, { namespace: team })).items).toEqual([]);
      kubectlOk(['delete', 'namespace', team, '--wait=false']);
    }, 300_000);

    it('a VolumeSnapshot reported ready on a content not bound to it: the content is left alone, and the claim fails naming it', async () => {
      const odd = await namespaceWithClaim('vol-unbound');
      // Someone else's content: bound by name to another VolumeSnapshot, with policy Delete. Without
      // the protection finalizer, deleting it at the end deletes no snapshot (scripts/csi/README.md).
      const decoy = uniqueName('vol-decoy');
      kubectlOk(['apply', '-f', '-'], JSON.stringify({
        apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotContent', metadata: { name: decoy },
        spec: { deletionPolicy: 'Delete', driver: CSI_DRIVER, source: { snapshotHandle: 'snap-of-someone-else' }, volumeSnapshotRef: { namespace: odd, name: 'someone-elses' } },
      }));
      await stowage.client.create(RESOURCES.Backup, ns, { ...newBackup('unbound', ns, { includedNamespaces: [odd], csiSnapshotTimeout: '5m' }), metadata: { name: 'unbound', namespace: ns, annotations: { [CLASS_ANNOTATION]: CSI_KNOB_CLASSES.slow.name } } });
      // The run's snapshot is cut but never ready (the slow class). The test then plays a snapshot
      // controller gone wrong: it reports the snapshot ready, bound to the decoy.
      const vs = await waitUntil('the backup\'s VolumeSnapshot bound to its content', async () => {
        const [x] = (await stowage.client.listAll(VOLUME_SNAPSHOTS, { namespace: odd })).items;
        return stringField(x, 'status', 'boundVolumeSnapshotContentName') !== undefined ? x : undefined;
      }, 120_000, 250);
      kubectlOk(['patch', 'volumesnapshot', '-n', odd, vs?.metadata?.name ?? '', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { readyToUse: true, boundVolumeSnapshotContentName: decoy } })]);
      const b = await waitFinished<Backup>(stowage.client, RESOURCES.Backup, ns, 'unbound', 300_000);
      expect(claimFailed(b, odd)).toBe(`persistentvolumeclaims ${odd}/data: VolumeSnapshotContent ${decoy} is not bound to the VolumeSnapshot this backup created (uid ${vs?.metadata?.uid ?? ''}), so it is left alone`);
      const after = await stowage.client.get<KubeObject & { spec: { deletionPolicy?: string } }>(VOLUME_SNAPSHOT_CONTENTS, undefined, decoy);
      expect([after.spec.deletionPolicy, after.metadata?.labels?.[LABEL_SNAPSHOT_BACKUP_UID]]).toEqual(['Delete', undefined]);
      expect(await contentsOf(stowage.client, b)).toEqual([]);
      await waitUntil('the run\'s VolumeSnapshot deleted', async () => ((await stowage.client.listAll(VOLUME_SNAPSHOTS, { namespace: odd })).items.length === 0 ? true : undefined), 60_000, 250);
      kubectlOk(['delete', 'volumesnapshotcontent', decoy, '--wait=false']);
      kubectlOk(['delete', 'namespace', odd, '--wait=false']);
    }, 300_000);

    it('a requester\'s restore needs create on VolumeSnapshotContents: without it the claim is refused, naming the right; with it (and VolumeSnapshots in the target) the data comes back, and the restore\'s snapshot objects stay', async () => {
      const { namespace: src, b, rec } = await claimBackedUp('req-src', 'vol-req');
      const dst = uniqueName('vol-req-dst');
      kubectlOk(['create', 'namespace', dst]);
      // dave may read the source's claims and write the target's (edit), nothing of the snapshot kinds.
      await daveMay('edit', src);
      await daveMay('edit', dst);
      // Without cluster resources: the claim's StorageClass, a related cluster-scoped item, is not dave's to create (even where it exists, the create is refused first).
      const spec: RestoreSpec = { backupName: 'req-src', includedResources: ['persistentvolumeclaims'], includeClusterResources: false, namespaceMapping: { [src]: dst } };
      const refused = await runRestore('req-refused', spec, AS_DAVE);
      const lines = stowage.server.output().split('\n').filter((l) => l.includes(`restore=${ns}/req-refused`)).join('\n');
      expect(refused.status?.phase, lines).toBe('PartiallyFailed');
      expect(lines).toContain(`its data cannot be restored from snapshot ${rec?.snapshotHandle ?? ''}: dave may not create volumesnapshotcontents.snapshot.storage.k8s.io at the cluster scope, so the claim cannot get its data back: `);
      expect(lines).toContain(`${dst}/data`);
      expect((await inCluster().core.listNamespacedPersistentVolumeClaim({ namespace: dst })).items).toEqual([]);

      // What README.md says a requester needs: create on VolumeSnapshotContents, and create, list and watch on VolumeSnapshots in the target.
      const role = `${ns}-snapshot-restorer`;
      await stowage.client.create(CLUSTER_ROLES, undefined, {
        metadata: { name: role },
        rules: [
          { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotcontents'], verbs: ['create'] },
          { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['create', 'list', 'watch'] },
        ],
      });
      await daveMay(role);
      // A fresh ClusterRoleBinding reaches the API server's RBAC cache within moments: waited for, as the API server answers dave.
      for (const check of [['create', 'volumesnapshotcontents'], ['create', 'volumesnapshots', '-n', dst], ['watch', 'volumesnapshots', '-n', dst]]) {
        await waitUntil(`dave may ${check.join(' ')}`, () => kubectlAsync(['auth', 'can-i', ...check, '--as', 'dave']).then(() => true, () => undefined), 60_000, 250);
      }
      const ok = await runRestore('req-ok', spec, AS_DAVE);
      expect(ok.status?.phase, stowage.server.output().split('\n').filter((l) => l.includes(`restore=${ns}/req-ok`)).join('\n')).toBe('Completed');
      const claim = await claimBound(dst, 'data');
      expect(claim.spec?.dataSource?.kind).toBe('VolumeSnapshot');
      // The restore's VolumeSnapshot and its static content (Retain) stay once the claim has its data.
      const restoreObjects = async (r: Restore, namespace: string): Promise<string[][]> => {
        const label = `${LABEL_SNAPSHOT_RESTORE_UID}=${r.metadata.uid ?? ''}`;
        const snapshots = (await stowage.client.listAll(VOLUME_SNAPSHOTS, { namespace, labelSelector: label })).items.map((v) => ['VolumeSnapshot', v.metadata?.name ?? '']);
        const contents = (await stowage.client.listAll(VOLUME_SNAPSHOT_CONTENTS, { labelSelector: label })).items
          .map((c) => ['VolumeSnapshotContent', stringField(c, 'spec', 'deletionPolicy') ?? '', stringField(c, 'spec', 'source', 'snapshotHandle') ?? '']);
        return [...snapshots, ...contents];
      };
      const handle = rec?.snapshotHandle ?? '';
      expect(await restoreObjects(ok, dst)).toEqual([['VolumeSnapshot', claim.spec?.dataSource?.name], ['VolumeSnapshotContent', 'Retain', handle]]);
      // Deleted as README.md says, they take nothing of the backup with them.
      await kubectlAsync(['delete', 'volumesnapshot,volumesnapshotcontent', '-A', '-l', `${LABEL_SNAPSHOT_RESTORE_UID}=${ok.metadata.uid ?? ''}`, '--wait=true', '--timeout=120s']);
      expect(await restoreObjects(ok, dst)).toEqual([]);
      expect((await contentsOf(stowage.client, b)).length).toBe(1);
      expect(csiStack().snapshotExists(handle)).toBe(true);
      // Deleting the backup deletes its snapshot; another restore's objects stay, naming a snapshot that is gone.
      const dst2 = uniqueName('vol-req-again');
      const again = await runRestore('req-again', { ...spec, namespaceMapping: { [src]: dst2 } });
      expect(again.status?.phase, JSON.stringify(again.status)).toBe('Completed');
      const left = await restoreObjects(again, dst2);
      expect(left).toHaveLength(2);
      expect((await deleteBackup('req-src')).status?.errors ?? []).toEqual([]);
      expect(csiStack().snapshotExists(handle)).toBe(false);
      expect(await restoreObjects(again, dst2)).toEqual(left);
      kubectlOk(['delete', 'volumesnapshotcontent', '-l', `${LABEL_SNAPSHOT_RESTORE_UID}=${again.metadata.uid ?? ''}`, '--wait=false']);
      await stowage.client.delete(CLUSTER_ROLES, undefined, role);
      kubectlOk(['delete', 'namespace', src, dst, dst2, '--wait=false']);
    }, 600_000);

    it('a Velero Backup manifest with snapshotVolumes: true, applied as it is, takes the snapshot with the class labelled for Velero', async () => {
      const vapp = await namespaceWithClaim('vol-velero');
      // What a Velero user writes (only apiVersion and namespace name Stowage's).
      await kubectlAsync(['apply', '-f', '-'], `
apiVersion: stowage.dev/v1
kind: Backup
metadata:
  name: from-velero
  namespace: ${ns}
spec:
  includedNamespaces:
  - ${vapp}
  snapshotVolumes: true
  csiSnapshotTimeout: 10m0s
  defaultVolumesToFsBackup: false
  snapshotMoveData: false
  hooks: {}
  ttl: 720h0m0s
`);
      const b = await waitFinished<Backup>(stowage.client, RESOURCES.Backup, ns, 'from-velero', 300_000);
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([1, 1]);
      expect(results('from-velero').volumeSnapshots?.map((r) => r.volumeSnapshotClass)).toEqual([CSI_SNAPSHOT_CLASS]);
      kubectlOk(['delete', 'namespace', vapp, '--wait=false']);
    }, 300_000);

    it('20 volume snapshots in one backup, and their deletion (the figures for the bench)', async () => {
      const many = uniqueName('vol-twenty');
      kubectlOk(['create', 'namespace', many]);
      await Promise.all(Array.from({ length: 20 }, (_, i) => boundClaim(stowage.client, many, `data-${i}`)));
      const t0 = Date.now();
      const b = await timed('volumes: backup of a namespace with 20 CSI snapshots', () => runBackup('twenty', { includedNamespaces: [many] }));
      const backupMs = Date.now() - t0;
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([20, 20]);
      // Each VolumeSnapshot is stored by its claim, once ready; the VolumeSnapshots' own LIST, running
      // beside the claims, leaves this backup's in-flight ones alone (it once took 8 of them half made).
      expect(stowage.server.output()).not.toMatch(new RegExp(`backed up \\d+ volumesnapshots\\.snapshot\\.storage\\.k8s\\.io in namespace "${many}"`));
      const t1 = Date.now();
      const d = await timed('volumes: deletion of a backup with 20 CSI snapshots', () => deleteBackup('twenty'));
      expect(d.status?.errors ?? []).toEqual([]);
      expect(await contentsOf(stowage.client, b)).toEqual([]);
      log(`volumes: 20 snapshots: backup ${(backupMs / 1000).toFixed(1)} s, deletion ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      kubectlOk(['delete', 'namespace', many, '--wait=false']);
    }, 600_000);

    it('deleting a backup deletes its VolumeSnapshotContents and the snapshots on the host', async () => {
      const handles = (results('sts').volumeSnapshots ?? []).map((r) => r.snapshotHandle);
      expect(handles).toHaveLength(2);
      const d = await timed('volumes: DeleteBackupRequest of 2 snapshots', () => deleteBackup('sts'));
      expect(d.status?.errors ?? []).toEqual([]);
      expect(await contentsOf(stowage.client, backup)).toEqual([]);
      for (const h of handles) expect(csiStack().snapshotExists(h)).toBe(false);
      const velero = await stowage.client.get<Backup>(RESOURCES.Backup, ns, 'from-velero');
      expect((await deleteBackup('from-velero')).status?.errors ?? []).toEqual([]);
      expect(await contentsOf(stowage.client, velero)).toEqual([]);
    }, 600_000);

    it('a snapshot that cannot be deleted is named in the DeleteBackupRequest\'s status, and the backup stays', async () => {
      const { namespace: keep, b, rec } = await claimBackedUp('undeletable', 'vol-undeletable');
      // The driver refuses to delete this snapshot until the marker goes (scripts/csi/README.md).
      csiStack().makeUndeletable(rec?.snapshotHandle ?? '', 'stowage.test driver: this snapshot is held');
      const d = await timed('volumes: DeleteBackupRequest of an undeletable snapshot', () => deleteBackup('undeletable'));
      expect(d.status?.errors).toHaveLength(1);
      expect(d.status?.errors?.[0]).toMatch(new RegExp(`^VolumeSnapshotContent ${rec?.volumeSnapshotContent ?? ''} \\(snapshot ${rec?.snapshotHandle ?? ''}\\) could not be deleted: it is not gone after 15s \\(--csi-snapshot-delete-timeout\\); it is still there \\(finalizers: `));
      expect((await stowage.client.get<Backup>(RESOURCES.Backup, ns, 'undeletable')).status?.phase).toBe('Completed');
      expect(csiStack().snapshotExists(rec?.snapshotHandle ?? '')).toBe(true);
      // Once the driver lets go, the CSI snapshotter's retry deletes it, and asking again deletes the backup.
      csiStack().makeDeletable(rec?.snapshotHandle ?? '');
      await waitUntil('the undeletable content gone once the driver lets go', async () => ((await contentsOf(stowage.client, b)).length === 0 ? true : undefined), 300_000, 500);
      expect(csiStack().snapshotExists(rec?.snapshotHandle ?? '')).toBe(false);
      const again = await deleteBackup('undeletable');
      expect(again.status?.errors ?? []).toEqual([]);
      expect(await stowage.client.get(RESOURCES.Backup, ns, 'undeletable').catch(() => undefined)).toBeUndefined();
      kubectlOk(['delete', 'namespace', keep, '--wait=false']);
      log('volumes: done');
    }, 600_000);
  });
}
