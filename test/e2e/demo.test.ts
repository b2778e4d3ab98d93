// `npm run demo` end to end: the script itself as a child process, with filesystem storage and
// with --s3. It starts its own control plane (cached binaries), server and storage, and must
// leave nothing running.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function runDemo(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'scripts/demo.ts', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, STOWAGE_NAMESPACE: '', KUBECONFIG: '' },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out }));
  });
}

function demoDir(out: string): string {
  const dir = /the demo directory (\S+) is kept/.exec(out)?.[1];
  if (dir === undefined) throw new Error(`the demo did not say where it kept its files:\n${out.slice(-3000)}`);
  return dir;
}

function expectWholeRun(out: string): void {
  for (const marker of [
    '$ stowage backup create demo-backup --include-namespaces demo --wait',
    'Backup completed with status: Completed.',
    '$ stowage backup describe demo-backup',
    'signing key in Secret stowage/stowage-signing (an HMAC key, entry "hmac")',
    'Backup "demo-backup" is intact',
    'namespace demo is gone',
    '$ stowage restore create --from-backup demo-backup --wait',
    'Restore completed with status: Completed',
    'stowage server exited with code 0',
  ]) expect(out, marker).toContain(marker);
  expect(out).toMatch(/^Completed: (\d+)\/\1 items backed up \(100%\)$/m);
  // The location signs: describe shows the backup's signature, and the summary where it is.
  expect(out).toMatch(/^Signature: +HMAC-SHA256, key "hmac"$/m);
  expect(out).toMatch(/^ {4}signature: +\S+demo-backup-signature\.json \(HMAC-SHA256, key "hmac"\)$/m);
  expect(out).toMatch(/ info +starting backup stowage\/demo-backup/);
  for (const obj of ['ConfigMap demo/app-config', 'Secret demo/app-secret', 'Deployment demo/web', 'Service demo/web', 'Widget demo/gizmo']) {
    expect(out).toMatch(new RegExp(`^ {4}ok +${obj}$`, 'm'));
  }
  expect(out).not.toContain('s3cr3t-demo');
  // No process warnings, the AWS SDK's NodeVersionSupportWarning (on Node < 22) included: the demo,
  // its server and the plugin processes (whose stderr the server logs) run on the image's Node.
  const serverLog = /server log: +(\S+)/.exec(out)?.[1] ?? '';
  for (const text of [out, fs.readFileSync(serverLog, 'utf8')]) expect(text).not.toMatch(/\(node:\d+\) \w*Warning|NodeVersionSupportWarning/);
  expect(out).toMatch(/Demo finished in \d+\.\ds\./);
}

describe('npm run demo', () => {
  it('backs up, deletes and restores a namespace with filesystem storage, then stops everything', async () => {
    const r = await runDemo([]);
    expect(r.code, r.out.slice(-4000)).toBe(0);
    expectWholeRun(r.out);
    const dir = demoDir(r.out);
    try {
      const tarball = /tarball: +(\S+)/.exec(r.out)?.[1] ?? '';
      expect(tarball.startsWith(dir)).toBe(true);
      expect(fs.statSync(tarball).size).toBeGreaterThan(0);
      const restoreLog = /restore log: +(\S+)/.exec(r.out)?.[1] ?? '';
      expect(fs.existsSync(restoreLog)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 900_000);

  it('does the same through a local S3 server and the stowage.dev/aws store with --s3', async () => {
    const r = await runDemo(['--s3']);
    expect(r.code, r.out.slice(-4000)).toBe(0);
    expectWholeRun(r.out);
    expect(r.out).toContain('tarball:      s3://stowage/backups/demo-backup/demo-backup.tar.gz');
    fs.rmSync(demoDir(r.out), { recursive: true, force: true });
  }, 900_000);

  it('refuses --in-cluster combined with another flag, before starting anything', async () => {
    const r = await runDemo(['--in-cluster', '--s3']);
    expect(r.code).toBe(2);
    expect(r.out.trim()).toBe('demo: --in-cluster takes no other flag');
  });

  it('refuses unknown flags with a usage line', async () => {
    const r = await runDemo(['--s4']);
    expect(r.code).toBe(2);
    expect(r.out.trim()).toBe('demo: unknown flag --s4 (use --s3 to store backups in a local S3 server, --in-cluster to run the chart on a real node)');
  });
});
