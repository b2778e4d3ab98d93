// `npm run bench:memory -- [--objects 5000,50000] [options]` (MEMORY_USAGE has them all)
// Issue 35's memory goals on their own: for each N, on one control plane and S3 server, seed N
// objects, run one Stowage backup on a fresh server and one restore of it (trust mode requester)
// on another, and read each server's peak RSS. The full pass (`npm run bench`) measures memory
// too, but at 50k it spends 30 minutes on rows that do not change it; this pass takes the two runs
// the goals are about, measured the same way (bench/stowage.ts), so 5k, 50k and 100k fit in one
// sitting. Prints the markdown; writes the JSON report (default bench/results/memory.json) and the
// markdown next to it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { startControlPlane, type ControlPlane } from '../scripts/cluster/controlPlane.js';
import { startS3Server, type S3Server } from '../scripts/cluster/s3.js';
import { createDynamicClient, ensureCrds, loadKubeConfig, type DynamicClient } from '../src/kube/index.js';
import { machineInfo } from './report.js';
import { MEMORY_REPORT_SCHEMA, MEMORY_USAGE, memoryGoals, parseMemoryArgs, toMemoryMarkdown, type MemoryReport, type MemoryRow } from './memoryReport.js';
import { measureN } from './memoryRun.js';
import { deployedMemoryLimitMiB, deployedServerEnv, ensureBuilt, ROOT, serverHeapFlags, snapshotDist } from './server.js';

async function main(): Promise<void> {
  const args = parseMemoryArgs(process.argv.slice(2), ROOT);
  if (args.help) {
    process.stdout.write(`${MEMORY_USAGE}\n`);
    return;
  }
  const memoryLimitMiB = args.memoryLimitMiB ?? deployedMemoryLimitMiB();
  if (args.build && args.dist === undefined) ensureBuilt();
  const t0 = performance.now();
  const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
  const log = (line: string): void => void process.stderr.write(`[bench:memory ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
  const workDir = path.join(os.tmpdir(), `stowage-bench-memory-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.mkdirSync(workDir, { recursive: true });
  const dist = snapshotDist(workDir, args.dist);
  const heapFlags = serverHeapFlags(memoryLimitMiB);
  log(`N=${args.objects.join(', ')}; server logs${args.heapSample ? ' and heap samples' : ''} in ${workDir}`);
  let cp: ControlPlane | undefined;
  let s3srv: S3Server | undefined;
  let client: DynamicClient | undefined;
  const rows: MemoryRow[] = [];
  try {
    cp = await startControlPlane();
    s3srv = await startS3Server();
    client = createDynamicClient(loadKubeConfig(cp.kubeconfigPath), { qps: 0, burst: 0, userAgent: 'stowage-bench/memory' });
    await ensureCrds(client);
    const s3 = new S3Client({
      region: s3srv.region, endpoint: s3srv.endpoint, forcePathStyle: true,
      credentials: { accessKeyId: s3srv.accessKeyId, secretAccessKey: s3srv.secretAccessKey },
    });
    for (const n of args.objects) {
      rows.push(await measureN({ client, s3, s3ep: s3srv, kubeconfigPath: cp.kubeconfigPath, dist, workDir, namespaces: args.namespaces, nodeArgs: [...heapFlags, ...args.nodeArgs], heapSample: args.heapSample, log }, n));
    }
  } finally {
    client?.close();
    await s3srv?.close();
    await cp?.stop();
  }
  const report: MemoryReport = {
    schema: MEMORY_REPORT_SCHEMA, date: new Date().toISOString(), machine: machineInfo(), loadAtStart,
    params: { namespaces: args.namespaces, serverMemoryLimitMiB: memoryLimitMiB, serverNodeArgs: heapFlags, serverEnv: deployedServerEnv() },
    rows, goals: memoryGoals(rows, memoryLimitMiB), totalSeconds: (performance.now() - t0) / 1000,
  };
  const markdown = toMemoryMarkdown(report);
  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(`${args.out.replace(/\.json$/, '')}.md`, `${markdown}\n`);
  process.stdout.write(`\n${markdown}\n\nJSON report: ${args.out}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`[bench:memory] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
