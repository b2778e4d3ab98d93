// `npm run helm -- <helm args>`: the helm binary the tests use (built from its Go module on first
// run), for trying the chart by hand, e.g. `npm run helm -- template stowage charts/stowage -n stowage`.
import { spawnSync } from 'node:child_process';
import { ensureHelm } from './helm.js';

const bin = await ensureHelm();
const r = spawnSync(bin, process.argv.slice(2), { stdio: 'inherit' });
process.exit(r.status ?? 1);
