// minio.sh's own contract, without building anything: a cached binary is used as it is (no Go
// needed), and a build that cannot run fails with the reason on its PROVISIONING FAILED line.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MINIO_VERSION } from './minio.js';

const SCRIPT = path.join(import.meta.dirname, 'minio.sh');
const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function run(root: string, go: string): { status: number | null; stderr: string } {
  const r = spawnSync('bash', [SCRIPT, root, MINIO_VERSION], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: root, GO: go } });
  return { status: r.status, stderr: r.stderr };
}

/** A fake go that reports `version` (what the script asks before building). */
function fakeGo(dir: string, version: string): string {
  const file = path.join(dir, `go-${version}`);
  fs.writeFileSync(file, `#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo ${version} && exit 0\nexit 3\n`, { mode: 0o755 });
  return file;
}

describe('minio.sh', () => {
  it('fails saying why when Go is missing or too old, and uses a cached binary without building', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-minio-cache-'));
    made.push(root);
    const missing = run(root, path.join(root, 'no-go'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('[minio] PROVISIONING FAILED: no go binary found (PATH, /usr/local/go/bin/go, or $GO): MinIO is built from the Go module proxy and needs Go >= 1.24');
    const old = fakeGo(root, 'go1.19.8');
    const tooOld = run(root, old);
    expect(tooOld.status).toBe(1);
    expect(tooOld.stderr).toContain(`[minio] PROVISIONING FAILED: ${old} is go1.19.8; MinIO ${MINIO_VERSION} needs Go >= 1.24 (set GO to a newer go binary)`);

    const bin = path.join(root, `minio-${MINIO_VERSION}`, 'minio');
    fs.writeFileSync(bin, '#!/bin/sh\n', { mode: 0o755 });
    expect(run(root, old)).toEqual({ status: 0, stderr: '' });
  });
});
