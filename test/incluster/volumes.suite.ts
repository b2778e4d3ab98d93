// Volume data through CSI snapshots (issue 37), on the real node with the CSI test stack
// (scripts/node/csi.ts): the in-process server (test/support/inProcessServer.ts) runs against the
// real cluster, so a backup really snapshots a StatefulSet's volumes, the namespace is really
// deleted, and a restore really brings the bytes back to pods that read them. Validation-only
// cases are unit tests (src/volumes, src/restore/actions/csi.test.ts, specCoverage).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CSI_DRIVER, CSI_KNOB_CLASSES, CSI_SNAPSHOT_CLASS, CSI_STORAGE_CLASS, CSI_STORAGE_CLASS_B, type CsiStack,
} from '../../scripts/node/csi.js';
import { BUSYBOX_IMAGE, kubectlPath } from '../../scripts/node/node.js';
import { RESOURCES, newBackup, newDeleteBackupRequest, newRestore, type Backup, type BackupSpec, type DeleteBackupRequest, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import { REQUESTER_ANNOTATION, formatRequester } from '../../src/auth/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import type { RunResults } from '../../src/persistence/results.js';
import { LABEL_SNAPSHOT_BACKUP_UID, VOLUME_SNAPSHOT_CONTENTS, VOLUME_SNAPSHOTS } from '../../src/volumes/index.js';
import { runCli, show } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { filesystemLocation, testClient, waitFinished } from '../support/server.js';
import { inCluster, kubectlOk, log, podReady, timed } from './context.js';

const ROLE_BINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', namespaced: true } as const;
const STATEFUL_SETS = { group: 'apps', version: 'v1', resource: 'statefulsets', namespaced: true } as const;
const CLASS_ANNOTATION = `velero.io/csi-volumesnapshot-class_${CSI_DRIVER}`;

function csi(): CsiStack {
  const stack = inCluster().cluster.csi;
  if (stack === undefined) throw new Error('the real cluster was started without its CSI stack (startRealCluster({ csi: true }))');
  return stack;
}

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
          containers: [{
            name: 'c', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never',
            command: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          }],
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
async function boundClaim(client: DynamicClient, namespace: string, name: string): Promise<KubeObject> {
  await client.create(CORE.persistentVolumeClaims, namespace, {
    metadata: { name }, spec: { storageClassName: CSI_STORAGE_CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
  });
  return waitUntil(`claim ${namespace}/${name} Bound`, async () => {
    const c = await client.get<KubeObject & { status?: { phase?: string } }>(CORE.persistentVolumeClaims, namespace, name);
    return c.status?.phase === 'Bound' ? c : undefined;
  }, 120_000, 250);
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

/**
 * kubectl without blocking this process: the in-process server serves the admission webhook from
 * it, so a synchronous kubectl that creates a Stowage object (or waits long) would stall the server.
 */
function kubectlAsync(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectlPath(), ['--kubeconfig', inCluster().cluster.cp.kubeconfigPath, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')} failed (exit ${code}): ${err.trim()}`))));
    child.stdin.end(input ?? '');
  });
}

async function deleteNamespace(namespace: string): Promise<void> {
  await kubectlAsync(['delete', 'namespace', namespace, '--wait=true', '--timeout=180s']);
}

async function contentsOf(client: DynamicClient, backup: Backup): Promise<KubeObject[]> {
  return (await client.listAll(VOLUME_SNAPSHOT_CONTENTS, { labelSelector: `${LABEL_SNAPSHOT_BACKUP_UID}=${backup.metadata.uid ?? ''}` })).items;
}

export function volumeSnapshotsSuite(): void {
  describe('volume snapshots: backups take CSI snapshots, restores bring the data back, deletion removes them', () => {
    const ns = uniqueName('stowage-vol');
    const loc = filesystemLocation();
    let client: DynamicClient;
    let server: InProcessServer;
    const app = uniqueName('vol-app');
    const written = new Map<string, string>();
    let backup: Backup;

    const results = (name: string): RunResults => JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(loc.root, 'backups', 'backups', name, `${name}-results.gz`))).toString()) as RunResults;
    const resourceList = (name: string): Record<string, string[]> => JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(loc.root, 'backups', 'backups', name, `${name}-resource-list.json.gz`))).toString()) as Record<string, string[]>;

    async function runBackup(name: string, spec: BackupSpec, annotations: Record<string, string> = {}): Promise<Backup> {
      const b = newBackup(name, ns, spec);
      if (Object.keys(annotations).length > 0) b.metadata.annotations = annotations;
      await client.create(RESOURCES.Backup, ns, b);
      return waitFinished<Backup>(client, RESOURCES.Backup, ns, name, 300_000);
    }

    async function runRestore(name: string, spec: RestoreSpec): Promise<Restore> {
      await client.create(RESOURCES.Restore, ns, newRestore(name, ns, spec));
      return waitFinished<Restore>(client, RESOURCES.Restore, ns, name, 300_000);
    }

    async function deleteBackup(name: string): Promise<DeleteBackupRequest> {
      const d = await client.create<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, ns, newDeleteBackupRequest(name, ns));
      return waitUntil(`DeleteBackupRequest for ${name} Processed`, async () => {
        const cur = await client.get<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, ns, d.metadata.name);
        return cur.status?.phase === 'Processed' ? cur : undefined;
      }, 300_000, 250);
    }

    beforeAll(async () => {
      const { cluster } = inCluster();
      client = testClient(cluster.cp.kubeconfigPath);
      server = await timed('volumes: in-process server against the real cluster', () => startInProcessServer({
        kubeconfigPath: cluster.cp.kubeconfigPath, namespace: ns, location: loc,
        // A snapshot that cannot be deleted is named after this long, not Velero's minutes.
        args: ['--csi-snapshot-delete-timeout', '15s'],
      }));
      kubectlOk(['create', 'namespace', app]);
      kubectlOk(['apply', '-f', '-'], statefulSet(app, 2));
      const pods = await timed('volumes: StatefulSet of 2 with CSI claims Ready', () => podReady(app, 'app=web', 2));
      for (const p of pods) written.set(p.metadata?.name ?? '', writeData(app, p.metadata?.name ?? ''));
      expect([...written.keys()].sort()).toEqual(['web-0', 'web-1']);
    }, 600_000);

    afterAll(async () => {
      await server?.stop();
    }, 120_000);

    it('backs up a StatefulSet\'s two claims with snapshotVolumes: each snapshot ready, its content kept (Retain), counted and described', async () => {
      backup = await timed('volumes: backup with 2 snapshots', () => runBackup('sts', { includedNamespaces: [app], snapshotVolumes: true, csiSnapshotTimeout: '2m' }));
      expect(backup.status?.phase, JSON.stringify(backup.status)).toBe('Completed');
      expect([backup.status?.csiVolumeSnapshotsAttempted, backup.status?.csiVolumeSnapshotsCompleted]).toEqual([2, 2]);
      const records = results('sts').volumeSnapshots ?? [];
      expect(records.map((r) => `${r.namespace}/${r.persistentVolumeClaim}`).sort()).toEqual([`${app}/data-web-0`, `${app}/data-web-1`]);
      for (const r of records) {
        expect([r.driver, r.volumeSnapshotClass, r.restoreSize]).toEqual([CSI_DRIVER, CSI_SNAPSHOT_CLASS, String(1024 * 1024)]);
        expect(csi().snapshotExists(r.snapshotHandle)).toBe(true);
        expect(Math.abs(Date.parse(r.creationTime ?? '') - Date.now())).toBeLessThan(10 * 60_000);
        // The VolumeSnapshot and its content are stored in the backup.
        expect(resourceList('sts')['volumesnapshots.snapshot.storage.k8s.io']).toContain(`${app}/${r.volumeSnapshot}`);
        expect(resourceList('sts')['volumesnapshotcontents.snapshot.storage.k8s.io']).toContain(r.volumeSnapshotContent);
      }
      // Kept: Retain, labelled with the backup's uid; the VolumeSnapshots are gone from the namespace.
      const contents = await contentsOf(client, backup);
      expect(contents.map((c) => [c.metadata?.name, (c.spec as { deletionPolicy?: string }).deletionPolicy]).sort()).toEqual(
        records.map((r) => [r.volumeSnapshotContent, 'Retain']).sort());
      expect((await client.listAll(VOLUME_SNAPSHOTS, { namespace: app })).items).toEqual([]);
      expect(server.output()).toMatch(new RegExp(`persistentvolumeclaims "${app}/data-web-0": snapshot snap-[0-9a-f]+ of 1048576 ready`));
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
        const pvc = await client.get<KubeObject & { spec: { dataSource?: { kind: string; name: string }; volumeName?: string } }>(CORE.persistentVolumeClaims, app, `data-web-${i}`);
        expect(pvc.spec.dataSource?.kind).toBe('VolumeSnapshot');
      }
      await timed('volumes: restored pods Ready', () => podReady(app, 'app=web', 2));
      for (const [pod, data] of written) expect(readData(app, pod)).toBe(data);
    }, 600_000);

    it('into a mapped namespace with a storage-class mapping onto stowage-csi-b, the pods read their own bytes too', async () => {
      const mapped = uniqueName('vol-mapped');
      await client.create(CORE.configMaps, ns, {
        metadata: { name: 'csi-class-map', labels: { 'velero.io/plugin-config': '', 'velero.io/change-storage-class': 'RestoreItemAction' } },
        data: { [CSI_STORAGE_CLASS]: CSI_STORAGE_CLASS_B },
      });
      try {
        const r = await timed('volumes: restore into a mapped namespace and class', () => runRestore('sts-mapped', { backupName: 'sts', namespaceMapping: { [app]: mapped } }));
        expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
        const sts = await client.get<KubeObject & { spec: { volumeClaimTemplates: { spec: { storageClassName: string } }[] } }>(STATEFUL_SETS, mapped, 'web');
        expect(sts.spec.volumeClaimTemplates[0]?.spec.storageClassName).toBe(CSI_STORAGE_CLASS_B);
        await timed('volumes: mapped pods Ready', () => podReady(mapped, 'app=web', 2));
        for (const [pod, data] of written) expect(readData(mapped, pod)).toBe(data);
        for (const i of [0, 1]) {
          const pvc = await client.get<KubeObject & { spec: { storageClassName?: string; volumeName?: string } }>(CORE.persistentVolumeClaims, mapped, `data-web-${i}`);
          expect(pvc.spec.storageClassName).toBe(CSI_STORAGE_CLASS_B);
          const pv = await client.get<KubeObject & { spec: { storageClassName?: string } }>(CORE.persistentVolumes, undefined, pvc.spec.volumeName ?? '');
          expect(pv.spec.storageClassName).toBe(CSI_STORAGE_CLASS_B);
        }
      } finally {
        await client.delete(CORE.configMaps, ns, 'csi-class-map');
        kubectlOk(['delete', 'namespace', mapped, '--wait=false']);
      }
    }, 600_000);

    it('restorePVs: false restores the claims as new, empty ones and says so', async () => {
      const empty = uniqueName('vol-empty');
      const r = await runRestore('sts-nodata', { backupName: 'sts', namespaceMapping: { [app]: empty }, includedResources: ['persistentvolumeclaims'], restorePVs: false });
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      expect(r.status?.warnings).toBe(2);
      expect(server.output()).toContain(`persistentvolumeclaims ${empty}/data-web-0: restored without its data (restorePVs is false)`);
      const pvc = await client.get<KubeObject & { spec: { dataSource?: unknown } }>(CORE.persistentVolumeClaims, empty, 'data-web-0');
      expect(pvc.spec.dataSource).toBeUndefined();
      kubectlOk(['delete', 'namespace', empty, '--wait=false']);
    }, 300_000);

    it('a snapshot not ready within csiSnapshotTimeout fails its claim: PartiallyFailed, named, and its VolumeSnapshot removed', async () => {
      const slow = uniqueName('vol-slow');
      kubectlOk(['create', 'namespace', slow]);
      await boundClaim(client, slow, 'data');
      const b = await timed('volumes: backup whose snapshot times out (5s)', () => runBackup('slow', { includedNamespaces: [slow], csiSnapshotTimeout: '5s' }, { [CLASS_ANNOTATION]: CSI_KNOB_CLASSES.slow.name }));
      expect(b.status?.phase).toBe('PartiallyFailed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([1, 0]);
      const errs = results('slow').errors.namespaces[slow] ?? [];
      expect(errs).toHaveLength(1);
      expect(errs[0]).toMatch(new RegExp(`^persistentvolumeclaims ${slow}/data: its snapshot was not ready within csiSnapshotTimeout \\(5s\\): timed out after 5 s waiting for VolumeSnapshot ${slow}/data-[0-9a-f]{10}; readyToUse is false$`));
      await waitUntil('the timed-out VolumeSnapshot gone', async () => ((await client.listAll(VOLUME_SNAPSHOTS, { namespace: slow })).items.length === 0 ? true : undefined), 60_000, 250);
      kubectlOk(['delete', 'namespace', slow, '--wait=false']);
    }, 300_000);

    it('a driver that refuses fails the claim with the driver\'s message: PartiallyFailed', async () => {
      const refused = uniqueName('vol-refused');
      kubectlOk(['create', 'namespace', refused]);
      await boundClaim(client, refused, 'data');
      const b = await runBackup('refused', { includedNamespaces: [refused] }, { [CLASS_ANNOTATION]: CSI_KNOB_CLASSES.refuses.name });
      expect(b.status?.phase).toBe('PartiallyFailed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([1, 0]);
      const errs = results('refused').errors.namespaces[refused] ?? [];
      expect(errs).toHaveLength(1);
      expect(errs[0]).toContain(`persistentvolumeclaims ${refused}/data: its snapshot failed: `);
      expect(errs[0]).toContain('stowage.test driver: this volume refuses to be snapshotted');
      kubectlOk(['delete', 'namespace', refused, '--wait=false']);
    }, 300_000);

    it('a requester who may not create VolumeSnapshots in the namespace cannot snapshot it: refused with the API\'s message', async () => {
      const team = uniqueName('vol-team');
      kubectlOk(['create', 'namespace', team]);
      await boundClaim(client, team, 'data');
      // edit: everything of the namespace's own kinds, but no VolumeSnapshots (the snapshot CRDs aggregate into no role).
      await client.create(ROLE_BINDINGS, team, {
        metadata: { name: 'dave-edit' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dave' }],
      });
      const b = newBackup('dave', ns, { includedNamespaces: [team] });
      // admin may impersonate anyone, so the admission webhook lets this requester stamp stand.
      b.metadata.annotations = { [REQUESTER_ANNOTATION]: formatRequester({ username: 'dave', uid: 'dave-uid', groups: ['system:authenticated'] }) };
      await client.create(RESOURCES.Backup, ns, b);
      const done = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'dave', 300_000);
      expect(done.status?.phase, JSON.stringify(done.status)).toBe('PartiallyFailed');
      const errs = results('dave').errors.namespaces[team] ?? [];
      expect(errs).toHaveLength(1);
      expect(errs[0]).toMatch(new RegExp(`^persistentvolumeclaims ${team}/data: not snapshotted: dave .*may not create volumesnapshots\\.snapshot\\.storage\\.k8s\\.io in namespace ${team}: .*User "dave" cannot create resource "volumesnapshots" in API group "snapshot\\.storage\\.k8s\\.io" in the namespace "${team}"`));
      expect((await client.listAll(VOLUME_SNAPSHOTS, { namespace: team })).items).toEqual([]);
      kubectlOk(['delete', 'namespace', team, '--wait=false']);
    }, 300_000);

    it('a Velero Backup manifest with snapshotVolumes: true, applied as it is, takes the snapshot with the class labelled for Velero', async () => {
      const vapp = uniqueName('vol-velero');
      kubectlOk(['create', 'namespace', vapp]);
      await boundClaim(client, vapp, 'data');
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
      const b = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'from-velero', 300_000);
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([1, 1]);
      expect(results('from-velero').volumeSnapshots?.map((r) => r.volumeSnapshotClass)).toEqual([CSI_SNAPSHOT_CLASS]);
      kubectlOk(['delete', 'namespace', vapp, '--wait=false']);
    }, 300_000);

    it('20 volume snapshots in one backup, and their deletion (the figures for the bench)', async () => {
      const many = uniqueName('vol-twenty');
      kubectlOk(['create', 'namespace', many]);
      await Promise.all(Array.from({ length: 20 }, (_, i) => boundClaim(client, many, `data-${i}`)));
      const t0 = Date.now();
      const b = await timed('volumes: backup of a namespace with 20 CSI snapshots', () => runBackup('twenty', { includedNamespaces: [many] }));
      const backupMs = Date.now() - t0;
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([20, 20]);
      // Each VolumeSnapshot is stored by its claim, once ready; the VolumeSnapshots' own LIST, running
      // beside the claims, leaves this backup's in-flight ones alone (it once took 8 of them half made).
      expect(server.output()).not.toMatch(new RegExp(`backed up \\d+ volumesnapshots\\.snapshot\\.storage\\.k8s\\.io in namespace "${many}"`));
      const t1 = Date.now();
      const d = await timed('volumes: deletion of a backup with 20 CSI snapshots', () => deleteBackup('twenty'));
      expect(d.status?.errors ?? []).toEqual([]);
      expect(await contentsOf(client, b)).toEqual([]);
      log(`volumes: 20 snapshots: backup ${(backupMs / 1000).toFixed(1)} s, deletion ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      kubectlOk(['delete', 'namespace', many, '--wait=false']);
    }, 600_000);

    it('deleting a backup deletes its VolumeSnapshotContents and the snapshots on the host', async () => {
      const handles = (results('sts').volumeSnapshots ?? []).map((r) => r.snapshotHandle);
      expect(handles).toHaveLength(2);
      const d = await timed('volumes: DeleteBackupRequest of 2 snapshots', () => deleteBackup('sts'));
      expect(d.status?.errors ?? []).toEqual([]);
      expect(await contentsOf(client, backup)).toEqual([]);
      for (const h of handles) expect(csi().snapshotExists(h)).toBe(false);
      const velero = await client.get<Backup>(RESOURCES.Backup, ns, 'from-velero');
      expect((await deleteBackup('from-velero')).status?.errors ?? []).toEqual([]);
      expect(await contentsOf(client, velero)).toEqual([]);
    }, 600_000);

    it('a snapshot that cannot be deleted is named in the DeleteBackupRequest\'s status, and the backup stays', async () => {
      const keep = uniqueName('vol-undeletable');
      kubectlOk(['create', 'namespace', keep]);
      await boundClaim(client, keep, 'data');
      const b = await runBackup('undeletable', { includedNamespaces: [keep] });
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      const [rec] = results('undeletable').volumeSnapshots ?? [];
      // The driver refuses to delete this snapshot until the marker goes (scripts/csi/README.md).
      csi().makeUndeletable(rec?.snapshotHandle ?? '', 'stowage.test driver: this snapshot is held');
      const d = await timed('volumes: DeleteBackupRequest of an undeletable snapshot', () => deleteBackup('undeletable'));
      expect(d.status?.errors).toHaveLength(1);
      expect(d.status?.errors?.[0]).toMatch(new RegExp(`^VolumeSnapshotContent ${rec?.volumeSnapshotContent ?? ''} \\(snapshot ${rec?.snapshotHandle ?? ''}\\) could not be deleted: it is not gone after 15s \\(--csi-snapshot-delete-timeout\\); it is still there \\(finalizers: `));
      expect((await client.get<Backup>(RESOURCES.Backup, ns, 'undeletable')).status?.phase).toBe('Completed');
      expect(csi().snapshotExists(rec?.snapshotHandle ?? '')).toBe(true);
      // Once the driver lets go, the CSI snapshotter's retry deletes it, and asking again deletes the backup.
      csi().makeDeletable(rec?.snapshotHandle ?? '');
      await waitUntil('the undeletable content gone once the driver lets go', async () => ((await contentsOf(client, b)).length === 0 ? true : undefined), 300_000, 500);
      expect(csi().snapshotExists(rec?.snapshotHandle ?? '')).toBe(false);
      const again = await deleteBackup('undeletable');
      expect(again.status?.errors ?? []).toEqual([]);
      expect(await client.get(RESOURCES.Backup, ns, 'undeletable').catch(() => undefined)).toBeUndefined();
      kubectlOk(['delete', 'namespace', keep, '--wait=false']);
      log('volumes: done');
    }, 600_000);
  });
}
