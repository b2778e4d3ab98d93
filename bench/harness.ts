// One benchmark pass (issue 7): seed; rounds of backup floor, backup engine alone and Stowage
// backup (and the peer's, with --peer); Stowage backup with a plugin action; restore floor; Stowage
// restore; the peer's restore. Every figure is measured on the same control plane and S3 server in
// the same run, so the ratios hold even on a noisy machine.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startControlPlane, type ControlPlane } from '../scripts/cluster/controlPlane.js';
import { startMinio } from '../scripts/cluster/minio.js';
import { startS3Server, type S3Server } from '../scripts/cluster/s3.js';
import { ensureVelero, type VeleroBinaries } from '../scripts/velero/velero.js';
import { RESOURCES, type Backup } from '../src/apis/v1/index.js';
import { DEFAULT_CONFIG } from '../src/config/index.js';
import { CORE, createDynamicClient, ensureCrds, loadKubeConfig, type DynamicClient, type KubeObject } from '../src/kube/index.js';
import { DEFAULT_RESTORE_CONCURRENCY } from '../src/restore/index.js';
import { backupEngine, type EngineResult } from './engine.js';
import { backupFloor, forEachItem, restoreFloor, type BackupFloorResult } from './floor.js';
import { buildBenchPlugin } from './plugin/build.js';
import { STAMP_ANNOTATION } from './plugin/names.js';
import type { Peer, S3Kind } from './args.js';
import {
  installVelero, runVeleroBackup, runVeleroRestore, startVeleroServer, VELERO_PREFIX, type VeleroBackup, type VeleroServer, type VeleroSetup,
} from './peer/velero.js';
import type { TreeFigures } from './procstat.js';
import { checkGoals, machineInfo, median, peerRatios, REPORT_SCHEMA, type BenchReport, type PeerReport, type StowageRun } from './report.js';
import { BENCH_ITEMS, countSeeded, createObject, seed, seedPlan, waitSettled } from './seed.js';
import { deployedServerEnv, serverHeapFlags, snapshotDist } from './server.js';
import {
  ENCRYPTED_LOCATION, ENCRYPTED_PREFIX, LOCATION, LOCATION_PREFIX, measureTree, mergeTrees, setupServerNamespace, stowageRun, stowageServers, UNSIGNED_LOCATION, UNSIGNED_PREFIX,
  type S3Endpoint,
} from './stowage.js';

/** Stowage's backup engine lists this many resources at once (src/backup/run.ts DEFAULT_CONCURRENCY). */
export const BACKUP_LIST_CONCURRENCY = 4;

export interface BenchOptions {
  objects: number;
  namespaces: number;
  /** Reuse a running control plane (the test suite's); default: start one for this run. */
  cluster?: { kubeconfigPath: string };
  /** Reuse a running S3 server; default: start one, of this kind (default s3rver). */
  s3?: S3Endpoint;
  s3Kind?: S3Kind;
  /** Also measure this peer (Velero) on the same objects: its backups in the same rounds, then its restore. */
  peer?: Peer;
  /** Server logs, CPU profiles and the plugin build go here. */
  workDir: string;
  /** The build the server runs (default: this checkout's dist/); another checkout's for an A/B against the commit before a change. */
  dist?: string;
  /** Run the server with `node --cpu-prof` (profiles under workDir/profiles/<phase>). */
  profile?: boolean;
  /** More node flags for the server (`--trace-gc` shows where its heap grows, in its log). */
  nodeArgs?: readonly string[];
  /**
   * The memory limit the server runs under, in MiB, as its container has one (deploy/ and the chart
   * set 1024): its heap is sized for it, with the deployment's NODE_OPTIONS (serverHeapFlags). 0: no limit, V8's sizing for the machine.
   */
  memoryLimitMiB: number;
  seedConcurrency?: number;
  /** Rounds of the three backups (floor, engine alone, Stowage); the report gives medians. Default 3. */
  backupRounds?: number;
  /** A report from an earlier run (N=5k) to check the memory-growth goal against. */
  baseline?: BenchReport;
  log: (line: string) => void;
}

/** The team user (impersonated by the benchmark's admin; the webhook stamps whom the API server authenticated). */
const TEAM_USER = 'bench-team-user';
const TEAM_GROUP = 'bench-team';
const RBAC = 'rbac.authorization.k8s.io';
const ROLES = { group: RBAC, version: 'v1', resource: 'roles', namespaced: true } as const;
const ROLE_BINDINGS = { group: RBAC, version: 'v1', resource: 'rolebindings', namespaced: true } as const;
const CLUSTER_ROLES = { group: RBAC, version: 'v1', resource: 'clusterroles', namespaced: false } as const;
/**
 * Ordinary team RBAC for TEAM_GROUP: in each seeded namespace a Role with the rules of the built-in
 * `admin` ClusterRole plus the benchmark's custom resources, bound with a RoleBinding, and in the
 * server's namespace the right to create and watch Backups. Nothing cluster-wide. Namespaced Roles
 * (not RoleBindings to ClusterRoles) keep the backups' items the floor's: a ClusterRole a binding
 * names would be pulled into Stowage's backups as a dependency, and the floor takes none.
 */
async function grantTeam(client: DynamicClient, namespaces: readonly string[], serverNs: string): Promise<void> {
  const admin = await client.get<KubeObject & { rules?: unknown[] }>(CLUSTER_ROLES, undefined, 'admin');
  if ((admin.rules ?? []).length === 0) throw new Error('the ClusterRole admin has no rules (kube-controller-manager has not aggregated it)');
  const roleAndBinding = async (namespace: string, name: string, rules: unknown[]): Promise<void> => {
    await createObject(client, ROLES, namespace, { apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { name }, rules });
    await createObject(client, ROLE_BINDINGS, namespace, {
      apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name }, roleRef: { apiGroup: RBAC, kind: 'Role', name },
      subjects: [{ apiGroup: RBAC, kind: 'Group', name: TEAM_GROUP }],
    });
  };
  const benchItems = { apiGroups: [BENCH_ITEMS.group], resources: [BENCH_ITEMS.resource], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] };
  for (const ns of namespaces) await roleAndBinding(ns, 'bench-team', [...(admin.rules ?? []), benchItems]);
  await roleAndBinding(serverNs, 'bench-team-backups', [{ apiGroups: [RESOURCES.Backup.group], resources: [RESOURCES.Backup.resource], verbs: ['create', 'get', 'list', 'watch'] }]);
}

export async function runBench(opts: BenchOptions): Promise<BenchReport> {
  const t0 = performance.now();
  const elapsed = (): string => `${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s`;
  const log = (line: string): void => opts.log(`[bench ${elapsed()}] ${line}`);
  // The server's heap as in its container: sized from the memory limit, and the deployment's
  // NODE_OPTIONS (none: V8's sizing for this machine).
  const heapFlags = serverHeapFlags(opts.memoryLimitMiB);
  const prefix = `bench-${crypto.randomBytes(3).toString('hex')}`;
  fs.mkdirSync(opts.workDir, { recursive: true });
  const dist = snapshotDist(opts.workDir, opts.dist);
  let cp: ControlPlane | undefined;
  let s3srv: S3Server | undefined;
  let fast: DynamicClient | undefined;
  /** Every namespace this run creates (deleted at the end on a shared control plane). */
  const targetNamespaces: string[] = [];
  const serverNs = `${prefix}-system`;
  let veleroServer: VeleroServer | undefined;
  try {
    // The peer's build first: a run that cannot have its peer rows fails before seeding, with the reason.
    let veleroBin: VeleroBinaries | undefined;
    if (opts.peer === 'velero') {
      veleroBin = await ensureVelero(log);
      log(`velero ${veleroBin.version} and velero-plugin-for-aws ${veleroBin.awsPluginVersion} ready (${veleroBin.seconds.toFixed(1)} s)`);
    }
    if (opts.cluster === undefined) {
      log('starting a control plane (etcd, kube-apiserver, kube-controller-manager)');
      cp = await startControlPlane();
    }
    const kubeconfigPath = opts.cluster?.kubeconfigPath ?? cp?.kubeconfigPath ?? '';
    if (opts.s3 === undefined) s3srv = opts.s3Kind === 'minio' ? await startMinio() : await startS3Server();
    const s3ep: S3Endpoint = opts.s3 ?? (s3srv as S3Server);
    const kc = loadKubeConfig(kubeconfigPath);
    fast = createDynamicClient(kc, { qps: 0, burst: 0, userAgent: 'stowage-bench/seed' });
    const client = fast;
    const s3 = new S3Client({
      region: s3ep.region, endpoint: s3ep.endpoint, forcePathStyle: true,
      credentials: { accessKeyId: s3ep.accessKeyId, secretAccessKey: s3ep.secretAccessKey },
    });
    const bucket = prefix;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await ensureCrds(client);

    // 1. Seed.
    const p = seedPlan(prefix, opts.objects, opts.namespaces);
    targetNamespaces.push(...p.namespaces);
    const seedConcurrency = opts.seedConcurrency ?? 48;
    log(`seeding ${p.objects} objects in ${p.namespaces.length} namespaces (${Object.entries(p.byKind).map(([k, v]) => `${v} ${k}`).join(', ')})`);
    const seeded = await seed(client, p, prefix, { concurrency: seedConcurrency, progress: log });
    log(`seeded in ${seeded.seconds.toFixed(1)} s (${seeded.objectsPerSecond.toFixed(0)}/s); waiting for kube-controller-manager's token secrets`);
    await waitSettled(client, p.namespaces, 600_000, log);

    // 2–3. The backups: floor, engine alone and Stowage, in `rounds` rounds; each round runs the three
    // in turn (in a rotating order), so a swing in the machine's load hits all three alike, and the
    // report gives medians. The floor uses the server's client limits, page size and list concurrency.
    const limits = { qps: DEFAULT_CONFIG.clientQps, burst: DEFAULT_CONFIG.clientBurst };
    const rounds = Math.max(1, opts.backupRounds ?? 3);
    const credentialsFile = path.join(opts.workDir, 's3-credentials');
    fs.writeFileSync(credentialsFile, `[default]\naws_access_key_id=${s3ep.accessKeyId}\naws_secret_access_key=${s3ep.secretAccessKey}\n`, { mode: 0o600 });
    const floorKey = (round: number): string => `floor/backup-${round}.tar.gz`;
    const runFloor = async (round: number): Promise<BackupFloorResult> => {
      const r = await backupFloor({
        client: createDynamicClient(kc, { ...limits, userAgent: 'stowage-bench/floor' }), s3, bucket, key: floorKey(round), namespaces: p.namespaces,
        pageSize: DEFAULT_CONFIG.clientPageSize, listConcurrency: BACKUP_LIST_CONCURRENCY,
      });
      log(`backup floor: ${r.items} items, ${(r.tarballBytes / 1024 ** 2).toFixed(1)} MiB in ${r.seconds.toFixed(1)} s`);
      return r;
    };
    // The same backup by the engine alone, in this process: engine cost against server and plugin cost.
    const runEngine = async (round: number): Promise<EngineResult> => {
      const r = await backupEngine({
        client: createDynamicClient(kc, { ...limits, userAgent: 'stowage-bench/engine' }),
        storeConfig: { region: s3ep.region, s3Url: s3ep.endpoint, s3ForcePathStyle: 'true', credentialsFile },
        bucket, prefix: 'engine', namespaces: p.namespaces, pageSize: DEFAULT_CONFIG.clientPageSize,
        name: `${prefix}-engine-${round}`, namespace: serverNs, workDir: opts.workDir,
      });
      if (r.phase !== 'Completed') throw new Error(`the in-process backup engine ended ${r.phase}: ${r.problems.join('; ') || 'no error recorded'}`);
      log(`backup engine alone: ${r.items} items in ${r.seconds.toFixed(1)} s`);
      return r;
    };

    // The server's namespace, credentials and locations.
    await setupServerNamespace(client, serverNs, s3ep, bucket);
    await grantTeam(client, p.namespaces, serverNs);
    const teamClient = client.impersonating({ username: TEAM_USER, groups: [TEAM_GROUP] });

    // The peer: Velero's namespace, CRDs and location on the same bucket, with Stowage's client limits.
    let velero: VeleroSetup | undefined;
    if (veleroBin !== undefined) {
      const veleroNs = `${prefix}-velero`;
      targetNamespaces.push(veleroNs);
      velero = await installVelero(client, {
        bin: veleroBin, namespace: veleroNs, kubeconfigPath, workDir: opts.workDir, bucket, s3: s3ep,
        speed: { clientQps: limits.qps, clientBurst: limits.burst, pageSize: DEFAULT_CONFIG.clientPageSize, itemBlockWorkers: BACKUP_LIST_CONCURRENCY },
      });
      log(`Velero installed in ${veleroNs}: velero server ${velero.serverFlags.join(' ')}`);
    }
    /** Velero's reported rate on large clusters is far below Stowage's: its waits allow 5 objects/s. */
    const veleroBackupTimeout = 600_000 + opts.objects * 200;
    /** A Velero server for one phase, warmed up as Stowage's is: a tiny backup runs its plugins and the S3 path once. */
    const startVelero = async (setup: VeleroSetup, phase: string): Promise<VeleroServer> => {
      const logFile = path.join(opts.workDir, `velero-${phase}.log`);
      veleroServer = await startVeleroServer(client, setup, logFile, log);
      await runVeleroBackup(client, setup, `${prefix}-velero-warmup-${phase}`, { includedNamespaces: [setup.namespace], includedResources: ['configmaps'] }, 120_000, logFile, log);
      return veleroServer;
    };
    const stopVelero = async (): Promise<void> => {
      await veleroServer?.stop();
      veleroServer = undefined;
    };

    const tarballBytes = async (backupName: string, prefixed = LOCATION_PREFIX): Promise<number> => {
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: `${prefixed}/backups/${backupName}/${backupName}.tar.gz` }));
      return head.ContentLength ?? 0;
    };
    const { withServer, runBackup, restore: stowageRestore } = stowageServers({
      client, kubeconfigPath, serverNs, prefix, dist, workDir: opts.workDir, namespaces: p.namespaces, objects: opts.objects, log,
      nodeArgs: (phase) => [
        ...heapFlags,
        ...(opts.profile === true ? ['--cpu-prof', `--cpu-prof-dir=${path.join(opts.workDir, 'profiles', phase)}`] : []),
        ...(opts.nodeArgs ?? []),
      ],
    });

    type BackupRound = { backup: Backup; seconds: number; tree: TreeFigures };
    /** A Stowage backup row from its rounds: the first round's backup, the median time, every round's samples. */
    const backupRounds = (name: string, runs: readonly BackupRound[], logFile: string): StowageRun & { rounds: number[]; signed: boolean } => {
      const first = runs[0];
      if (first === undefined) throw new Error(`no round of ${name} ran`);
      const st = first.backup.status;
      return {
        ...stowageRun(name, st?.phase ?? '', median(runs.map((r) => r.seconds)), st?.progress?.itemsBackedUp ?? 0, st?.warnings ?? 0, st?.errors ?? 0,
          { tree: mergeTrees(runs.map((r) => r.tree)), logFile }),
        rounds: runs.map((r) => r.seconds),
        signed: st?.signature !== undefined,
      };
    };

    const floorRuns: BackupFloorResult[] = [];
    const engineRuns: EngineResult[] = [];
    const stowageRuns: BackupRound[] = [];
    const encryptedRuns: BackupRound[] = [];
    const unsignedRuns: BackupRound[] = [];
    const teamRuns: BackupRound[] = [];
    const veleroRuns: { backup: VeleroBackup; seconds: number; tree: TreeFigures }[] = [];
    // Velero's server runs through all the rounds, as Stowage's does; each idles while the other works.
    const veleroBackupServer = velero !== undefined ? await startVelero(velero, 'backup') : undefined;
    const b1 = await withServer('backup', undefined, async (measure) => {
      for (let round = 0; round < rounds; round++) {
        log(`backup round ${round + 1} of ${rounds}`);
        const steps: (() => Promise<void>)[] = [
          async () => void floorRuns.push(await runFloor(round)),
          async () => void engineRuns.push(await runEngine(round)),
          async () => {
            const m = await measure(() => runBackup(`${prefix}-backup-${round}`));
            stowageRuns.push({ ...m.value, tree: m.tree });
            log(`Stowage backup: ${m.value.backup.status?.progress?.itemsBackedUp ?? 0} items in ${m.value.seconds.toFixed(1)} s`);
          },
          async () => {
            const m = await measure(() => runBackup(`${prefix}-backup-encrypted-${round}`, undefined, ENCRYPTED_LOCATION));
            encryptedRuns.push({ ...m.value, tree: m.tree });
            log(`Stowage backup, encrypted: ${m.value.backup.status?.progress?.itemsBackedUp ?? 0} items in ${m.value.seconds.toFixed(1)} s`);
          },
          async () => {
            const m = await measure(() => runBackup(`${prefix}-backup-unsigned-${round}`, undefined, UNSIGNED_LOCATION));
            unsignedRuns.push({ ...m.value, tree: m.tree });
            log(`Stowage backup, unsigned: ${m.value.backup.status?.progress?.itemsBackedUp ?? 0} items in ${m.value.seconds.toFixed(1)} s`);
          },
          async () => {
            const m = await measure(() => runBackup(`${prefix}-backup-team-${round}`, undefined, LOCATION, teamClient));
            teamRuns.push({ ...m.value, tree: m.tree });
            log(`Stowage backup by a team user: ${m.value.backup.status?.progress?.itemsBackedUp ?? 0} items in ${m.value.seconds.toFixed(1)} s`);
          },
          ...(velero !== undefined && veleroBackupServer !== undefined ? [async () => {
            const setup = velero;
            const m = await measureTree(veleroBackupServer.pid)(() => runVeleroBackup(client, setup, `${prefix}-velero-${round}`, { includedNamespaces: p.namespaces },
              veleroBackupTimeout, veleroBackupServer.logFile, log));
            veleroRuns.push({ ...m.value, tree: m.tree });
            log(`Velero backup: ${m.value.backup.status?.progress?.itemsBackedUp ?? 0} items in ${m.value.seconds.toFixed(1)} s`);
          }] : []),
        ];
        for (let i = 0; i < steps.length; i++) await steps[(i + round) % steps.length]?.();
      }
    });
    await stopVelero();
    const firstFloor = floorRuns[0];
    if (firstFloor === undefined) throw new Error('no backup round ran');
    const bFloor = { ...firstFloor, seconds: median(floorRuns.map((r) => r.seconds)), cpuSeconds: median(floorRuns.map((r) => r.cpuSeconds)), rounds: floorRuns.map((r) => r.seconds) };
    const engine = { ...(engineRuns[0] as EngineResult), seconds: median(engineRuns.map((r) => r.seconds)), cpuSeconds: median(engineRuns.map((r) => r.cpuSeconds)), rounds: engineRuns.map((r) => r.seconds) };
    const backupName = `${prefix}-backup-0`;
    const backupFigures = { ...backupRounds(backupName, stowageRuns, b1.logFile), tarballBytes: await tarballBytes(backupName) };
    const encryptedName = `${prefix}-backup-encrypted-0`;
    const encryptedFigures = { ...backupRounds(encryptedName, encryptedRuns, b1.logFile), tarballBytes: await tarballBytes(encryptedName, ENCRYPTED_PREFIX) };
    const unsignedName = `${prefix}-backup-unsigned-0`;
    const unsignedFigures = { ...backupRounds(unsignedName, unsignedRuns, b1.logFile), tarballBytes: await tarballBytes(unsignedName, UNSIGNED_PREFIX) };
    const teamName = `${prefix}-backup-team-0`;
    const teamFigures = { ...backupRounds(teamName, teamRuns, b1.logFile), tarballBytes: await tarballBytes(teamName) };
    log(`backups (median of ${rounds}): floor ${bFloor.seconds.toFixed(1)} s, engine alone ${engine.seconds.toFixed(1)} s, Stowage ${backupFigures.seconds.toFixed(1)} s ` +
      `(${(backupFigures.seconds / bFloor.seconds).toFixed(2)}× floor), encrypted ${encryptedFigures.seconds.toFixed(1)} s (${(encryptedFigures.seconds / backupFigures.seconds).toFixed(2)}× unencrypted), ` +
      `unsigned ${unsignedFigures.seconds.toFixed(1)} s (signed ${(backupFigures.seconds / unsignedFigures.seconds).toFixed(2)}× unsigned), ` +
      `by a team user ${teamFigures.seconds.toFixed(1)} s (${(teamFigures.seconds / bFloor.seconds).toFixed(2)}× floor)`);

    // 6. The same backup with a plugin BackupItemAction on every item (run now, on the same objects).
    const pluginDir = path.join(opts.workDir, 'plugins');
    fs.rmSync(pluginDir, { recursive: true, force: true });
    buildBenchPlugin(pluginDir, dist, opts.profile === true ? ['--cpu-prof', `--cpu-prof-dir=${path.join(opts.workDir, 'profiles', 'bench-plugin')}`] : []);
    log('Stowage backup with a plugin action on every item');
    // As many rounds as the backup without it, on one warm server: a median against a median.
    const pluginRuns: BackupRound[] = [];
    const b2 = await withServer('backup-plugin', pluginDir, async (measure) => {
      for (let round = 0; round < rounds; round++) {
        const m = await measure(() => runBackup(`${prefix}-backup-plugin-${round}`));
        pluginRuns.push({ ...m.value, tree: m.tree });
        log(`Stowage backup with plugin, round ${round + 1} of ${rounds}: ${m.value.seconds.toFixed(1)} s`);
      }
    });
    const pluginBackupName = `${prefix}-backup-plugin-0`;
    let stamped = 0;
    const obj = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `${LOCATION_PREFIX}/backups/${pluginBackupName}/${pluginBackupName}.tar.gz` }));
    await forEachItem(obj.Body as AsyncIterable<Uint8Array>, (it) => {
      if (it.object.metadata?.annotations?.[STAMP_ANNOTATION] === 'true') stamped++;
    });
    const pluginFigures = {
      ...backupRounds(pluginBackupName, pluginRuns, b2.logFile),
      tarballBytes: await tarballBytes(pluginBackupName),
      stampedItems: stamped,
    };
    log(`Stowage backup with plugin: ${pluginFigures.items} items (${stamped} stamped) in ${pluginFigures.seconds.toFixed(1)} s`);

    // 4. Restore floor. Both restores go into fresh namespaces (a mapping of each seeded one), the
    // situation of a restore into a cluster that lacks them; deleting and re-creating the same
    // namespaces instead would add minutes of namespace-controller work and disturb the next phase.
    const mapped = (suffix: string): Record<string, string> => Object.fromEntries(p.namespaces.map((ns) => [ns, `${ns}-${suffix}`]));
    const floorMapping = mapped('rf');
    const restoreMapping = mapped('rs');
    const adminModeMapping = mapped('rc');
    const encryptedMapping = mapped('re');
    targetNamespaces.push(...Object.values(floorMapping), ...Object.values(restoreMapping), ...Object.values(adminModeMapping), ...Object.values(encryptedMapping));
    log('restore floor: download, parse, create');
    const restoreConcurrency = DEFAULT_RESTORE_CONCURRENCY;
    const rFloor = await restoreFloor({
      client: createDynamicClient(kc, { ...limits, userAgent: 'stowage-bench/floor' }), s3, bucket, key: floorKey(0), concurrency: restoreConcurrency,
      mapNamespace: (ns) => floorMapping[ns] ?? ns,
    });
    log(`restore floor: ${rFloor.created} created, ${rFloor.existed} existed in ${rFloor.seconds.toFixed(1)} s`);
    const floorTotal = Object.values(await countSeeded(client, Object.values(floorMapping))).reduce((a, b) => a + b, 0);
    if (floorTotal !== p.objects) throw new Error(`the restore floor left ${floorTotal} of ${p.objects} seeded objects`);

    // 5. Stowage restore, in trust mode requester (the default: every request impersonates the
    // Restore's creator), then the same restore in trust mode cluster-admin (the server's own
    // rights), each into fresh namespaces: what impersonation costs, in the same run.
    const restoreFigures = await stowageRestore(`${prefix}-restore`, backupName, restoreMapping, 'requester', 'restore-requester');
    const adminModeRestore = await stowageRestore(`${prefix}-restore-cluster-admin`, backupName, adminModeMapping, 'cluster-admin', 'restore-cluster-admin');
    const encryptedRestore = await stowageRestore(`${prefix}-restore-encrypted`, encryptedName, encryptedMapping, 'requester', 'restore-requester-encrypted');
    log(`Stowage restores / floor: ${[restoreFigures, adminModeRestore, encryptedRestore].map((r) => `${(r.seconds / rFloor.seconds).toFixed(2)}×`).join(', ')} (requester, cluster-admin, encrypted)`);

    // The peer's restore of its first backup, on a fresh server, into fresh namespaces as Stowage's.
    let peer: PeerReport | undefined;
    const firstVelero = veleroRuns[0];
    if (velero !== undefined && veleroBin !== undefined && veleroBackupServer !== undefined && firstVelero !== undefined) {
      const veleroBackupName = `${prefix}-velero-0`;
      const bst = firstVelero.backup.status;
      const backupRow = {
        ...stowageRun(veleroBackupName, bst?.phase ?? '', median(veleroRuns.map((r) => r.seconds)), bst?.progress?.itemsBackedUp ?? 0, bst?.warnings ?? 0, bst?.errors ?? 0,
          { tree: mergeTrees(veleroRuns.map((r) => r.tree)), logFile: veleroBackupServer.logFile }),
        rounds: veleroRuns.map((r) => r.seconds),
        tarballBytes: await tarballBytes(veleroBackupName, VELERO_PREFIX),
      };
      const veleroMapping = mapped('rv');
      targetNamespaces.push(...Object.values(veleroMapping));
      log(`Velero restore of ${veleroBackupName}`);
      const srv = await startVelero(velero, 'restore');
      const m = await measureTree(srv.pid)(() => runVeleroRestore(client, velero, `${prefix}-velero-restore`, veleroBackupName, veleroMapping, 600_000 + opts.objects * 100, srv.logFile, log));
      await stopVelero();
      const rst = m.value.restore.status;
      const seededAfter = Object.values(await countSeeded(client, Object.values(veleroMapping))).reduce((a, b) => a + b, 0);
      const restoreRow = {
        ...stowageRun(`${prefix}-velero-restore`, rst?.phase ?? '', m.value.seconds, rst?.progress?.itemsRestored ?? 0, rst?.warnings ?? 0, rst?.errors ?? 0, { tree: m.tree, logFile: srv.logFile }),
        seededObjectsAfter: seededAfter,
      };
      log(`Velero restore: ${restoreRow.items} items in ${restoreRow.seconds.toFixed(1)} s (${(restoreRow.seconds / rFloor.seconds).toFixed(2)}× floor); ${seededAfter} of ${p.objects} seeded objects present`);
      peer = {
        tool: 'velero', version: veleroBin.version, awsPluginVersion: veleroBin.awsPluginVersion, buildSeconds: veleroBin.seconds, serverFlags: velero.serverFlags,
        backup: backupRow, restore: restoreRow,
        ratios: peerRatios({ backupFloor: bFloor, restoreFloor: rFloor, backup: backupFigures, restore: restoreFigures, restoreClusterAdmin: adminModeRestore }, { backup: backupRow, restore: restoreRow }),
      };
    }

    const partial: Omit<BenchReport, 'goals'> = {
      schema: REPORT_SCHEMA,
      date: new Date().toISOString(),
      machine: machineInfo(),
      params: {
        objects: p.objects, namespaces: p.namespaces.length, pageSize: DEFAULT_CONFIG.clientPageSize, clientQps: limits.qps, clientBurst: limits.burst,
        listConcurrency: BACKUP_LIST_CONCURRENCY, restoreConcurrency, seedConcurrency, backupRounds: rounds,
        serverMemoryLimitMiB: opts.memoryLimitMiB,
        serverNodeArgs: heapFlags,
        serverEnv: deployedServerEnv(),
      },
      seed: { objects: p.objects, byKind: p.byKind, seconds: seeded.seconds, objectsPerSecond: seeded.objectsPerSecond },
      backupFloor: bFloor,
      backupEngine: engine,
      backup: backupFigures,
      backupWithPlugin: pluginFigures,
      backupEncrypted: encryptedFigures,
      backupUnsigned: unsignedFigures,
      backupTeam: teamFigures,
      restoreFloor: rFloor,
      restore: restoreFigures,
      restoreClusterAdmin: adminModeRestore,
      restoreEncrypted: encryptedRestore,
      ratios: {
        backup: backupFigures.seconds / bFloor.seconds,
        engine: engine.seconds / bFloor.seconds,
        restore: restoreFigures.seconds / rFloor.seconds,
        restoreClusterAdmin: adminModeRestore.seconds / rFloor.seconds,
        impersonation: restoreFigures.seconds / adminModeRestore.seconds,
        pluginOverhead: pluginFigures.seconds / backupFigures.seconds,
        encryptedBackup: encryptedFigures.seconds / backupFigures.seconds,
        signing: backupFigures.seconds / unsignedFigures.seconds,
        encryptedRestore: encryptedRestore.seconds / restoreFigures.seconds,
        teamBackup: teamFigures.seconds / bFloor.seconds,
      },
      ...(peer !== undefined ? { peer } : {}),
      totalSeconds: 0,
    };
    if (opts.baseline !== undefined) {
      partial.memoryGrowth = {
        baselineObjects: opts.baseline.params.objects,
        backup: backupFigures.serverPeakRssBytes / opts.baseline.backup.serverPeakRssBytes,
        restore: restoreFigures.serverPeakRssBytes / opts.baseline.restore.serverPeakRssBytes,
      };
    }
    partial.totalSeconds = (performance.now() - t0) / 1000;
    return { ...partial, goals: checkGoals(partial) };
  } finally {
    if (cp === undefined && fast !== undefined) {
      // A shared control plane: leave nothing behind (the namespace controller finishes the job).
      for (const ns of [...targetNamespaces, serverNs]) await fast.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
    }
    await veleroServer?.stop();
    fast?.close();
    await s3srv?.close();
    await cp?.stop();
  }
}
