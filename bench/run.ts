// `npm run bench -- [--objects N] [--namespaces M] [--rounds R] [--out FILE] [--baseline FILE] [--profile] [--node-arg FLAG]... [--no-build] [--dist DIR]`
// One benchmark pass on a control plane and S3 server of its own; prints the markdown report and
// writes the JSON report (default bench/results/latest.json, with the markdown next to it).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { positiveInt } from './args.js';
import { runBench } from './harness.js';
import { toMarkdown, type BenchReport } from './report.js';
import { deployedMemoryLimitMiB, ensureBuilt, ROOT, serverHeapFlags } from './server.js';

const USAGE = `usage: npm run bench -- [--objects N] [--namespaces M] [--rounds R] [--out FILE] [--baseline FILE] [--memory-limit MIB] [--profile] [--node-arg FLAG]... [--no-build] [--dist DIR]
  --objects N       objects to seed (default 10000)
  --namespaces M    namespaces to spread them over (default 10)
  --rounds R        rounds of the backups (floor, engine alone, Stowage), reported as medians (default 5)
  --out FILE        JSON report (default bench/results/latest.json); the markdown goes next to it (.md)
  --baseline FILE   an earlier report (a run at N=5000) to check the memory-growth goal against
  --memory-limit MIB  the server container's memory limit its heap is sized for (default: deploy/'s, 1024); 0: none
  --profile         run the server under node --cpu-prof (profiles in the work directory)
  --node-arg FLAG   a node flag for the server, e.g. --node-arg=--trace-gc (its GC log lands in server-<phase>.log); repeatable
  --no-build        use dist/ as it is instead of rebuilding it when src/ is newer
  --dist DIR        run the server (and the plugin's SDK) from another build, e.g. the commit before a change for an A/B`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      objects: { type: 'string' },
      namespaces: { type: 'string' },
      rounds: { type: 'string' },
      out: { type: 'string' },
      baseline: { type: 'string' },
      profile: { type: 'boolean', default: false },
      'node-arg': { type: 'string', multiple: true },
      'memory-limit': { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      dist: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const objects = positiveInt('objects', values.objects, 10_000);
  const namespaces = positiveInt('namespaces', values.namespaces, 10);
  const backupRounds = positiveInt('rounds', values.rounds, 5);
  if (namespaces > objects) throw new Error('--namespaces may not exceed --objects');
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
  process.stderr.write(`[bench] N=${objects} objects in ${namespaces} namespaces; server logs${values.profile ? ' and CPU profiles' : ''} in ${workDir}\n`);
  const report = await runBench({
    objects, namespaces, backupRounds, workDir, profile: values.profile, ...(values.dist !== undefined ? { dist: path.resolve(values.dist) } : {}), nodeArgs: values['node-arg'] ?? [], memoryLimitMiB,
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
