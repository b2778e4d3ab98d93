#!/usr/bin/env node
// `node scripts/run-ts.mjs [--runtime-node] FILE.ts [args]`: installs npm packages when needed (so
// `npm run demo` and `npm run bench` work on a fresh clone), then runs the TypeScript file with tsx.
// --runtime-node runs it on the image's Node (scripts/node-runtime.mjs, fetched once and cached)
// instead of the node running npm, so what it starts (the server, the CLI) runs as shipped.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureDeps, root } from './ensure-deps.mjs';
import { ensureRuntimeNode, runtimeEnv } from './node-runtime.mjs';

let argv = process.argv.slice(2);
const onRuntime = argv[0] === '--runtime-node';
if (onRuntime) argv = argv.slice(1);
const [file, ...args] = argv;
if (file === undefined) {
  process.stderr.write('usage: node scripts/run-ts.mjs [--runtime-node] FILE.ts [args...]\n');
  process.exit(2);
}
ensureDeps();
let node = process.execPath;
if (onRuntime) {
  try {
    node = ensureRuntimeNode();
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
}
const r = spawnSync(node, ['--import', 'tsx', path.resolve(root, file), ...args], { cwd: root, stdio: 'inherit', env: runtimeEnv(node) });
process.exit(r.status ?? 1);
