// The harness never leaves processes behind and fails loudly when it cannot provision.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { provision } from '../scripts/cluster/provision.js';
import { waitUntil } from './support/kube.js';

const root = path.resolve(import.meta.dirname, '..');

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie is dead, just not reaped yet
  } catch {
    return false;
  }
}

describe('control plane lifecycle', () => {
  it('fails with a clear message when the cache directory is unwritable', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-badcache-')), 'not-a-dir');
    fs.writeFileSync(file, '');
    await expect(provision(path.join(file, 'cache'))).rejects.toThrow(
      /local control plane provisioning failed .*cannot create cache directory .*not-a-dir\/cache/,
    );
  });

  it('fails with the Go module proxy\'s answer when the release does not exist, before building anything', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-badversion-'));
    try {
      await expect(provision(root, '1.99.0')).rejects.toThrow(
        /local control plane provisioning failed .*downloading k8s\.io\/kubernetes v1\.99\.0 failed: go: k8s\.io\/kubernetes@v1\.99\.0: .+/,
      );
      expect(fs.readdirSync(path.join(root, 'k8s-v1.99.0', 'bin'))).toEqual([]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('leaves no etcd, kube-* or s3rver process behind when its owner is SIGKILLed', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'test/fixtures/startControlPlane.ts')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const info = await waitUntil('control plane child to report its pids', async () => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      return line ? (JSON.parse(line) as { pids: number[] }) : undefined;
    }, 90_000);
    // etcd, kube-apiserver, kube-controller-manager and s3rver.
    expect(info.pids.length).toBeGreaterThanOrEqual(4);
    expect(info.pids.every(alive)).toBe(true);
    child.kill('SIGKILL');
    await waitUntil('every child to be gone', async () => (info.pids.some(alive) ? undefined : true), 15_000);
    expect(info.pids.filter(alive)).toEqual([]);
  });
});
