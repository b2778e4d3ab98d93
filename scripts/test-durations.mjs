#!/usr/bin/env node
// Writes test/support/durations.json (seconds per integration file of 10 s or more, slowest first)
// from the JSON report of the last full `npm test`; test/support/sequencer.ts starts those first.
import fs from 'node:fs';
import path from 'node:path';
import { root } from './ensure-deps.mjs';

// The integration run's report: 'integration tests' when the unit tests ran on another node,
// 'unit and integration tests' when one run did both (scripts/test-plan.mjs).
const report = ['integration-tests', 'unit-and-integration-tests']
  .map((label) => path.join(root, 'node_modules', '.cache', `vitest-report-${label}.json`))
  .find((p) => fs.existsSync(p)) ?? 'node_modules/.cache/vitest-report-integration-tests.json';
if (!fs.existsSync(report)) {
  process.stderr.write(`no report at ${report}: run a full \`npm test\` first\n`);
  process.exit(1);
}
const durations = {};
for (const f of JSON.parse(fs.readFileSync(report, 'utf8')).testResults) {
  const file = path.relative(root, f.name);
  const secs = Math.round((f.endTime - f.startTime) / 1000);
  if (file.startsWith('test/') && secs >= 10) durations[file] = secs;
}
const sorted = Object.fromEntries(Object.entries(durations).sort((a, b) => b[1] - a[1]));
fs.writeFileSync(path.join(root, 'test', 'support', 'durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
process.stdout.write(`${Object.keys(sorted).length} files written to test/support/durations.json\n`);
