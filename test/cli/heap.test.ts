// --heap-growth-percent and --backup-heap-growth-percent: the server sets V8's growing factor, at
// start-up and again when a backup starts or the last one ends, and it changes how often V8 runs full
// collections under a deployment-sized heap. Child processes, so this test's own heap is untouched.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './helpers.js';

const HEAP_JS = path.resolve(import.meta.dirname, '../../dist/cli/heap.js');

// A 512 MiB heap (the deployed one) holding ~60 MB, while lists of ~1 MB each live long enough to be
// promoted: the shape of a backup's list pages. Prints the source of the factor and the full GCs.
const CHURN = `
import { PerformanceObserver, constants } from 'node:perf_hooks';
const { applyHeapGrowth, heapGrowth } = await import(process.env.HEAP_JS);
let source;
if (process.env.BACKUPS === '') {
  source = applyHeapGrowth(Number(process.env.PERCENT));
} else {
  // The server's policy, switched after start-up as a backup's start would.
  const policy = heapGrowth({ percent: Number(process.env.PERCENT), backupPercent: Number(process.env.BACKUP_PERCENT) });
  policy.backupsRunning(Number(process.env.BACKUPS));
  source = policy.source;
}
let major = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++; }).observe({ entryTypes: ['gc'] });
const live = Array.from({ length: 60 }, () => Array.from({ length: 20000 }, (_, j) => ({ j, k: j + 1 })));
const ring = [];
for (let i = 0; i < 600; i++) { ring.push(Array.from({ length: 20000 }, (_, j) => ({ j, k: i }))); if (ring.length > 40) ring.shift(); }
await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify({ source, major, live: live.length }));
`;

function churn(percent: number, nodeArgs: string[] = [], policy?: { backupPercent: number; backups: number }): { source: string; major: number } {
  const r = spawnSync(process.execPath, ['--max-old-space-size=512', '--max-semi-space-size=16', ...nodeArgs, '--input-type=module', '-e', CHURN], {
    env: { ...process.env, HEAP_JS, PERCENT: String(percent), BACKUP_PERCENT: String(policy?.backupPercent ?? ''), BACKUPS: String(policy?.backups ?? '') },
    encoding: 'utf8', timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`churn child failed (${r.status ?? r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as { source: string; major: number };
}

describe('applyHeapGrowth', () => {
  beforeAll(ensureBuilt, 120_000);

  it('needs clearly fewer full collections for a promoting workload at 100%, and leaves V8 alone at 0', () => {
    const own = churn(0);
    const doubled = churn(100);
    expect(own.source).toBe('v8');
    expect(doubled.source).toBe('flag');
    expect(own.major).toBeGreaterThan(4);
    // V8's own factor under a 512 MiB limit is at most 1.4; a factor of 2 needs far fewer collections.
    expect(doubled.major).toBeLessThanOrEqual(Math.ceil(own.major * 0.75));
  }, 60_000);

  it('switches to the backup percent once a backup runs, after start-up', () => {
    const idle = churn(15, [], { backupPercent: 100, backups: 0 });
    const backing = churn(15, [], { backupPercent: 100, backups: 1 });
    expect([idle.source, backing.source]).toEqual(['flag', 'flag']);
    expect(idle.major).toBeGreaterThan(4);
    expect(backing.major).toBeLessThanOrEqual(Math.ceil(idle.major * 0.75));
  }, 60_000);

  it('keeps a factor given on node\'s command line', () => {
    const r = churn(100, ['--heap-growing-percent=10']);
    expect(r.source).toBe('node');
    expect(r.major).toBeGreaterThan(churn(100).major);
  }, 60_000);
});
