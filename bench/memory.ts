// `npm run bench:memory -- [--objects 5000,50000] [options]` (MEMORY_USAGE has them all)
// Issue 35's memory goals on their own: for each N, on one control plane and S3 server, seed N
// objects, run one Stowage backup on a fresh server and one restore of it (trust mode requester)
// on another, and read each server's peak RSS. The full pass (`npm run bench`) measures memory
// too, but at 50k it spends 30 minutes on rows that do not change it; this pass takes the two runs
// the goals are about, measured the same way (bench/stowage.ts), so 5k, 50k and 100k fit in one
// sitting. Prints the markdown; writes the JSON report (default bench/results/memory.json) and the
// markdown next to it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startControlPlane, type ControlPlane } from '../scripts/cluster/controlPlane.js';
import { startS3Server, type S3Server } from '../scripts/cluster/s3.js';
import { CORE, createDynamicClient, ensureCrds, loadKubeConfig, type DynamicClient } from '../src/kube/index.js';
import { machineInfo } from './report.js';
import { MEMORY_REPORT_SCHEMA, MEMORY_USAGE, memoryGoals, parseMemoryArgs, toMemoryMarkdown, type HeapPeak, type MemoryReport, type MemoryRow } from './memoryReport.js';
import { seed, seedPlan, waitSettled } from './seed.js';
import { deployedMemoryLimitMiB, ensureBuilt, ROOT, serverHeapFlags, snapshotDist } from './server.js';
import { setupServerNamespace, stowageRun, stowageServers, type S3Endpoint } from './stowage.js';

const mib = (b: number): string => (b / 1024 ** 2).toFixed(0);

function lastHeapPeak(file: string): HeapPeak | undefined {
  if (!fs.existsSync(file)) return undefined;
  const lines = fs.readFileSync(file, 'utf8').trim().split('\n').filter((l) => l !== '');
  const last = lines.at(-1);
  return last === undefined ? undefined : (JSON.parse(last) as HeapPeak);
}

async function measureN(ctx: {
  client: DynamicClient; s3: S3Client; s3ep: S3Endpoint; kubeconfigPath: string; dist: string; workDir: string; namespaces: number; nodeArgs: string[]; heapSample: boolean; log: (l: string) => void;
}, n: number): Promise<MemoryRow> {
  const prefix = `mem-${crypto.randomBytes(3).toString('hex')}-${n}`;
  const p = seedPlan(prefix, n, ctx.namespaces);
  ctx.log(`N=${n}: seeding ${p.objects} objects in ${p.namespaces.length} namespaces`);
  const seeded = await seed(ctx.client, p, prefix, { concurrency: 48, progress: ctx.log });
  ctx.log(`N=${n}: seeded in ${seeded.seconds.toFixed(1)} s`);
  await waitSettled(ctx.client, p.namespaces, 600_000, ctx.log);
  const bucket = prefix;
  await ctx.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const serverNs = `${prefix}-system`;
  await setupServerNamespace(ctx.client, serverNs, ctx.s3ep, bucket);
  const heapFile = (phase: string): string => path.join(ctx.workDir, `heap-${phase}.jsonl`);
  const servers = stowageServers({
    client: ctx.client, kubeconfigPath: ctx.kubeconfigPath, serverNs, prefix, dist: ctx.dist, workDir: ctx.workDir, namespaces: p.namespaces, objects: n, log: ctx.log,
    nodeArgs: () => [...ctx.nodeArgs, ...(ctx.heapSample ? [`--import=${path.join(ROOT, 'bench/heapSampler.mjs')}`] : [])],
    env: (phase): Record<string, string> => (ctx.heapSample ? { STOWAGE_HEAP_SAMPLE: heapFile(phase) } : {}),
  });
  const backupName = `${prefix}-backup`;
  const b = await servers.withServer(`backup-${n}`, undefined, (measure) => measure(() => servers.runBackup(backupName)));
  const st = b.value.value.backup.status;
  const backup = stowageRun(backupName, st?.phase ?? '', b.value.value.seconds, st?.progress?.itemsBackedUp ?? 0, st?.warnings ?? 0, st?.errors ?? 0, { tree: b.value.tree, logFile: b.logFile });
  ctx.log(`N=${n}: backup ${backup.items} items in ${backup.seconds.toFixed(1)} s, server peak ${mib(backup.serverPeakRssBytes)} MiB`);
  const mapping = Object.fromEntries(p.namespaces.map((ns) => [ns, `${ns}-rs`]));
  const restore = await servers.restore(`${prefix}-restore`, backupName, mapping, 'requester', `restore-${n}`);
  ctx.log(`N=${n}: restore ${restore.created} created in ${restore.seconds.toFixed(1)} s, server peak ${mib(restore.serverPeakRssBytes)} MiB`);
  if (restore.seededObjectsAfter !== n) throw new Error(`N=${n}: the restore left ${restore.seededObjectsAfter} of ${n} seeded objects`);
  // The next N is measured on a control plane without these: the namespace controller removes them meanwhile.
  for (const ns of [...p.namespaces, ...Object.values(mapping), serverNs]) await ctx.client.delete(CORE.namespaces, undefined, ns).catch(() => undefined);
  const bh = ctx.heapSample ? lastHeapPeak(heapFile(`backup-${n}`)) : undefined;
  const rh = ctx.heapSample ? lastHeapPeak(heapFile(`restore-${n}`)) : undefined;
  return { objects: n, backup: { ...backup, ...(bh !== undefined ? { heapAtPeak: bh } : {}) }, restore: { ...restore, ...(rh !== undefined ? { heapAtPeak: rh } : {}) } };
}

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
    params: { namespaces: args.namespaces, serverMemoryLimitMiB: memoryLimitMiB, serverNodeArgs: heapFlags },
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
