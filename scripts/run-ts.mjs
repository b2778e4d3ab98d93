#!/usr/bin/env node
// `node scripts/run-ts.mjs FILE.ts [args]`: installs npm packages when needed (so `npm run demo` and
// `npm run bench` work on a fresh clone), then runs the TypeScript file with tsx.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureDeps, root } from './ensure-deps.mjs';

const [file, ...args] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write('usage: node scripts/run-ts.mjs FILE.ts [args...]\n');
  process.exit(2);
}
ensureDeps();
const r = spawnSync(process.execPath, ['--import', 'tsx', path.resolve(root, file), ...args], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
