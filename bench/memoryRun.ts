// One object count of the memory pass (bench/memory.ts): seed N objects, back them up on a fresh
// server, restore them on another, and read both servers' peaks. Apart from memory.ts's command
// line so the smoke test (test/bench/memorySmoke.test.ts) runs it on the suite's control plane.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CORE, type DynamicClient } from '../src/kube/index.js';
import { errorMessage } from '../src/util/errors.js';
import { mib, type HeapPeak, type MemoryRow } from './memoryReport.js';
import { seed, seedPlan, waitSettled } from './seed.js';
import { ROOT } from './server.js';
import { setupServerNamespace, stowageRun, stowageServers, type S3Endpoint } from './stowage.js';

export interface MemoryRunContext {
  client: DynamicClient;
  s3: S3Client;
  s3ep: S3Endpoint;
  kubeconfigPath: string;
  dist: string;
  workDir: string;
  namespaces: number;
  /** The server's node flags (the deployed heap flags, the caller's). */
  nodeArgs: string[];
  /** Load bench/heapSampler.mjs into each server and report the breakdown at its peak. */
  heapSample: boolean;
  log: (l: string) => void;
}

function lastHeapPeak(file: string): HeapPeak | undefined {
  if (!fs.existsSync(file)) return undefined;
  const lines = fs.readFileSync(file, 'utf8').trim().split('\n').filter((l) => l !== '');
  const last = lines.at(-1);
  return last === undefined ? undefined : (JSON.parse(last) as HeapPeak);
}

/** Measures one object count; fails unless the restore brought back every seeded object. */
export async function measureN(ctx: MemoryRunContext, n: number): Promise<MemoryRow> {
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
  for (const ns of [...p.namespaces, ...Object.values(mapping), serverNs]) {
    await ctx.client.delete(CORE.namespaces, undefined, ns).catch((err: unknown) => ctx.log(`N=${n}: could not delete namespace ${ns}, left for the control plane's end: ${errorMessage(err)}`));
  }
  const bh = ctx.heapSample ? lastHeapPeak(heapFile(`backup-${n}`)) : undefined;
  const rh = ctx.heapSample ? lastHeapPeak(heapFile(`restore-${n}`)) : undefined;
  return { objects: n, backup: { ...backup, ...(bh !== undefined ? { heapAtPeak: bh } : {}) }, restore: { ...restore, ...(rh !== undefined ? { heapAtPeak: rh } : {}) } };
}

