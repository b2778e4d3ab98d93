#!/usr/bin/env node
// `npm run demo`: installs npm packages when needed, then runs scripts/demo.ts (which builds the
// CLI when dist/ is stale and provisions the local control plane).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureDeps, root } from './ensure-deps.mjs';

ensureDeps();
const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/demo.ts'), ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
