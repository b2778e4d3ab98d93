// A quick pass of the benchmark harness (N=200) on the shared control plane and S3 server, so
// `npm run bench` keeps working: every figure is present and sane, both restores really brought
// the objects back, and the plugin action really ran on every item. Timings are not compared:
// at N=200 they are start-up noise, and the shared machine makes them noisier still.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { runBench } from '../../bench/harness.js';
import { toMarkdown, type BenchReport, type StowageRun } from '../../bench/report.js';
import { deployedMemoryLimitMiB, deployedNodeOptions, deployedServerEnv, deployedServerFlags, heapFlagsForMemoryLimit } from '../../bench/server.js';

const OBJECTS = 200;
const NAMESPACES = 4;
const MiB = 1024 ** 2;

describe('benchmark harness (smoke run, N=200)', () => {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-bench-smoke-'));
  const lines: string[] = [];
  afterAll(() => fs.rmSync(workDir, { recursive: true, force: true }));

  const expectServerFigures = (run: StowageRun, what: string): void => {
    expect(run.phase, what).toBe('Completed');
    expect(run.seconds, what).toBeGreaterThan(0);
    // A Node server with its informers: tens of MiB at least, far below a GiB at N=200.
    expect(run.serverPeakRssBytes, what).toBeGreaterThan(30 * MiB);
    expect(run.serverPeakRssBytes, what).toBeLessThan(1024 * MiB);
    expect(run.plugins.length, what).toBeGreaterThanOrEqual(1);
    expect(run.pluginsPeakRssBytes, what).toBeGreaterThan(20 * MiB);
    expect(run.serverCpuSeconds, what).toBeGreaterThan(0);
    expect(run.cpuSeconds, what).toBeGreaterThan(run.serverCpuSeconds);
    expect(fs.existsSync(run.logFile), what).toBe(true);
  };

  it('measures every phase and reports every figure', async () => {
    const report = await runBench({
      objects: OBJECTS,
      namespaces: NAMESPACES,
      backupRounds: 2,
      cluster: { kubeconfigPath: inject('cluster').kubeconfigPath },
      s3: inject('s3'),
      workDir,
      memoryLimitMiB: deployedMemoryLimitMiB(),
      log: (line) => lines.push(line),
    });
    // The server's heap is sized as in the deployed container: Node's sizing for 1Gi, with the
    // deployment's NODE_OPTIONS in place of the semi-space size it would derive.
    expect(deployedNodeOptions()).toEqual(['--max-semi-space-size=16']);
    expect(report.params).toMatchObject({ serverMemoryLimitMiB: 1024, serverNodeArgs: ['--max-old-space-size=512', '--max-semi-space-size=16'] });
    // And with the deployment's allocator setting (its env), which every benchmark server inherits.
    expect(deployedServerEnv()).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072' });
    expect(report.params.serverEnv).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072' });
    expect(heapFlagsForMemoryLimit(256)).toEqual(['--max-old-space-size=256', '--max-semi-space-size=2']);
    expect(deployedServerFlags(1024, [])).toEqual(['--max-old-space-size=512', '--max-semi-space-size=4']);
    expect(deployedServerFlags(1024, ['--max-old-space-size=1536', '--trace-gc'])).toEqual(['--max-semi-space-size=4', '--max-old-space-size=1536', '--trace-gc']);

    expect(report.params).toMatchObject({ objects: OBJECTS, namespaces: NAMESPACES, clientQps: 100, clientBurst: 200, pageSize: 500, restoreConcurrency: 16, backupRounds: 2 });
    for (const x of [report.backupFloor, report.backupEngine, report.backup, report.backupWithPlugin, report.backupEncrypted, report.backupUnsigned, report.backupTeam]) {
      expect(x.rounds).toHaveLength(2);
      expect(x.seconds).toBeCloseTo(((x.rounds[0] ?? 0) + (x.rounds[1] ?? 0)) / 2, 6);
    }
    expect(report.seed.objects).toBe(OBJECTS);
    expect(Object.values(report.seed.byKind).reduce((a, b) => a + b, 0)).toBe(OBJECTS);
    expect(report.seed.seconds).toBeGreaterThan(0);

    // Both backups hold the seeded objects, plus what the cluster adds (default service accounts,
    // their token secrets, root CA config maps), the namespaces and the CRD: the same scope.
    const f = report.backupFloor;
    expect(f.items).toBeGreaterThan(OBJECTS);
    expect(report.backupEngine).toMatchObject({ phase: 'Completed', items: f.items });
    expect(report.backupEngine.cpuSeconds).toBeGreaterThan(0);
    expect(report.backup.items).toBe(f.items);
    expect(report.backupWithPlugin.items).toBe(f.items);
    expect(f.listRequests).toBeGreaterThanOrEqual(NAMESPACES);
    expect(f.tarballBytes).toBeGreaterThan(OBJECTS * 1024 * 0.4); // 1–4 KiB per object, twice, gzipped
    expect(report.backup.tarballBytes).toBeGreaterThan(f.tarballBytes * 0.8);
    expect(report.backup.tarballBytes).toBeLessThan(f.tarballBytes * 1.25);
    expect(report.backupWithPlugin.stampedItems).toBe(report.backupWithPlugin.items);
    expectServerFigures(report.backup, 'backup');
    expectServerFigures(report.backupWithPlugin, 'backup with plugin');
    // The benchmark's plugin process ran beside the built-in one.
    expect(report.backupWithPlugin.plugins.some((p) => p.command.includes('bench-plugin'))).toBe(true);

    const rf = report.restoreFloor;
    expect(rf.items).toBe(f.items);
    expect(rf.created + rf.existed + rf.skipped).toBe(rf.items);
    expect(rf.created).toBeGreaterThanOrEqual(OBJECTS);
    expect(rf.seconds).toBeGreaterThan(0);
    expectServerFigures(report.restore, 'restore');
    expect(report.restore.seededObjectsAfter).toBe(OBJECTS);
    expect(report.restore.failed).toBe(0);
    expect(report.restore.created).toBeGreaterThanOrEqual(OBJECTS);

    for (const [k, v] of Object.entries(report.ratios)) {
      expect(Number.isFinite(v), k).toBe(true);
      expect(v, k).toBeGreaterThan(0);
    }
    expect(report.ratios.backup).toBeCloseTo(report.backup.seconds / f.seconds, 6);
    expect(report.ratios.engine).toBeCloseTo(report.backupEngine.seconds / f.seconds, 6);
    expect(report.ratios.restore).toBeCloseTo(report.restore.seconds / rf.seconds, 6);
    expect(report.ratios.restoreClusterAdmin).toBeCloseTo(report.restoreClusterAdmin.seconds / rf.seconds, 6);
    expect(report.ratios.impersonation).toBeCloseTo(report.restore.seconds / report.restoreClusterAdmin.seconds, 6);
    expect(report.restoreClusterAdmin.phase).toBe('Completed');
    expect(report.restoreClusterAdmin.seededObjectsAfter).toBe(OBJECTS);
    expect(report.ratios.pluginOverhead).toBeCloseTo(report.backupWithPlugin.seconds / report.backup.seconds, 6);
    // The encrypted rows: the same items, every seeded object restored, and their ratios to the unencrypted runs.
    expectServerFigures(report.backupEncrypted, 'encrypted backup');
    expect(report.backupEncrypted.items).toBe(f.items);
    expectServerFigures(report.restoreEncrypted, 'encrypted restore');
    expect(report.restoreEncrypted.seededObjectsAfter).toBe(OBJECTS);
    expect(report.restoreEncrypted.failed).toBe(0);
    expect(report.ratios.encryptedBackup).toBeCloseTo(report.backupEncrypted.seconds / report.backup.seconds, 6);
    // The unsigned row: the same backup to a location with spec.signing.disabled, which stores no signature.
    expectServerFigures(report.backupUnsigned, 'unsigned backup');
    expect(report.backupUnsigned.items).toBe(f.items);
    expect(report.backup.signed).toBe(true);
    expect(report.backupUnsigned.signed).toBe(false);
    expect(report.ratios.signing).toBeCloseTo(report.backup.seconds / report.backupUnsigned.seconds, 6);
    // The team user's backup: every seeded object (their namespaces' admin role and the CRD's reader
    // role let them list it all); the CRD itself is cluster-scoped, which they may not read.
    expectServerFigures(report.backupTeam, 'backup by a team user');
    expect(report.backupTeam.items).toBeGreaterThanOrEqual(f.items - 1);
    expect(report.backupTeam.items).toBeLessThanOrEqual(f.items);
    expect(report.ratios.teamBackup).toBeCloseTo(report.backupTeam.seconds / f.seconds, 6);
    expect(report.ratios.encryptedRestore).toBeCloseTo(report.restoreEncrypted.seconds / report.restore.seconds, 6);
    // Issue 35's targets; memory growth needs a baseline (or npm run bench:memory).
    expect(report.goals.map((g) => g.met === null)).toEqual([false, false, false, false, false, false, false, false, true, true]);
    expect(report.goals[7]).toMatchObject({ goal: 'signed backup ≤ 1.1× the unsigned one', met: report.ratios.signing <= 1.1 });
    expect(report.goals[0]?.met).toBe(report.ratios.backup <= 1.1);
    expect(report.goals[1]?.met).toBe(report.ratios.teamBackup <= 1.1);
    expect(report.goals[3]?.met).toBe(report.ratios.restoreClusterAdmin <= 1.05);

    // The JSON round-trips and the markdown shows every phase with its ratio.
    const again = JSON.parse(JSON.stringify(report)) as BenchReport;
    expect(again).toEqual(report);
    const md = toMarkdown(report);
    for (const row of ['Seed', 'Backup floor', 'Backup engine alone', 'Stowage backup', 'Stowage backup + plugin action', 'Stowage backup, client-side encrypted', 'Stowage backup, unsigned (`spec.signing.disabled: true`)', 'Stowage backup by a team user', 'Restore floor', 'Stowage restore', 'Stowage restore of the encrypted backup']) expect(md).toContain(`| ${row}`);
    expect(md).toContain(`**${(Math.round(report.ratios.restore * 100) / 100).toString()}×**`);
    expect(md).toContain("Server heap as in the deployed container: sized by Node for its 1024 MiB memory limit, with the deployment's NODE_OPTIONS (--max-old-space-size=512 --max-semi-space-size=16), and its environment MALLOC_MMAP_THRESHOLD_=131072.");
    expect(lines.some((l) => l.includes('Stowage restore:'))).toBe(true);
  }, 900_000);
});
