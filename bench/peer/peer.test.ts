// The peer rows' pure parts: the command line that asks for them, the ratios and their rendering,
// and the speed flags Velero's server gets.
import { describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../args.js';
import { peerMarkdown, peerRatios, treePeakRss, type PeerReport, type StowageRun } from '../report.js';
import { veleroInstallArgs, veleroServerFlags } from './velero.js';

const MiB = 1024 ** 2;

function run(seconds: number, serverMiB: number, pluginsMiB: number, extra: Partial<StowageRun> = {}): StowageRun {
  return {
    name: 'x', phase: 'Completed', seconds, items: 1000, warnings: 0, errors: 0, serverPeakRssBytes: serverMiB * MiB, pluginsPeakRssBytes: pluginsMiB * MiB,
    plugins: [], serverCpuSeconds: 1, cpuSeconds: 2, logFile: '/tmp/x.log', ...extra,
  };
}

describe('npm run bench arguments', () => {
  it('runs without a peer on s3rver by default', () => {
    const a = parseBenchArgs([]);
    expect(a).toMatchObject({ objects: 10_000, namespaces: 10, backupRounds: 5, s3: 's3rver', help: false });
    expect(a.peer).toBeUndefined();
  });

  it('puts every row on MinIO when Velero is the peer', () => {
    expect(parseBenchArgs(['--objects', '1000', '--rounds', '2', '--peer', 'velero'])).toMatchObject({ objects: 1000, backupRounds: 2, peer: 'velero', s3: 'minio' });
    expect(parseBenchArgs(['--peer=velero', '--s3=minio'])).toMatchObject({ peer: 'velero', s3: 'minio' });
    expect(parseBenchArgs(['--s3', 'minio'])).toMatchObject({ s3: 'minio' });
  });

  it('refuses what it cannot run, saying why', () => {
    expect(() => parseBenchArgs(['--peer', 'kasten'])).toThrow('--peer must be one of velero, not "kasten"');
    expect(() => parseBenchArgs(['--peer', 'velero', '--s3', 's3rver'])).toThrow('--peer velero runs every row on MinIO: leave out --s3 or give --s3 minio');
    expect(() => parseBenchArgs(['--s3', 'gcs'])).toThrow('--s3 must be one of s3rver, minio, not "gcs"');
    expect(() => parseBenchArgs(['--rounds', '0'])).toThrow('--rounds must be a positive integer, not "0"');
    expect(() => parseBenchArgs(['--objects', '5', '--namespaces', '6'])).toThrow('--namespaces may not exceed --objects');
    expect(() => parseBenchArgs(['--peers', 'velero'])).toThrow(/Unknown option '--peers'/);
  });
});

describe('peer ratios', () => {
  const stowage = {
    backupFloor: { seconds: 4 },
    restoreFloor: { seconds: 100 },
    backup: run(5, 200, 150),
    restore: run(104, 180, 170),
    restoreClusterAdmin: run(101, 170, 160),
  };
  const velero = { backup: run(40, 300, 100), restore: run(250, 200, 150) };

  it('gives the peer against the floors and Stowage against the peer, time and memory', () => {
    const r = peerRatios(stowage, velero);
    expect(r.backupToFloor).toBeCloseTo(10, 9);
    expect(r.restoreToFloor).toBeCloseTo(2.5, 9);
    expect(r.stowageBackupToPeer).toBeCloseTo(0.125, 9);
    expect(r.stowageRestoreToPeer).toBeCloseTo(0.416, 3);
    expect(r.stowageRestoreClusterAdminToPeer).toBeCloseTo(0.404, 3);
    // Server and plugins together: (200+150)/(300+100), (180+170)/(200+150).
    expect(treePeakRss(velero.backup)).toBe(400 * MiB);
    expect(r.stowageBackupRssToPeer).toBeCloseTo(0.875, 9);
    expect(r.stowageRestoreRssToPeer).toBeCloseTo(1, 9);
    // The servers alone: 200/300, 180/200.
    expect(r.stowageBackupServerRssToPeer).toBeCloseTo(0.667, 3);
    expect(r.stowageRestoreServerRssToPeer).toBeCloseTo(0.9, 9);
  });

  it('renders every ratio and the flags Velero ran with', () => {
    const peer: PeerReport = {
      tool: 'velero', version: 'v1.18.3', awsPluginVersion: 'v1.14.3', buildSeconds: 0.2,
      serverFlags: veleroServerFlags({ clientQps: 100, clientBurst: 200, pageSize: 500, itemBlockWorkers: 4 }),
      backup: { ...velero.backup, rounds: [38, 40, 45], tarballBytes: 3 * MiB },
      restore: { ...velero.restore, seededObjectsAfter: 1000 },
      ratios: peerRatios(stowage, velero),
    };
    const md = peerMarkdown(stowage, peer).join('\n');
    expect(md).toContain('`velero server --client-qps 100 --client-burst 200 --client-page-size 500 --item-block-worker-count 4`');
    expect(md).toContain('| Velero backup (3.0 MiB) | 40.0 (38.0 / 40.0 / 45.0) | 1000 | 25 | 300 | 100 | 2.0 | 10× | **0.13×** time; RSS 0.67× (servers), 0.88× (with plugins) |');
    expect(md).toContain('| Velero restore | 250.0 | 1000 | 4 | 200 | 150 | 2.0 | 2.5× | **0.42×** time (requester mode), 0.4× (cluster-admin); RSS 0.9× (servers), 1× (with plugins) |');
    expect(md).toContain('1000 seeded objects present afterwards');
  });
});

describe('Velero configuration', () => {
  it('installs the AWS plugin on path-style S3 at the benchmark endpoint, with no Secret, snapshots or node agent', () => {
    const args = veleroInstallArgs({ namespace: 'b-velero', kubeconfigPath: '/k', bucket: 'b', s3: { endpoint: 'http://127.0.0.1:9000', region: 'us-east-1' } }, 'v1.14.3');
    expect(args.join(' ')).toBe('install --kubeconfig /k --namespace b-velero --provider aws --plugins velero/velero-plugin-for-aws:v1.14.3 --bucket b --prefix velero ' +
      '--backup-location-config region=us-east-1,s3ForcePathStyle=true,s3Url=http://127.0.0.1:9000 --no-secret --use-volume-snapshots=false --dry-run -o json');
    expect(args).not.toContain('--use-node-agent');
  });
});
