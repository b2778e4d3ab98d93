// Runs the built `stowage` CLI as a child process, the way a user types it.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import zlib from 'node:zlib';
import * as tar from 'tar-stream';
import { BIN, ROOT } from '../support/server.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  kubeconfig?: string;
  /** Server namespace (passed as -n). */
  namespace?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  cwd?: string;
}

function newestMtime(p0: string): number {
  if (!fs.statSync(p0).isDirectory()) return fs.statSync(p0).mtimeMs;
  const dir = p0;
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Builds dist/ when bin.js is missing or older than the CLI's own sources (`npm test` builds
 * first; this covers running one file with `npx vitest run test/cli/...`). A lock directory keeps
 * parallel test files from building at the same time.
 */
export async function ensureBuilt(): Promise<void> {
  // All of src/: the server binary runs every module (a new controller, the webhook), not only the CLI's.
  const sources = [path.join(ROOT, 'src')];
  const stale = (): boolean => !fs.existsSync(BIN) || Math.max(...sources.map(newestMtime)) > fs.statSync(BIN).mtimeMs;
  if (!stale()) return;
  const lock = path.join(ROOT, 'node_modules', '.cache', 'stowage-build.lock');
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  for (let i = 0; ; i++) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      if (i > 600) throw new Error(`${lock} held for 5 minutes; remove it if no build is running`);
      await new Promise((r) => setTimeout(r, 500));
      if (!stale()) return;
    }
  }
  try {
    if (!stale()) return;
    // tsc emits even when other layers have type errors; only a missing bin.js is fatal here.
    const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
    if (!fs.existsSync(BIN)) throw new Error(`npm run build did not produce ${BIN}:\n${r.stdout}${r.stderr}`);
    // Touch so the next file does not rebuild when tsc left bin.js unchanged.
    const now = new Date();
    fs.utimesSync(BIN, now, now);
  } finally {
    fs.rmdirSync(lock);
  }
}

/** Runs `stowage ...args`; never rejects for a non-zero exit. */
export function runCli(args: string[], opts: RunOptions = {}): Promise<CliResult> {
  const full = [BIN];
  if (opts.kubeconfig !== undefined) full.push('--kubeconfig', opts.kubeconfig);
  if (opts.namespace !== undefined) full.push('-n', opts.namespace);
  full.push(...args);
  const env: NodeJS.ProcessEnv = { ...process.env, STOWAGE_DEBUG: '', NO_COLOR: '1' };
  delete env.STOWAGE_NAMESPACE;
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, full, { cwd: opts.cwd ?? ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`stowage ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A readable failure message for expect(...) on a CLI result. */
export function show(r: CliResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

/** A plugin directory with an executable launcher for test/cli/fixtures/slow-plugin.mjs. */
export function slowPluginDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-cli-plugins-'));
  const url = pathToFileURL(path.join(ROOT, 'test/cli/fixtures/slow-plugin.mjs')).href;
  const file = path.join(dir, 'slow-plugin');
  fs.writeFileSync(file, `#!${process.execPath}\nimport(${JSON.stringify(url)}).catch((e) => { console.error(e); process.exit(1); });\n`);
  fs.chmodSync(file, 0o755);
  return dir;
}

/**
 * Rewrites a gzipped tarball: `edit` gets every file entry (name -> content) and returns the
 * entries to write back (changed, removed or added).
 */
export async function rewriteTarball(file: string, edit: (entries: Map<string, Buffer>) => Map<string, Buffer>): Promise<void> {
  const entries = new Map<string, Buffer>();
  const extract = tar.extract();
  const input = fs.createReadStream(file).pipe(zlib.createGunzip());
  input.pipe(extract);
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const c of entry) chunks.push(c as Buffer);
    if (entry.header.type === 'file') entries.set(entry.header.name, Buffer.concat(chunks));
  }
  const pack = tar.pack();
  const out = fs.createWriteStream(`${file}.new`);
  const done = pipeline(pack, zlib.createGzip(), out);
  for (const [name, data] of edit(entries)) pack.entry({ name, size: data.length, mode: 0o644 }, data);
  pack.finalize();
  await done;
  fs.renameSync(`${file}.new`, file);
}
