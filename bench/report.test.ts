// The report's pure parts: the signing row (its goal, checked against the ratio, and its line
// in the markdown) and issue 35's goals.
import { describe, expect, it } from 'vitest';
import { checkGoals, toMarkdown, type BackupRow, type BenchReport, type StowageRun } from './report.js';

const MiB = 1024 ** 2;

function run(seconds: number): StowageRun {
  return {
    name: 'x', phase: 'Completed', seconds, items: 1000, warnings: 0, errors: 0, serverPeakRssBytes: 200 * MiB, pluginsPeakRssBytes: 150 * MiB,
    plugins: [], serverCpuSeconds: 1, cpuSeconds: 2, logFile: '/tmp/x.log',
  };
}

const row = (seconds: number, signed = true): BackupRow => ({ ...run(seconds), rounds: [seconds, seconds], tarballBytes: 14 * MiB, signed });
const restoreRow = (seconds: number) => ({ ...run(seconds), created: 1000, skipped: 0, failed: 0, seededObjectsAfter: 1000 });

/** A report whose signed backup takes `signed` s and whose unsigned one takes `unsigned` s. */
function report(signed: number, unsigned: number): Omit<BenchReport, 'goals'> {
  return {
    schema: 7, date: '2026-12-05T12:00:00.000Z',
    machine: { cpus: 2, cpuModel: 'test', memoryGiB: 23.5, node: 'v20.20.2', platform: 'linux', loadAverage: [0.2, 0.2, 0.2] },
    params: {
      objects: 1000, namespaces: 10, pageSize: 500, clientQps: 100, clientBurst: 200, listConcurrency: 4, restoreConcurrency: 16, seedConcurrency: 48,
      backupRounds: 2, serverMemoryLimitMiB: 1024, serverNodeArgs: ['--max-old-space-size=512'],
    },
    seed: { objects: 1000, byKind: { configmaps: 1000 }, seconds: 2, objectsPerSecond: 500 },
    backupFloor: { seconds: 4, rounds: [4, 4], items: 1000, listRequests: 10, tarballBytes: 14 * MiB, cpuSeconds: 1 },
    backupEngine: { seconds: 4, rounds: [4, 4], phase: 'Completed', items: 1000, tarballBytes: 14 * MiB, cpuSeconds: 1 },
    backup: row(signed),
    backupWithPlugin: { ...row(5), stampedItems: 1000 },
    backupEncrypted: row(signed),
    backupUnsigned: row(unsigned, false),
    backupTeam: row(signed),
    restoreFloor: { seconds: 100, readSeconds: 1, items: 1000, created: 1000, existed: 0, skipped: 0, cpuSeconds: 5 },
    restore: restoreRow(101),
    restoreClusterAdmin: restoreRow(101),
    restoreEncrypted: restoreRow(101),
    ratios: {
      backup: signed / 4, engine: 1, restore: 1.01, restoreClusterAdmin: 1.01, impersonation: 1, pluginOverhead: 5 / signed,
      encryptedBackup: 1, encryptedRestore: 1, teamBackup: signed / 4, signing: signed / unsigned,
    },
    totalSeconds: 60,
  };
}

describe('signing row', () => {
  it('checks the signed backup against 1.1x the unsigned one', () => {
    const goal = (r: Omit<BenchReport, 'goals'>) => checkGoals(r).find((g) => g.goal === 'signed backup ≤ 1.1× the unsigned one');
    expect(goal(report(4.2, 4))).toEqual({ goal: 'signed backup ≤ 1.1× the unsigned one', target: '≤ 1.1×', measured: '1.05×', met: true });
    expect(goal(report(4.8, 4))).toMatchObject({ measured: '1.2×', met: false });
  });

  it('shows the unsigned row with the ratio and says when each backup started', () => {
    const r = report(4.2, 4);
    const md = toMarkdown({ ...r, goals: checkGoals(r) });
    expect(md).toContain('| Stowage backup, unsigned (`spec.signing.disabled: true`) | 4.0 (4.0 / 4.0) | 1000 | 250 | 200 | 150 | 2.0 | the signed backup takes **1.05×** its time |');
    expect(md).toContain("each Stowage backup starts once the server's client has refilled its burst since the last one ended (2 s).");
    expect(md).toContain('| signed backup ≤ 1.1× the unsigned one | ≤ 1.1× | 1.05× | yes |');
  });
});

describe("issue 35's goals", () => {
  it('checks each row against its target, a team user and both trust modes included', () => {
    const r = report(4.2, 4);
    const goals = checkGoals({ ...r, ratios: { ...r.ratios, backup: 1.08, teamBackup: 1.12, restore: 1.04, restoreClusterAdmin: 1.06, pluginOverhead: 1.19 } });
    expect(goals.map((g) => [g.goal, g.measured, g.met])).toEqual([
      ['backup wall time ≤ 1.1× floor (N=1000)', '1.08×', true],
      ["a team user's backup ≤ 1.1× floor (N=1000)", '1.12×', false],
      ['restore wall time ≤ 1.05× floor, trust mode requester (N=1000)', '1.04×', true],
      ['restore wall time ≤ 1.05× floor, trust mode cluster-admin (N=1000)', '1.06×', false],
      ['backup with a plugin action on every item ≤ 1.2× backup without', '1.19×', true],
      ['encrypted backup ≤ 1.1× the unencrypted one', '1×', true],
      ['encrypted restore ≤ 1.1× the unencrypted one', '1×', true],
      ['signed backup ≤ 1.1× the unsigned one', '1.05×', true],
      ['server peak RSS during backup ≤ 1.2× its value at N=5k', 'needs --baseline (a report from a run at N=5k), or npm run bench:memory', null],
      ['server peak RSS during restore ≤ 1.2× its value at N=5k', 'needs --baseline (a report from a run at N=5k), or npm run bench:memory', null],
    ]);
  });

  it('checks memory growth against a baseline when there is one', () => {
    const r = report(4.2, 4);
    const goals = checkGoals({ ...r, memoryGrowth: { baselineObjects: 5000, backup: 1.18, restore: 1.4 } });
    expect(goals.slice(-2).map((g) => [g.goal, g.measured, g.met])).toEqual([
      ['server peak RSS during backup at N=1000 ≤ 1.2× at N=5000', '1.18×', true],
      ['server peak RSS during restore at N=1000 ≤ 1.2× at N=5000', '1.4×', false],
    ]);
  });
});
