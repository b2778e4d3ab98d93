// The memory pass's pure parts: its command line, its goals (growth within ten times the baseline's
// objects, every peak under the limit) and the markdown.
import { describe, expect, it } from 'vitest';
import { memoryGoals, parseMemoryArgs, toMemoryMarkdown, type HeapPeak, type MemoryReport, type MemoryRow } from './memoryReport.js';

const MiB = 1024 ** 2;

function row(objects: number, backupMiB: number, restoreMiB: number, heap?: HeapPeak): MemoryRow {
  const run = { phase: 'Completed', warnings: 0, errors: 0, pluginsPeakRssBytes: 150 * MiB, plugins: [], serverCpuSeconds: 1, cpuSeconds: 2, logFile: '/tmp/x.log' };
  return {
    objects,
    backup: { ...run, name: 'b', seconds: objects / 4000, items: objects + 51, serverPeakRssBytes: backupMiB * MiB, ...(heap !== undefined ? { heapAtPeak: heap } : {}) },
    restore: { ...run, name: 'r', seconds: objects / 100, items: objects + 51, serverPeakRssBytes: restoreMiB * MiB, created: objects + 30, skipped: 21, failed: 0, seededObjectsAfter: objects },
  };
}

describe('parseMemoryArgs', () => {
  it('defaults to 5k then 50k, ten namespaces, the deployed limit', () => {
    const a = parseMemoryArgs([], '/repo');
    expect(a.objects).toEqual([5000, 50000]);
    expect(a.namespaces).toBe(10);
    expect(a.memoryLimitMiB).toBeUndefined();
    expect(a.out).toBe('/repo/bench/results/memory.json');
    expect(a.build).toBe(true);
  });

  it('takes a list of counts, smallest first, and refuses any other order', () => {
    expect(parseMemoryArgs(['--objects', '5000,50000,100000'], '/r').objects).toEqual([5000, 50000, 100000]);
    expect(() => parseMemoryArgs(['--objects', '50000,5000'], '/r')).toThrow(/increasing/);
    expect(() => parseMemoryArgs(['--objects', '5000,x'], '/r')).toThrow(/--objects must be a positive integer, not "x"/);
    expect(() => parseMemoryArgs(['--objects', '5', '--namespaces', '10'], '/r')).toThrow(/--namespaces may not exceed/);
  });

  it('reads --memory-limit 0 as no limit and passes heap sampling and node flags through', () => {
    const a = parseMemoryArgs(['--memory-limit', '0', '--heap-sample', '--node-arg=--trace-gc', '--no-build'], '/r');
    expect(a.memoryLimitMiB).toBe(0);
    expect(a.heapSample).toBe(true);
    expect(a.nodeArgs).toEqual(['--trace-gc']);
    expect(a.build).toBe(false);
  });
});

describe('memoryGoals', () => {
  it('checks growth against the smallest N within ten times it, and every peak under the limit', () => {
    const goals = memoryGoals([row(5000, 200, 190), row(50000, 236, 250), row(100000, 300, 320)], 1024);
    expect(goals.map((g) => [g.goal, g.measured, g.met])).toEqual([
      ['server peak RSS of the backup at N=50000 ≤ 1.2× at N=5000', '1.18×', true],
      ['server peak RSS of the restore at N=50000 ≤ 1.2× at N=5000', '1.32×', false],
      ['N=5000: backup and restore complete under the 1024 MiB memory limit', 'peak 200 MiB', true],
      ['N=50000: backup and restore complete under the 1024 MiB memory limit', 'peak 250 MiB', true],
      ['N=100000: backup and restore complete under the 1024 MiB memory limit', 'peak 320 MiB', true],
    ]);
  });

  it('fails the limit goal at or over the limit, and sets none without one', () => {
    expect(memoryGoals([row(5000, 1024, 100)], 1024)).toEqual([{ goal: 'N=5000: backup and restore complete under the 1024 MiB memory limit', measured: 'peak 1024 MiB', met: false }]);
    expect(memoryGoals([row(5000, 1024, 100)], 0)).toEqual([]);
  });
});

describe('toMemoryMarkdown', () => {
  it('gives each N with its growth, the heap at each peak when sampled, and the goals', () => {
    const heap: HeapPeak = {
      seconds: 3, rss: 250, heapTotal: 150, heapUsed: 100, external: 20, arrayBuffers: 15,
      spaces: { old_space: { size: 110, used: 80 }, new_space: { size: 16, used: 10 }, large_object_space: { size: 9, used: 9 } },
    };
    const rows = [row(5000, 200, 190), row(50000, 236, 250, heap)];
    const report: MemoryReport = {
      schema: 1, date: '2026-12-05T18:00:00.000Z', machine: { cpus: 2, cpuModel: 'test', memoryGiB: 23.5, node: 'v20.20.2', platform: 'linux', loadAverage: [0.9, 0.5, 0.4] },
      loadAtStart: [0.3, 0.2, 0.2], params: { namespaces: 10, serverMemoryLimitMiB: 1024, serverNodeArgs: ['--max-old-space-size=512', '--max-semi-space-size=16'], serverEnv: { MALLOC_MMAP_THRESHOLD_: '131072' } },
      rows, goals: memoryGoals(rows, 1024), totalSeconds: 900,
    };
    const md = toMemoryMarkdown(report);
    expect(md).toContain('load average at the start 0.3 0.2 0.2, at the end 0.9 0.5 0.4');
    expect(md).toContain('Server heap: --max-old-space-size=512 --max-semi-space-size=16 (sized for a 1024 MiB limit), and its environment MALLOC_MMAP_THRESHOLD_=131072.');
    expect(md).toContain('| 50000 | 12.5 | 50051 | 236 | 1.18× | 500.0 | 50051 | 250 | 1.32× |');
    expect(md).toContain('- N=50000, backup: heap 150 (old 110 of which 80 used, young 16, large objects 9), outside V8 20, rest 80; restore: not sampled.');
    expect(md).toContain('| server peak RSS of the restore at N=50000 ≤ 1.2× at N=5000 | 1.32× | **no** |');
    expect(md).toContain('N=50000: restore 50030 created, 21 skipped, 0 failed; 50000 of 50000 seeded objects present afterwards.');
  });
});
