// A quick pass of the memory pass (`npm run bench:memory`) at N=60 and N=120 on the suite's control
// plane and S3 server, so it keeps working: each count's backup and restore complete on fresh
// servers with the deployed heap flags, the restore brings every seeded object back, the peaks are
// read, the heap sampler reports a breakdown, and the goals and markdown are made from the rows.
// Peaks are not compared with a goal: at this size they are the server's fixed cost.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createDynamicClient, ensureCrds, loadKubeConfig } from '../../src/kube/index.js';
import { machineInfo } from '../../bench/report.js';
import { memoryGoals, toMemoryMarkdown, type MemoryRow } from '../../bench/memoryReport.js';
import { measureN } from '../../bench/memoryRun.js';
import { deployedMemoryLimitMiB, serverHeapFlags, snapshotDist } from '../../bench/server.js';

const MiB = 1024 ** 2;

describe('memory pass (smoke run, N=60 and N=120)', () => {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-bench-memory-smoke-'));
  afterAll(() => fs.rmSync(workDir, { recursive: true, force: true }));

  it('measures a backup and a restore per count, with the heap at each peak', async () => {
    const s3ep = inject('s3');
    const kubeconfigPath = inject('cluster').kubeconfigPath;
    const client = createDynamicClient(loadKubeConfig(kubeconfigPath), { qps: 0, burst: 0, userAgent: 'stowage-test/memory-smoke' });
    const s3 = new S3Client({
      region: s3ep.region, endpoint: s3ep.endpoint, forcePathStyle: true,
      credentials: { accessKeyId: s3ep.accessKeyId, secretAccessKey: s3ep.secretAccessKey },
    });
    const limit = deployedMemoryLimitMiB();
    const lines: string[] = [];
    const ctx = {
      client, s3, s3ep, kubeconfigPath, dist: snapshotDist(workDir), workDir, namespaces: 3,
      nodeArgs: serverHeapFlags(limit), heapSample: true, log: (l: string) => void lines.push(l),
    };
    const rows: MemoryRow[] = [];
    try {
      await ensureCrds(client);
      for (const n of [60, 120]) rows.push(await measureN(ctx, n));
    } finally {
      client.close();
    }
    for (const row of rows) {
      for (const run of [row.backup, row.restore]) {
        expect(run.phase).toBe('Completed');
        expect(run.seconds).toBeGreaterThan(0);
        // A Node server with its informers: tens of MiB at least, far below its limit at this size.
        expect(run.serverPeakRssBytes).toBeGreaterThan(30 * MiB);
        expect(run.serverPeakRssBytes).toBeLessThan(limit * MiB);
        // The sampler's last line is the peak it saw: V8's heap and its old generation, never more than RSS.
        const h = run.heapAtPeak;
        expect(h).toBeDefined();
        expect(h?.heapTotal).toBeGreaterThan(0);
        expect(h?.spaces.old_space?.size).toBeGreaterThan(0);
        expect(h?.rss ?? 0).toBeLessThanOrEqual(run.serverPeakRssBytes / MiB + 1);
      }
      expect(row.backup.items).toBeGreaterThan(row.objects);
      expect(row.restore.seededObjectsAfter).toBe(row.objects);
      expect(row.restore.failed).toBe(0);
    }
    const goals = memoryGoals(rows, limit);
    expect(goals.map((g) => g.goal)).toEqual([
      'server peak RSS of the backup at N=120 ≤ 1.2× at N=60',
      'server peak RSS of the restore at N=120 ≤ 1.2× at N=60',
      `N=60: backup and restore complete under the ${limit} MiB memory limit`,
      `N=120: backup and restore complete under the ${limit} MiB memory limit`,
    ]);
    expect(goals.slice(2).every((g) => g.met)).toBe(true);
    const md = toMemoryMarkdown({
      schema: 1, date: new Date().toISOString(), machine: machineInfo(), loadAtStart: [0, 0, 0],
      params: { namespaces: 3, serverMemoryLimitMiB: limit, serverNodeArgs: serverHeapFlags(limit) }, rows, goals, totalSeconds: 1,
    });
    expect(md).toContain('| 120 |');
    expect(md).toMatch(/- N=120, backup: heap \d+ \(old \d+ of which \d+ used/);
    expect(lines.some((l) => l.startsWith('N=120: restore'))).toBe(true);
  }, 600_000);
});
