// Installs the npm packages (npm ci) when node_modules is missing or older than the lockfile, so
// `npm test` and `npm run demo` work on a fresh clone. Plain JavaScript: it runs before anything is installed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '..');

export function depsStale() {
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(installed)) return true;
  return fs.statSync(path.join(root, 'package-lock.json')).mtimeMs > fs.statSync(installed).mtimeMs;
}

export function ensureDeps() {
  if (!depsStale()) return;
  process.stderr.write('=== installing npm packages (npm ci)\n');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`npm ci failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
}
