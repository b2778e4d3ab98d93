// MinIO, a real S3 server (ListMultipartUploads, versioning, Object Lock, checksums), built from the
// Go module proxy by minio.sh and started as a tracked child on a free loopback port with its own
// data directory. Test infrastructure only: never shipped.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnTracked, waitUntilServing, type Spawned } from './procs.js';
import { freePort } from './controlPlane.js';
import { restartable, type S3Server } from './s3.js';

/** The pinned pseudo-version (`go list -m github.com/minio/minio@latest` on 2026-12-05; MinIO tags are not semver). */
export const MINIO_VERSION = 'v0.0.0-20260212201848-7aac2a2c5b7c';

/** The cache root shared by every Go-built test tool: $STOWAGE_CACHE_DIR, else $XDG_CACHE_HOME/stowage, else ~/.cache/stowage. */
export function cacheRoot(): string {
  return process.env.STOWAGE_CACHE_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'stowage');
}

/** Builds (once, cached) and returns the path of the minio binary; a failed build throws with its reason. */
export async function provisionMinio(root = cacheRoot()): Promise<string> {
  const script = path.join(import.meta.dirname, 'minio.sh');
  let tail = '';
  const code = await new Promise<number | null>((resolve, reject) => {
    // Progress lines go straight to stderr so a person watching the first build sees them.
    const child = spawn('bash', [script, root, MINIO_VERSION], { stdio: ['ignore', 'inherit', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString()).slice(-2000);
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    const reason = /PROVISIONING FAILED: (.*)/.exec(tail)?.[1] ?? tail.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`MinIO provisioning failed (cache ${root}): ${reason}`);
  }
  return path.join(root, `minio-${MINIO_VERSION}`, 'minio');
}

async function ready(endpoint: string): Promise<boolean> {
  try {
    return (await fetch(`${endpoint}/minio/health/ready`)).ok;
  } catch {
    return false;
  }
}

export async function startMinio(opts: { directory?: string } = {}): Promise<S3Server> {
  const bin = await provisionMinio();
  const owned = opts.directory === undefined;
  const directory = opts.directory ?? fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-minio-'));
  fs.mkdirSync(directory, { recursive: true });
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const logFile = path.join(directory, '..', `minio-${port}.log`);
  // Fresh random credentials per run: nothing outside this run can reach its buckets.
  const accessKeyId = `stowage${crypto.randomBytes(4).toString('hex')}`;
  const secretAccessKey = crypto.randomBytes(18).toString('base64url');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: directory,
    MINIO_ROOT_USER: accessKeyId,
    MINIO_ROOT_PASSWORD: secretAccessKey,
    MINIO_BROWSER: 'off',
    MINIO_UPDATE: 'off',
  };
  let proc: Spawned | undefined;
  const start = async (): Promise<void> => {
    const console = await freePort();
    proc = spawnTracked(bin, ['server', '--quiet', '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${console}`, path.join(directory, 'data')], logFile, env);
    // The readiness endpoint answers 200 once the drive is formatted and the object layer is up.
    await waitUntilServing('minio', proc, logFile, () => ready(endpoint), 60_000, 100);
  };
  const stop = async (): Promise<void> => {
    await proc?.stop(10_000);
    proc = undefined;
  };
  await start();
  return restartable({ endpoint, accessKeyId, secretAccessKey, directory, owned, logFile, start, stop });
}
