import { describe, expect, it } from 'vitest';
import { heapGrowth } from './heap.js';

describe('heapGrowth', () => {
  it('grows by the backup percent while a backup runs and by the other percent before and after', () => {
    const applied: number[] = [];
    const h = heapGrowth({ percent: 15, backupPercent: 60, execArgv: [], apply: (p) => applied.push(p) });
    expect([h.source, h.percent, applied]).toEqual(['flag', 15, [15]]);
    h.backupsRunning(1);
    h.backupsRunning(2);
    expect([h.percent, applied]).toEqual([60, [15, 60]]);
    h.backupsRunning(1);
    h.backupsRunning(0);
    expect([h.percent, applied]).toEqual([15, [15, 60, 15]]);
  });

  it('says V8 decides where a percent is 0', () => {
    const applied: number[] = [];
    const h = heapGrowth({ percent: 0, backupPercent: 60, execArgv: [], apply: (p) => applied.push(p) });
    expect(h.source).toBe('v8');
    h.backupsRunning(1);
    expect([h.source, applied]).toEqual(['flag', [0, 60]]);
  });

  it('never touches a factor node\'s command line sets', () => {
    const applied: number[] = [];
    const h = heapGrowth({ percent: 15, backupPercent: 60, execArgv: ['--heap-growing-percent=30'], apply: (p) => applied.push(p) });
    h.backupsRunning(1);
    expect([h.source, applied]).toEqual(['node', []]);
  });
});
