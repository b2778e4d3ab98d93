// `npm run bench:volumes -- [--volumes N] [--rounds R] [--data KIB] [--out FILE] [--memory-limit MIB] [--no-build] [--dist DIR]`
// The volume-snapshot row (issue 37), on the real node with the CSI test stack: a pass of its own,
// apart from `npm run bench`, because it needs the machine's one real node (and waits for its lock)
// where the other rows run on a control plane without a node. Prints the markdown, writes the JSON
// report (default bench/results/volumes.json) and the markdown next to it; fails if the teardown
// leaves anything on the machine.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRealCluster, type RealCluster } from '../scripts/node/realCluster.js';
import { machineInfo } from './report.js';
import { deployedMemoryLimitMiB, ensureBuilt, ROOT, snapshotDist } from './server.js';
import { measureVolumeSnapshots } from './volumeHarness.js';
import { parseVolumeArgs, toVolumeMarkdown, VOLUME_REPORT_SCHEMA, VOLUME_USAGE, type VolumeBenchReport } from './volumeReport.js';

const BUCKET = 'stowage-vbench';

async function main(): Promise<void> {
  const args = parseVolumeArgs(process.argv.slice(2), ROOT);
  if (args.help) {
    process.stdout.write(`${VOLUME_USAGE}\n`);
    return;
  }
  const memoryLimitMiB = args.memoryLimitMiB ?? deployedMemoryLimitMiB();
  if (args.build && args.dist === undefined) ensureBuilt();
  const t0 = performance.now();
  const elapsed = (): string => `${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s`;
  const log = (line: string): void => void process.stderr.write(`[bench:volumes ${elapsed()}] ${line}\n`);
  const loadAtStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
  const workDir = path.join(os.tmpdir(), `stowage-bench-volumes-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.mkdirSync(workDir, { recursive: true });
  const dist = snapshotDist(workDir, args.dist);
  log(`${args.volumes} volumes, ${args.rounds} rounds; server log in ${workDir}; starting the real cluster with its CSI stack (it waits for the machine's real-node lock if another run holds it)`);

  let cluster: RealCluster | undefined;
  let measured: Awaited<ReturnType<typeof measureVolumeSnapshots>> | undefined;
  let failure: unknown;
  let clusterStartSeconds = 0;
  try {
    cluster = await startRealCluster({ buckets: [BUCKET], log, csi: true });
    clusterStartSeconds = (performance.now() - t0) / 1000;
    measured = await measureVolumeSnapshots({
      cluster, bucket: BUCKET, volumes: args.volumes, rounds: args.rounds, dataBytes: args.dataBytes, dist, workDir, memoryLimitMiB, log,
    });
  } catch (err) {
    failure = err;
  }
  // Always stopped, and its answer kept: whatever it lists is a failure of the run.
  const leftovers = cluster === undefined ? [] : await cluster.stop();
  if (failure !== undefined) {
    throw new Error(`${failure instanceof Error ? (failure.stack ?? failure.message) : String(failure)}${leftovers.length > 0 ? `\n(and the teardown left: ${leftovers.join('; ')})` : ''}`);
  }
  if (measured === undefined) throw new Error('nothing was measured');
  const report: VolumeBenchReport = {
    schema: VOLUME_REPORT_SCHEMA, date: new Date().toISOString(), machine: machineInfo(), loadAtStart, ...measured,
    setup: { clusterStartSeconds, ...measured.setup }, leftovers, totalSeconds: (performance.now() - t0) / 1000,
  };
  const markdown = toVolumeMarkdown(report);
  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(`${args.out.replace(/\.json$/, '')}.md`, `${markdown}\n`);
  process.stdout.write(`\n${markdown}\n\nJSON report: ${args.out}\n`);
  if (leftovers.length > 0) throw new Error(`the teardown left the machine changed: ${leftovers.join('; ')}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`[bench:volumes] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
