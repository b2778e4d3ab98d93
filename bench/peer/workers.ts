// Does `--item-block-worker-count` speed Velero's backup up on the benchmark's objects? Seeds N
// objects on a control plane and MinIO of its own, then times Velero backups with each worker count
// in alternating rounds, each on a fresh `velero server` warmed up by a one-resource backup: the
// figures behind the worker count `npm run bench -- --peer velero` gives Velero.
//
//   npx tsx bench/peer/workers.ts [--objects 10000] [--rounds 3] [--workers 1,4]
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startControlPlane } from '../../scripts/cluster/controlPlane.js';
import { startMinio } from '../../scripts/cluster/minio.js';
import { ensureVelero } from '../../scripts/velero/velero.js';
import { DEFAULT_CONFIG } from '../../src/config/index.js';
import { createDynamicClient, loadKubeConfig } from '../../src/kube/index.js';
import { positiveInt } from '../args.js';
import { median } from '../report.js';
import { sampleTree } from '../procstat.js';
import { seed, seedPlan, waitSettled } from '../seed.js';
import { installVelero, runVeleroBackup, startVeleroServer, veleroServerFlags } from './velero.js';

const { values } = parseArgs({ options: { objects: { type: 'string' }, rounds: { type: 'string' }, workers: { type: 'string', default: '1,4' } } });
const objects = positiveInt('objects', values.objects, 10_000);
const rounds = positiveInt('rounds', values.rounds, 3);
const workers = values.workers.split(',').map((w) => positiveInt('workers', w, 1));
const log = (line: string): void => void process.stderr.write(`${line}\n`);

// The servers are unref'd child processes: while one stops, nothing else would keep node running.
const keepAlive = setInterval(() => undefined, 60_000);
const bin = await ensureVelero(log);
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-velero-workers-'));
const cp = await startControlPlane();
const s3 = await startMinio();
try {
  const prefix = `vw-${crypto.randomBytes(3).toString('hex')}`;
  await new S3Client({ region: s3.region, endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } })
    .send(new CreateBucketCommand({ Bucket: prefix }));
  const client = createDynamicClient(loadKubeConfig(cp.kubeconfigPath), { qps: 0, burst: 0, userAgent: 'stowage-bench/seed' });
  const plan = seedPlan(prefix, objects, 10);
  await seed(client, plan, prefix, { concurrency: 48, progress: log });
  await waitSettled(client, plan.namespaces, 600_000, log);
  const speed = { clientQps: DEFAULT_CONFIG.clientQps, clientBurst: DEFAULT_CONFIG.clientBurst, pageSize: DEFAULT_CONFIG.clientPageSize, itemBlockWorkers: 1 };
  const setup = await installVelero(client, { bin, namespace: `${prefix}-velero`, kubeconfigPath: cp.kubeconfigPath, workDir, speed, bucket: prefix, s3 });
  const times = new Map<number, number[]>(workers.map((w) => [w, []]));
  const cpu = new Map<number, number[]>(workers.map((w) => [w, []]));
  for (let round = 0; round < rounds; round++) {
    // Rotate the order, so a swing in the machine's load hits every variant alike.
    for (let i = 0; i < workers.length; i++) {
      const w = workers[(i + round) % workers.length] ?? 1;
      const variant = { ...setup, serverFlags: veleroServerFlags({ ...speed, itemBlockWorkers: w }) };
      const logFile = path.join(workDir, `velero-w${w}-${round}.log`);
      const srv = await startVeleroServer(client, variant, logFile, log);
      try {
        await runVeleroBackup(client, variant, `${prefix}-warmup-w${w}-${round}`, { includedNamespaces: [setup.namespace], includedResources: ['configmaps'] }, 120_000, logFile, log);
        const sampler = sampleTree(srv.pid);
        const r = await runVeleroBackup(client, variant, `${prefix}-w${w}-${round}`, { includedNamespaces: plan.namespaces }, 600_000 + objects * 200, logFile, log);
        const tree = sampler.stop();
        times.get(w)?.push(r.seconds);
        cpu.get(w)?.push(tree.totalCpuSeconds);
        log(`workers ${w}, round ${round + 1}: ${r.backup.status?.progress?.itemsBackedUp ?? 0} items in ${r.seconds.toFixed(1)} s, CPU ${tree.totalCpuSeconds.toFixed(1)} s (load ${os.loadavg()[0]?.toFixed(1)})`);
      } finally {
        await srv.stop();
      }
    }
  }
  process.stdout.write(`\nVelero ${bin.version}, N=${objects}, ${rounds} rounds; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}\n\n`);
  process.stdout.write('| --item-block-worker-count | Wall (s), median (rounds) | CPU (s), median |\n| ---: | --- | ---: |\n');
  for (const w of workers) {
    const t = times.get(w) ?? [];
    process.stdout.write(`| ${w} | ${median(t).toFixed(1)} (${t.map((x) => x.toFixed(1)).join(' / ')}) | ${median(cpu.get(w) ?? []).toFixed(1)} |\n`);
  }
  client.close();
} finally {
  await s3.close();
  await cp.stop();
  fs.rmSync(workDir, { recursive: true, force: true });
  clearInterval(keepAlive);
}
