#!/usr/bin/env node
// `npm test`: installs npm packages when missing or stale, then lint, typecheck, drift checks and
// build on the node running npm; the unit tests on that node too; then the integration tests on
// the image's Node (scripts/node-runtime.mjs; they start the local control plane and S3 server).
// Extra arguments go to vitest, on the image's Node only: `npm test -- test/cluster.test.ts`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDeps, root } from './ensure-deps.mjs';
import { ensureRuntimeNode, runtimeEnv } from './node-runtime.mjs';
import { testRuns } from './test-plan.mjs';

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

const VITEST = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
const reports = path.join(root, 'node_modules', '.cache');

/**
 * Each failed test as 'file > name: first lines of the message', and each file that failed to load
 * (no assertions): CI keeps only the end of the output, and the reporter's own account is far above.
 */
function failuresOf(report) {
  const out = [];
  for (const file of report.testResults ?? []) {
    const name = path.relative(root, file.name);
    const failed = (file.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failed) out.push(`${name} > ${a.fullName}: ${firstLines(a.failureMessages?.[0])}`);
    if (failed.length === 0 && file.status === 'failed') out.push(`${name}: ${firstLines(file.message)}`);
  }
  return out;
}
const firstLines = (msg = '') => msg.split('\n').filter((l) => l.trim() !== '').slice(0, 3).join(' | ').slice(0, 600);

/** One vitest run on `node`; the JSON report gives CI a plain 'N passed, N failed' closing line. */
function vitest(label, node, args) {
  const report = path.join(reports, `vitest-report-${label.replace(/\W+/g, '-')}.json`);
  fs.mkdirSync(reports, { recursive: true });
  fs.rmSync(report, { force: true });
  const t0 = Date.now();
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  process.stderr.write(`\n=== ${label} on node ${version}: vitest run ${args.join(' ')}\n`);
  const r = spawnSync(node, [VITEST, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args], {
    stdio: 'inherit',
    env: runtimeEnv(node),
  });
  const result = { label: `${label} (node ${version})`, ok: r.status === 0, passed: 0, failed: 0, skipped: 0, written: false, failures: [] };
  if (fs.existsSync(report)) {
    const j = JSON.parse(fs.readFileSync(report, 'utf8'));
    Object.assign(result, { passed: j.numPassedTests, failed: j.numFailedTests, skipped: j.numPendingTests + j.numTodoTests, written: true });
    result.failures = failuresOf(j);
  }
  process.stderr.write(`=== ${label} finished in ${((Date.now() - t0) / 1000).toFixed(1)}s (exit ${r.status ?? r.signal})\n`);
  return result;
}

ensureDeps();

const extra = process.argv.slice(2);
const steps = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts;
if (extra.length === 0) {
  run('lint', 'npm', ['run', '--silent', 'lint']);
  run('typecheck', 'npm', ['run', '--silent', 'typecheck']);
  for (const check of ['gen:check', 'crds:check', 'rbac:check']) if (steps[check]) run(check, 'npm', ['run', '--silent', check]);
  run('build', 'npm', ['run', '--silent', 'build']);
}

let runtime;
try {
  runtime = ensureRuntimeNode();
} catch (e) {
  process.stderr.write(`\n=== tests FAILED before they started: ${e.message}\n`);
  process.stdout.write('tests: not run (no Node.js runtime for the image)\n');
  process.exit(1);
}

// Each test once: see test-plan.mjs for which node runs which project.
const results = testRuns({ extra, npmNode: process.execPath, runtimeNode: runtime }).map((r) => vitest(r.label, r.node, r.args));

for (const r of results) {
  const line = r.written ? `${r.passed} passed, ${r.failed} failed${r.skipped > 0 ? `, ${r.skipped} skipped` : ''}` : 'no test report was written';
  process.stderr.write(`=== ${r.label}: ${line}\n`);
  for (const f of r.failures) process.stderr.write(`=== FAILED ${f}\n`);
}
const sum = (k) => results.reduce((n, r) => n + r[k], 0);
let summary = results.every((r) => r.written) ? `${sum('passed')} passed, ${sum('failed')} failed` : 'no test report was written';
if (sum('skipped') > 0) summary += `, ${sum('skipped')} skipped`;
process.stdout.write(`tests: ${summary}\n`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
