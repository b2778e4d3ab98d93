#!/usr/bin/env node
// `npm test`: installs npm packages when missing or stale, then lint, typecheck, drift checks,
// unit and integration tests (integration provisions the local control plane and S3 server).
// Extra arguments go to vitest: `npm test -- test/cluster.test.ts`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDeps, root } from './ensure-deps.mjs';

process.chdir(root);

function run(label, cmd, args) {
  const t0 = Date.now();
  process.stderr.write(`\n=== ${label}: ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: process.env });
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (r.status !== 0) {
    process.stderr.write(`\n=== ${label} FAILED after ${secs}s (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
  process.stderr.write(`=== ${label} ok (${secs}s)\n`);
}

ensureDeps();

const extra = process.argv.slice(2);
const steps = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts;
if (extra.length === 0) {
  run('lint', 'npm', ['run', '--silent', 'lint']);
  run('typecheck', 'npm', ['run', '--silent', 'typecheck']);
  for (const check of ['gen:check', 'crds:check']) if (steps[check]) run(check, 'npm', ['run', '--silent', check]);
  run('build', 'npm', ['run', '--silent', 'build']);
}
// The JSON report gives CI a plain 'N passed, N failed' closing line.
const report = path.join(root, 'node_modules', '.cache', 'vitest-report.json');
fs.mkdirSync(path.dirname(report), { recursive: true });
fs.rmSync(report, { force: true });
const t0 = Date.now();
process.stderr.write('\n=== tests: vitest run\n');
const r = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...extra], { stdio: 'inherit' });
let summary = 'no test report was written';
if (fs.existsSync(report)) {
  const j = JSON.parse(fs.readFileSync(report, 'utf8'));
  summary = `${j.numPassedTests} passed, ${j.numFailedTests} failed`;
  if (j.numPendingTests + j.numTodoTests > 0) summary += `, ${j.numPendingTests + j.numTodoTests} skipped`;
}
process.stderr.write(`=== tests finished in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
process.stdout.write(`tests: ${summary}\n`);
process.exit(r.status ?? 1);
