// The volume-snapshot row's pure parts: its options, its medians and ratios, its markdown. The
// figures here are made up; nothing measured is asserted (the row itself runs only on demand).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { median } from './report.js';
import { parseVolumeArgs, rowOf, toVolumeMarkdown, volumeRatios, type VolumeBenchReport, type VolumeRow } from './volumeReport.js';

const ROOT = '/repo';

describe('bench:volumes options', () => {
  it('defaults to 20 volumes, 3 rounds, 256 KiB each, the report under bench/results, a build, deploy/\'s memory limit', () => {
    expect(parseVolumeArgs([], ROOT)).toEqual({
      help: false, volumes: 20, rounds: 3, dataBytes: 256 * 1024, out: path.join(ROOT, 'bench/results/volumes.json'),
      memoryLimitMiB: undefined, build: true, dist: undefined,
    });
  });

  it('takes every option, relative paths from the repository', () => {
    expect(parseVolumeArgs(['--volumes', '5', '--rounds=4', '--data', '8', '--out', 'x/v.json', '--memory-limit', '2048', '--no-build', '--dist', '/tmp/base/dist'], ROOT)).toEqual({
      help: false, volumes: 5, rounds: 4, dataBytes: 8192, out: path.join(ROOT, 'x/v.json'), memoryLimitMiB: 2048, build: false, dist: '/tmp/base/dist',
    });
    expect(parseVolumeArgs(['--memory-limit', '0'], ROOT).memoryLimitMiB).toBe(0);
    expect(parseVolumeArgs(['-h'], ROOT).help).toBe(true);
  });

  it('refuses what is not a positive integer, and unknown options, by name', () => {
    expect(() => parseVolumeArgs(['--volumes', '0'], ROOT)).toThrow('--volumes must be a positive integer, not "0"');
    expect(() => parseVolumeArgs(['--rounds', '2.5'], ROOT)).toThrow('--rounds must be a positive integer, not "2.5"');
    expect(() => parseVolumeArgs(['--data', 'lots'], ROOT)).toThrow('--data must be a positive integer, not "lots"');
    expect(() => parseVolumeArgs(['--memory-limit=-1'], ROOT)).toThrow('--memory-limit must be a positive integer, not "-1"');
    expect(() => parseVolumeArgs(['--objects', '5'], ROOT)).toThrow(/Unknown option '--objects'/);
  });
});

describe('bench:volumes figures', () => {
  it('a median is the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('a row holds the medians of its rounds and every round in order', () => {
    expect(rowOf([{ seconds: 3, serverCpuSeconds: 0.5, cpuSeconds: 0.9 }, { seconds: 1, serverCpuSeconds: 0.3, cpuSeconds: 0.4 }, { seconds: 2, serverCpuSeconds: 0.4, cpuSeconds: 0.6 }]))
      .toEqual({ seconds: 2, rounds: [3, 1, 2], serverCpuSeconds: 0.4, cpuSeconds: 0.6 });
    expect(() => rowOf([])).toThrow('a row needs at least one round');
  });

  it('the ratios: with / without of the medians, each round\'s own, and what one snapshot adds', () => {
    const row = (rounds: number[]): VolumeRow => rowOf(rounds.map((seconds) => ({ seconds, serverCpuSeconds: 0, cpuSeconds: 0 })));
    const r = volumeRatios(20, { withSnapshots: row([6, 4, 5]), withoutSnapshots: row([1, 2, 1]), deleteWith: row([9, 11, 10]), deleteWithout: row([0.5, 0.5, 0.5]) });
    expect(r.backup).toBe(5);
    expect(r.backupByRound).toEqual([6, 2, 5]);
    expect(r.secondsPerSnapshot).toBe(0.2);
    expect(r.deletion).toBe(20);
    expect(r.deletionSecondsPerSnapshot).toBeCloseTo(0.475, 10);
  });
});

describe('bench:volumes markdown', () => {
  const row = (seconds: number, rounds: number[]): VolumeRow => ({ seconds, rounds, serverCpuSeconds: 1.25, cpuSeconds: 2.5 });
  const report = (leftovers: string[]): VolumeBenchReport => {
    const rows = { withSnapshots: row(5, [6, 4, 5]), withoutSnapshots: row(1, [1, 2, 1]), deleteWith: row(10, [9, 11, 10]), deleteWithout: row(1, [1, 1, 1]) };
    return {
      schema: 1, date: '2026-12-05T10:00:00.000Z',
      machine: { cpus: 2, cpuModel: 'CPU', memoryGiB: 23.5, node: 'v20.20.0', platform: 'linux', loadAverage: [3, 2.5, 2] },
      loadAtStart: [1.5, 1, 0.5], loadByRound: [2, 2.25, 3],
      params: {
        volumes: 20, rounds: 3, dataBytesPerVolume: 262144, driver: 'csi.stowage.test', storageClass: 'stowage-csi', volumeSnapshotClass: 'stowage-csi-snapshots',
        trustMode: 'requester', serverMemoryLimitMiB: 1024, serverNodeArgs: ['--max-old-space-size=512', '--max-semi-space-size=16'],
      },
      setup: { clusterStartSeconds: 40, claimsBoundSeconds: 3, dataWrittenSeconds: 6 },
      withSnapshots: { ...rows.withSnapshots, items: 45, snapshotsAttempted: 20, snapshotsCompleted: 20 },
      withoutSnapshots: { ...rows.withoutSnapshots, items: 25 },
      deleteWith: rows.deleteWith, deleteWithout: rows.deleteWithout,
      ratios: volumeRatios(20, rows), leftovers, serverLogs: ['/tmp/x/server-volumes.log'], totalSeconds: 120,
    };
  };

  it('gives each phase its median and rounds, the ratios, the load and the teardown', () => {
    const md = toVolumeMarkdown(report([]));
    expect(md).toContain('| Backup, snapshotVolumes: false (floor) | 1.00 (1.00 / 2.00 / 1.00) | 25 | 0 | 1.25 | 2.50 |  |');
    expect(md).toContain('| Backup with 20 CSI snapshots (create → Completed) | 5.00 (6.00 / 4.00 / 5.00) | 45 | 20 of 20 | 1.25 | 2.50 | **5.00×** the floor |');
    expect(md).toContain('| Deletion of the backup with its 20 snapshots (DeleteBackupRequest → Processed) | 10.00 (9.00 / 11.00 / 10.00) |  | 20 | 1.25 | 2.50 | **10.00×** the deletion without |');
    expect(md).toContain('The 20 snapshots add 4.00 s to the backup (0.20 s per snapshot; ratio by round 6.00 / 2.00 / 5.00) and 9.00 s to its deletion (0.45 s per snapshot).');
    expect(md).toContain('Load average before the cluster started 1.5 1 0.5, at the end of each round 2.00 / 2.25 / 3.00, at the end 3 2.5 2.');
    expect(md).toContain('256 KiB written to each');
    expect(md).toContain('Teardown: the machine as found.');
  });

  it('names what the teardown left behind', () => {
    expect(toVolumeMarkdown(report(['nft table stowage still there', '/tmp/x mounted']))).toContain('Teardown: **left behind: nft table stowage still there; /tmp/x mounted**.');
  });
});
