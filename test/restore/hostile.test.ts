// Hostile archives, put in the bucket by hand: each restore fails with its precise reason before
// anything is created, although valid items come first in every tarball.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBackup } from '../../src/apis/v1/index.js';
import { CORE, type ApiResource } from '../../src/kube/index.js';
import { hostileCases, gzTar, validHead } from '../fixtures/archives/hostile.js';
import { uniqueName } from '../support/kube.js';
import { getOrUndefined, restoreNow, setupEnv, type Env } from './support.js';

async function* bytes(b: Buffer): AsyncGenerator<Uint8Array> {
  yield b;
}

describe('hostile archives', () => {
  let env: Env;
  let discovered: ApiResource[];
  const ns = uniqueName('hostile');

  beforeAll(async () => {
    env = await setupEnv('hostile');
    discovered = await env.client.discover();
  });
  afterAll(() => env?.close());

  /** Stores the tarball as a backup and restores it; the restore must fail with `reason` and create nothing. */
  const expectRefused = async (tgz: Buffer, reason: string, limits?: { maxEntryBytes?: number; maxTotalBytes?: number }, setup?: (backup: string) => Promise<void>) => {
    const name = uniqueName('bad');
    await env.store.putTarball(name, bytes(tgz));
    await setup?.(name);
    const { result, lines } = await restoreNow(env, newBackup(name, 'stowage'), {}, { discovered, ...(limits ? { readLimits: limits } : {}) });
    expect(result.phase).toBe('Failed');
    expect(result.failureReason).toContain(reason);
    expect(result.results.errors.cluster).toEqual([result.failureReason]);
    expect(result.summary).toEqual({ created: 0, updated: 0, skipped: 0, failed: 0 });
    expect(result.outcomes).toEqual([]);
    // The end line with the reason is the run lifecycle's (controller), not the engine's: the engine logs no success either.
    expect(lines.some((l) => /restore (completed|partially failed)/.test(l))).toBe(false);
    expect(await getOrUndefined(env.client, CORE.namespaces, undefined, ns)).toBeUndefined();
  };

  for (const c of hostileCases(ns)) {
    it(`refuses ${c.name}`, async () => {
      await expectRefused(await gzTar(c.entries), c.reason, c.limits);
    });
  }

  it('refuses a tarball that is not gzip', async () => {
    await expectRefused(Buffer.from('this is not a tarball'), '(corrupt): the tarball is not valid gzip');
  });

  it('refuses a tarball that differs from the manifest written at backup time', async () => {
    const tgz = await gzTar(validHead(ns));
    await expectRefused(tgz, '(manifest-mismatch): the tarball does not match the manifest written at backup time', undefined, async (backup) => {
      await env.store.putManifest(backup, {
        formatVersion: '1.1.0',
        tarball: { sha256: '0'.repeat(64), bytes: tgz.length },
        entries: { 'metadata/version': '0'.repeat(64) },
      });
    });
  });

  it('fails clearly when the backup has no tarball', async () => {
    const { result } = await restoreNow(env, newBackup(uniqueName('missing'), 'stowage'), {}, { discovered });
    expect(result.phase).toBe('Failed');
    expect(result.failureReason).toMatch(/^the tarball of backup missing-[0-9a-f]+ is not in object storage/);
  });

  it('fails clearly, naming the directory, when the spill file cannot be created, and creates nothing', async () => {
    const name = uniqueName('nospill');
    await env.store.putTarball(name, bytes(await gzTar(validHead(ns))));
    const dir = await mkdtemp(join(tmpdir(), 'hostile-'));
    try {
      const blocker = join(dir, 'not-a-directory');
      await writeFile(blocker, '');
      const spillDir = join(blocker, 'spill');
      const { result } = await restoreNow(env, newBackup(name, 'stowage'), {}, { discovered, spillDir });
      expect(result.phase).toBe('Failed');
      expect(result.failureReason).toMatch(new RegExp(`^cannot create a spill file in ${spillDir}: ENOTDIR`));
      expect(result.outcomes).toEqual([]);
      expect(await getOrUndefined(env.client, CORE.namespaces, undefined, ns)).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('restores the valid head alone, proving the archives above fail only because of their hostile entry', async () => {
    const name = uniqueName('good');
    const okNs = uniqueName('hostile-ok');
    await env.store.putTarball(name, bytes(await gzTar(validHead(okNs))));
    try {
      const { result } = await restoreNow(env, newBackup(name, 'stowage'), {}, { discovered });
      expect(result.failureReason).toBeUndefined();
      expect(result.summary).toEqual({ created: 2, updated: 0, skipped: 0, failed: 0 });
      expect(await getOrUndefined(env.client, CORE.configMaps, okNs, 'first')).toBeDefined();
    } finally {
      await env.client.delete(CORE.namespaces, undefined, okNs).catch(() => undefined);
    }
  });
});
