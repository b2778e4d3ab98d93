// An S3-protocol server (s3rver) in a tracked child process on a free loopback port. Tests stop
// and start it again on the same port and directory to simulate a storage outage.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { spawnTracked, waitUntilServing, type Spawned } from './procs.js';
import { freePort } from './controlPlane.js';

export interface S3Server {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Directory holding the buckets on disk. */
  directory: string;
  /** Takes the server down (connections refused) without losing data. */
  stop(): Promise<void>;
  /** Brings it back on the same port. */
  start(): Promise<void>;
  /** Stops it for good and removes its directory unless it was given by the caller. */
  close(): Promise<void>;
}

export interface S3Options {
  directory?: string;
  buckets?: string[];
  /** Address to listen on (default 127.0.0.1); the real node's pods need the machine's own address. */
  address?: string;
}

function portOpen(port: number, address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, address, () => { s.end(); resolve(true); });
    s.on('error', () => resolve(false));
  });
}

export async function startS3Server(opts: S3Options = {}): Promise<S3Server> {
  const owned = opts.directory === undefined;
  const directory = opts.directory ?? fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-s3-'));
  fs.mkdirSync(directory, { recursive: true });
  for (const b of opts.buckets ?? []) fs.mkdirSync(path.join(directory, b), { recursive: true });
  const port = await freePort();
  const address = opts.address ?? '127.0.0.1';
  const bin = createRequire(import.meta.url).resolve('s3rver/bin/s3rver.js');
  const logFile = path.join(directory, '..', `s3rver-${port}.log`);
  let proc: Spawned | undefined;

  const start = async (): Promise<void> => {
    proc = spawnTracked(process.execPath, [bin, '-d', directory, '-a', address, '-p', String(port), '--silent'], logFile);
    await waitUntilServing('s3rver', proc, logFile, () => portOpen(port, address), 15_000, 50);
  };
  const stop = async (): Promise<void> => {
    await proc?.stop(2000);
    proc = undefined;
  };
  await start();
  return restartable({ endpoint: `http://${address}:${port}`, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', directory, owned, logFile, start, stop });
}

/**
 * The handle of an S3 server process that can be stopped and started again on its port: `close`
 * stops it for good and removes its log, and its directory when the server made it (`owned`).
 */
export function restartable(s: Omit<S3Server, 'region' | 'close'> & { owned: boolean; logFile: string }): S3Server {
  const { owned, logFile, ...server } = s;
  return {
    ...server,
    region: 'us-east-1',
    close: async () => {
      await s.stop();
      fs.rmSync(logFile, { force: true });
      if (owned) fs.rmSync(s.directory, { recursive: true, force: true });
    },
  };
}

/** Parts s3rver holds on disk (in `directory`) for the bucket's multipart uploads in progress. */
export function storedParts(directory: string, bucket: string): number {
  const uploads = path.join(directory, bucket, '._S3rver_uploads');
  if (!fs.existsSync(uploads)) return 0;
  let n = 0;
  for (const id of fs.readdirSync(uploads)) {
    try {
      n += fs.readdirSync(path.join(uploads, id)).filter((f) => /^\d+\.md5$/.test(f)).length;
    } catch {
      // completed or aborted meanwhile
    }
  }
  return n;
}
