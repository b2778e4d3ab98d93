// The volume-snapshot row (issue 37) on a running real cluster with its CSI stack: N bound claims
// with a little data each, then in rounds the backup of their namespace with snapshotVolumes and
// without (its floor: what the snapshots add), and the deletion of each backup. The server runs
// from dist/ as its own process, as in the other rows; the apiserver reaches its webhook on loopback.
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import {
  RESOURCES, isBackupTerminal, newBackup, newBackupStorageLocation, newDeleteBackupRequest,
  type Backup, type BackupSpec, type BackupStorageLocation, type DeleteBackupRequest,
} from '../src/apis/v1/index.js';
import { CORE, createDynamicClient, ensureCrds, isNotFound, loadKubeConfig, type DynamicClient, type KubeObject } from '../src/kube/index.js';
import { LABEL_SNAPSHOT_BACKUP_UID, VOLUME_SNAPSHOT_CONTENTS } from '../src/volumes/index.js';
import { prepareLocalWebhook, waitForLocalWebhook } from '../scripts/cluster/webhook.js';
import { CSI_DRIVER, CSI_SNAPSHOT_CLASS, CSI_STORAGE_CLASS, type CsiStack } from '../scripts/node/csi.js';
import { BUSYBOX_IMAGE } from '../scripts/node/node.js';
import type { RealCluster } from '../scripts/node/realCluster.js';
import { waitFor } from './watch.js';
import { sampleTree } from './procstat.js';
import { serverHeapFlags, startBenchServer } from './server.js';
import { rowOf, volumeRatios, type VolumeBenchReport, type VolumeSample } from './volumeReport.js';

export interface VolumeBenchOptions {
  cluster: RealCluster;
  /** The bucket the cluster's S3 server was started with. */
  bucket: string;
  volumes: number;
  rounds: number;
  dataBytes: number;
  /** A snapshotDist copy. */
  dist: string;
  workDir: string;
  memoryLimitMiB: number;
  log: (line: string) => void;
}

type Measured = Omit<VolumeBenchReport, 'schema' | 'date' | 'machine' | 'loadAtStart' | 'leftovers' | 'totalSeconds' | 'setup'> & {
  setup: Omit<VolumeBenchReport['setup'], 'clusterStartSeconds'>;
};

const SERVER_NS = 'vbench-system';
const APP_NS = 'vbench-app';
const LOCATION = 'default';
/** Each wait's limit: far beyond what 20 snapshots take, so only a stuck run trips it. */
const WAIT_MS = 600_000;

type Pod = KubeObject & { status?: { phase?: string; containerStatuses?: { state?: { terminated?: { message?: string; exitCode?: number } } }[] } };
type Claim = KubeObject & { status?: { phase?: string } };

function csiOf(cluster: RealCluster): CsiStack {
  if (cluster.csi === undefined) throw new Error('the real cluster was started without its CSI stack (startRealCluster({ csi: true }))');
  return cluster.csi;
}

/** Resolves once the object is gone, on a watch from the version a GET returned (NotFound: gone already). */
async function waitGone(client: DynamicClient, res: typeof CORE.pods, namespace: string, name: string): Promise<void> {
  const signal = AbortSignal.timeout(WAIT_MS);
  for (;;) {
    if (signal.aborted) throw new Error(`${res.resource} ${namespace}/${name} not gone after ${WAIT_MS / 1000} s`);
    const cur = await client.get<KubeObject>(res, namespace, name).catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
    if (cur === undefined) return;
    try {
      for await (const ev of client.watch(res, { namespace, fieldSelector: `metadata.name=${name}`, resourceVersion: cur.metadata?.resourceVersion, signal })) {
        if (ev.type === 'DELETED') return;
      }
    } catch {
      // Broken or expired (410): a fresh GET above starts the next watch; the deadline ends the wait.
      if (!signal.aborted) await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** One pod mounts every claim, writes `bytes` of random data to each, and ends. */
function writerPod(claims: readonly string[], bytes: number): KubeObject {
  const script = claims.map((_, i) => `head -c ${bytes} /dev/urandom > /v/${i}/data`).join(' && ');
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'writer' },
    spec: {
      restartPolicy: 'Never', terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'w', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', `${script} && sync`],
        volumeMounts: claims.map((_, i) => ({ name: `v${i}`, mountPath: `/v/${i}` })),
      }],
      volumes: claims.map((c, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName: c } })),
    },
  } as KubeObject;
}

export async function measureVolumeSnapshots(opts: VolumeBenchOptions): Promise<Measured> {
  const { cluster, log } = opts;
  const csi = csiOf(cluster);
  const kubeconfigPath = cluster.cp.kubeconfigPath;
  const client = createDynamicClient(loadKubeConfig(kubeconfigPath), { qps: 0, burst: 0, userAgent: 'stowage-bench/volumes' });
  try {
    await ensureCrds(client);
    for (const ns of [SERVER_NS, APP_NS]) await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });

    // N claims; the StorageClass binds at once (volumeBindingMode Immediate), so no pod is needed to bind them.
    const claims = Array.from({ length: opts.volumes }, (_, i) => `data-${i}`);
    let t = performance.now();
    await Promise.all(claims.map((name) => client.create(CORE.persistentVolumeClaims, APP_NS, {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name },
      spec: { storageClassName: CSI_STORAGE_CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
    })));
    for (const name of claims) {
      await waitFor<Claim>(client, CORE.persistentVolumeClaims, APP_NS, name, undefined, (c) => c.status?.phase === 'Bound', WAIT_MS,
        (c) => log(`claim ${name}: ${c.status?.phase ?? 'Pending'}`));
    }
    const claimsBoundSeconds = (performance.now() - t) / 1000;
    log(`${opts.volumes} claims on ${CSI_STORAGE_CLASS} bound in ${claimsBoundSeconds.toFixed(1)} s`);

    // A little data in each volume, so each snapshot holds some; then the pod goes, leaving the claims alone.
    t = performance.now();
    await client.create(CORE.pods, APP_NS, writerPod(claims, opts.dataBytes));
    const pod = await waitFor<Pod>(client, CORE.pods, APP_NS, 'writer', undefined, (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed', WAIT_MS,
      (p) => log(`writer pod: ${p.status?.phase ?? 'Pending'}`));
    if (pod.status?.phase !== 'Succeeded') {
      const term = pod.status?.containerStatuses?.[0]?.state?.terminated;
      throw new Error(`the pod writing to the volumes ended ${pod.status?.phase ?? '?'} (exit ${term?.exitCode ?? '?'}): ${term?.message ?? 'no message'}`);
    }
    await client.delete(CORE.pods, APP_NS, 'writer');
    await waitGone(client, CORE.pods, APP_NS, 'writer');
    const dataWrittenSeconds = (performance.now() - t) / 1000;
    log(`${opts.dataBytes / 1024} KiB written to each volume in ${dataWrittenSeconds.toFixed(1)} s`);

    // The location on the cluster's S3 server, signed as the other rows' are.
    const s3 = cluster.s3;
    await client.create(CORE.secrets, SERVER_NS, {
      apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bench-s3' },
      stringData: { cloud: `[default]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n` },
    });
    await client.create(CORE.secrets, SERVER_NS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bench-signing' }, data: { hmac: crypto.randomBytes(32).toString('base64') } });
    await client.create(RESOURCES.BackupStorageLocation, SERVER_NS, newBackupStorageLocation(LOCATION, SERVER_NS, {
      provider: 'stowage.dev/aws', objectStorage: { bucket: opts.bucket, prefix: 'stowage' },
      config: { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true' },
      credential: { name: 'bench-s3', key: 'cloud' }, default: true, signing: { keySecretRef: { name: 'bench-signing', key: 'hmac' } },
    }));

    const heapFlags = serverHeapFlags(opts.memoryLimitMiB);
    const hook = await prepareLocalWebhook(client, SERVER_NS);
    const logFile = path.join(opts.workDir, 'server-volumes.log');
    const server = await startBenchServer({
      dist: opts.dist, kubeconfigPath, namespace: SERVER_NS, logFile, scratchDir: path.join(opts.workDir, 'scratch-volumes'), nodeArgs: heapFlags, args: hook.args,
    });
    try {
      await waitForLocalWebhook(client, SERVER_NS);
      await waitFor<BackupStorageLocation>(client, RESOURCES.BackupStorageLocation, SERVER_NS, LOCATION, undefined, (x) => x.status?.phase === 'Available', 60_000,
        (x) => log(`location: ${JSON.stringify(x.status ?? {})}`));

      const measure = async <T>(f: () => Promise<T>): Promise<{ value: T; sample: Omit<VolumeSample, 'seconds'> }> => {
        const sampler = sampleTree(server.pid);
        let done = false;
        try {
          const value = await f();
          const tree = sampler.stop();
          done = true;
          return { value, sample: { serverCpuSeconds: tree.root.cpuSeconds, cpuSeconds: tree.totalCpuSeconds } };
        } finally {
          if (!done) sampler.stop();
        }
      };
      const runBackup = async (name: string, spec: BackupSpec): Promise<{ backup: Backup; sample: VolumeSample }> => {
        const m = await measure(async () => {
          const t0 = performance.now();
          const created = await client.create<Backup>(RESOURCES.Backup, SERVER_NS, newBackup(name, SERVER_NS, { ...spec, storageLocation: LOCATION }));
          const backup = await waitFor<Backup>(client, RESOURCES.Backup, SERVER_NS, name, created.metadata.resourceVersion, (b) => isBackupTerminal(b.status?.phase), WAIT_MS,
            (b) => log(`backup ${name}: ${b.status?.phase ?? 'New'} ${JSON.stringify(b.status?.progress ?? {})}`));
          return { backup, seconds: (performance.now() - t0) / 1000 };
        });
        const st = m.value.backup.status;
        if (st?.phase !== 'Completed') throw new Error(`backup ${name} ended ${st?.phase ?? '?'}: ${st?.failureReason ?? `${st?.errors ?? 0} errors`} (server log: ${logFile})`);
        return { backup: m.value.backup, sample: { seconds: m.value.seconds, ...m.sample } };
      };
      const contentsOf = async (b: Backup): Promise<(KubeObject & { status?: { snapshotHandle?: string } })[]> =>
        (await client.listAll<KubeObject & { status?: { snapshotHandle?: string } }>(VOLUME_SNAPSHOT_CONTENTS, { labelSelector: `${LABEL_SNAPSHOT_BACKUP_UID}=${b.metadata.uid ?? ''}` })).items;
      const deleteBackup = async (b: Backup): Promise<VolumeSample> => {
        const name = b.metadata.name;
        const handles = (await contentsOf(b)).map((c) => c.status?.snapshotHandle ?? '');
        const m = await measure(async () => {
          const t0 = performance.now();
          const d = await client.create<DeleteBackupRequest>(RESOURCES.DeleteBackupRequest, SERVER_NS, newDeleteBackupRequest(name, SERVER_NS));
          const done = await waitFor<DeleteBackupRequest>(client, RESOURCES.DeleteBackupRequest, SERVER_NS, d.metadata.name, d.metadata.resourceVersion,
            (x) => x.status?.phase === 'Processed', WAIT_MS, (x) => log(`deletion of ${name}: ${x.status?.phase ?? 'New'}`));
          return { done, seconds: (performance.now() - t0) / 1000 };
        });
        const errors = m.value.done.status?.errors ?? [];
        if (errors.length > 0) throw new Error(`deleting backup ${name} failed: ${errors.join('; ')} (server log: ${logFile})`);
        const left = await contentsOf(b);
        if (left.length > 0) throw new Error(`deleting backup ${name} left ${left.length} VolumeSnapshotContents: ${left.map((c) => c.metadata?.name).join(', ')}`);
        const onHost = handles.filter((h) => h !== '' && csi.snapshotExists(h));
        if (onHost.length > 0) throw new Error(`deleting backup ${name} left ${onHost.length} snapshots on the host: ${onHost.join(', ')}`);
        return { seconds: m.value.seconds, ...m.sample };
      };

      // A warm-up backup starts the plugin processes and runs every path once, snapshots included.
      const warm = await runBackup('warmup', { includedNamespaces: [APP_NS], snapshotVolumes: true });
      await deleteBackup(warm.backup);

      const withSnap: VolumeSample[] = [];
      const withoutSnap: VolumeSample[] = [];
      const delWith: VolumeSample[] = [];
      const delWithout: VolumeSample[] = [];
      const loadByRound: number[] = [];
      let withItems = 0;
      let withoutItems = 0;
      let attempted = 0;
      let completed = 0;
      for (let round = 0; round < opts.rounds; round++) {
        const backups: { with?: Backup; without?: Backup } = {};
        const steps = [
          async (): Promise<void> => {
            const r = await runBackup(`snapshots-${round}`, { includedNamespaces: [APP_NS], snapshotVolumes: true });
            const st = r.backup.status;
            if (st?.csiVolumeSnapshotsAttempted !== opts.volumes || st.csiVolumeSnapshotsCompleted !== opts.volumes) {
              throw new Error(`backup snapshots-${round} took ${st?.csiVolumeSnapshotsCompleted ?? 0} of ${st?.csiVolumeSnapshotsAttempted ?? 0} snapshots, not ${opts.volumes} of ${opts.volumes}`);
            }
            const contents = await contentsOf(r.backup);
            if (contents.length !== opts.volumes) throw new Error(`backup snapshots-${round} kept ${contents.length} VolumeSnapshotContents, not ${opts.volumes}`);
            withSnap.push(r.sample);
            backups.with = r.backup;
            withItems = st.progress?.itemsBackedUp ?? 0;
            attempted = st.csiVolumeSnapshotsAttempted;
            completed = st.csiVolumeSnapshotsCompleted;
            log(`round ${round + 1}: backup with ${opts.volumes} snapshots ${r.sample.seconds.toFixed(2)} s`);
          },
          async (): Promise<void> => {
            const r = await runBackup(`no-snapshots-${round}`, { includedNamespaces: [APP_NS], snapshotVolumes: false });
            const st = r.backup.status;
            if ((st?.csiVolumeSnapshotsAttempted ?? 0) !== 0) throw new Error(`backup no-snapshots-${round} (snapshotVolumes: false) attempted ${st?.csiVolumeSnapshotsAttempted} snapshots`);
            withoutSnap.push(r.sample);
            backups.without = r.backup;
            withoutItems = st?.progress?.itemsBackedUp ?? 0;
            log(`round ${round + 1}: backup without snapshots ${r.sample.seconds.toFixed(2)} s`);
          },
        ];
        // A rotating order: a swing of the machine's load hits both alike.
        for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]?.();
        const deletions = [
          async (): Promise<void> => void delWith.push(await deleteBackup(backups.with as Backup)),
          async (): Promise<void> => void delWithout.push(await deleteBackup(backups.without as Backup)),
        ];
        for (let i = 0; i < deletions.length; i++) await deletions[(i + round) % deletions.length]?.();
        log(`round ${round + 1}: deletion with snapshots ${delWith.at(-1)?.seconds.toFixed(2)} s, without ${delWithout.at(-1)?.seconds.toFixed(2)} s`);
        loadByRound.push(Math.round((os.loadavg()[0] ?? 0) * 100) / 100);
      }
      const rows = { withSnapshots: rowOf(withSnap), withoutSnapshots: rowOf(withoutSnap), deleteWith: rowOf(delWith), deleteWithout: rowOf(delWithout) };
      return {
        loadByRound,
        params: {
          volumes: opts.volumes, rounds: opts.rounds, dataBytesPerVolume: opts.dataBytes, driver: CSI_DRIVER, storageClass: CSI_STORAGE_CLASS,
          volumeSnapshotClass: CSI_SNAPSHOT_CLASS, trustMode: 'requester', serverMemoryLimitMiB: opts.memoryLimitMiB, serverNodeArgs: heapFlags,
        },
        setup: { claimsBoundSeconds, dataWrittenSeconds },
        withSnapshots: { ...rows.withSnapshots, items: withItems, snapshotsAttempted: attempted, snapshotsCompleted: completed },
        withoutSnapshots: { ...rows.withoutSnapshots, items: withoutItems },
        deleteWith: rows.deleteWith,
        deleteWithout: rows.deleteWithout,
        ratios: volumeRatios(opts.volumes, rows),
        serverLogs: [logFile],
      };
    } finally {
      await server.stop();
    }
  } finally {
    client.close();
  }
}
