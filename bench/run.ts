// `npm run bench -- [options]` (bench/args.ts has them all)
// One benchmark pass on a control plane and S3 server of its own; prints the markdown report and
// writes the JSON report (default bench/results/latest.json, with the markdown next to it).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseBenchArgs, positiveInt, USAGE } from './args.js';
import { runBench } from './harness.js';
import { toMarkdown, type BenchReport } from './report.js';
import { deployedMemoryLimitMiB, ensureBuilt, ROOT, serverHeapFlags } from './server.js';

async function main(): Promise<void> {
  const args = parseBenchArgs(process.argv.slice(2));
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { objects, namespaces, backupRounds, values, peer, s3 } = args;
  const out = path.resolve(values.out ?? path.join(ROOT, 'bench/results/latest.json'));
  const memoryLimitMiB = values['memory-limit'] === '0' ? 0 : positiveInt('memory-limit', values['memory-limit'], deployedMemoryLimitMiB());
  const baseline = values.baseline === undefined ? undefined : (JSON.parse(fs.readFileSync(values.baseline, 'utf8')) as BenchReport);
  // Memory is only comparable between runs whose server heap was sized the same way.
  const baselineLimit = baseline?.params.serverMemoryLimitMiB ?? 0;
  if (baseline !== undefined && baselineLimit !== memoryLimitMiB) {
    throw new Error(`the baseline ${values.baseline} ran with --memory-limit ${baselineLimit}, this run with ${memoryLimitMiB}: run both with the same limit`);
  }
  const flags = serverHeapFlags(memoryLimitMiB);
  const baselineFlags = baseline?.params.serverNodeArgs ?? [];
  if (baseline !== undefined && baselineFlags.join(' ') !== flags.join(' ')) {
    throw new Error(`the baseline ${values.baseline} ran the server with ${baselineFlags.join(' ') || 'no heap flags'}, this run would use ${flags.join(' ') || 'none'} (deploy/'s heap settings changed): run a new baseline`);
  }
  if (!values['no-build'] && values.dist === undefined) ensureBuilt();

  // Outside the repository: it holds a copy of dist/ and the built plugin, which linters must not see.
  const workDir = path.join(os.tmpdir(), `stowage-bench-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  process.stderr.write(`[bench] N=${objects} objects in ${namespaces} namespaces on ${s3}${peer !== undefined ? `, beside ${peer}` : ''}; server logs${values.profile ? ' and CPU profiles' : ''} in ${workDir}\n`);
  const report = await runBench({
    objects, namespaces, backupRounds, workDir, profile: values.profile, ...(values.dist !== undefined ? { dist: path.resolve(values.dist) } : {}), nodeArgs: values['node-arg'] ?? [], memoryLimitMiB, s3Kind: s3,
    ...(peer !== undefined ? { peer } : {}),
    ...(baseline !== undefined ? { baseline } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const markdown = toMarkdown(report);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(out.replace(/\.json$/, '') + '.md', `${markdown}\n`);
  process.stdout.write(`\n${markdown}\n\nJSON report: ${out}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
