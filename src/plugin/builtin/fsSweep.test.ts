import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setLogSink } from '../sdk/logger.js';
import { FilesystemObjectStore } from './filesystem.js';
import { PROCESS_START_MS, STALE_TEMP_AGE_MS, heldTempFiles, sweepTempFiles } from './fsSweep.js';
import { TEMP_PREFIX } from './keys.js';

let root: string;
const logged: string[] = [];

/** A temp file as a killed upload leaves it, last written at `mtimeMs`. */
function leftover(rel: string, mtimeMs: number, content = ''): string {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  fs.utimesSync(p, mtimeMs / 1000, mtimeMs / 1000);
  return p;
}

const tempName = (base: string): string => `${TEMP_PREFIX}${base}-0123456789ab`;

beforeEach(() => {
  setLogSink((line) => logged.push(line));
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-fs-sweep-')));
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('filesystem temp-file sweep', () => {
  it('Init removes the temp files killed writers left under the location, and nothing else', async () => {
    const before = PROCESS_START_MS - 60_000;
    const dead = leftover(`b/site/backups/one/${tempName('one.tar.gz')}`, before);
    const deadTop = leftover(`b/site/${tempName('x')}`, before);
    const otherPrefix = leftover(`b/elsewhere/${tempName('y')}`, before);
    const object = leftover('b/site/backups/one/stowage-backup.json', before, '{}');
    // Written since this process started and not by it: it could be live, so it stays.
    const recent = leftover(`b/site/backups/two/${tempName('two.tar.gz')}`, Date.now());

    const store = new FilesystemObjectStore();
    await store.init({ root, bucket: 'b', prefix: 'site' });

    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(deadTop)).toBe(false);
    expect(fs.existsSync(otherPrefix)).toBe(true);
    expect(fs.existsSync(object)).toBe(true);
    expect(fs.existsSync(recent)).toBe(true);
    expect(await store.listObjects('b', 'site/')).toEqual(['site/backups/one/stowage-backup.json']);
    const line = logged.map((l) => JSON.parse(l) as { msg?: string; message?: string; count?: number }).find((l) => (l.msg ?? l.message) === 'removed temp files left by killed uploads');
    expect(line).toMatchObject({ count: 2 });
  });

  it('removes a temp file not written for longer than the stale age, even one written since the process started', async () => {
    const now = Date.now();
    const old = leftover(`b/${tempName('a')}`, now - STALE_TEMP_AGE_MS - 1000);
    const fresh = leftover(`b/${tempName('b')}`, now - 1000);
    const removed = await sweepTempFiles(path.join(root, 'b'), { processStartMs: now - 2 * STALE_TEMP_AGE_MS, nowMs: now });
    expect(removed).toEqual([old]);
    expect(fs.existsSync(fresh)).toBe(true);
  });

  it('never removes the temp file of an upload this process is writing', async () => {
    const store = new FilesystemObjectStore();
    await store.init({ root });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    async function* slow(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('first half, ');
      await gate;
      yield Buffer.from('second half');
    }
    const upload = store.putObject('b', 'backups/big/big.tar.gz', slow());
    const dir = path.join(root, 'b/backups/big');
    const tmp = await (async () => {
      for (;;) {
        const found = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => f.startsWith(TEMP_PREFIX)) : undefined;
        if (found !== undefined && fs.statSync(path.join(dir, found)).size > 0) return path.join(dir, found);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    expect(heldTempFiles.has(tmp)).toBe(true);
    // Every file counts as written before this process started: only holding it protects it.
    const removed = await sweepTempFiles(path.join(root, 'b'), { processStartMs: Date.now() + 3600_000 });
    expect(removed).toEqual([]);
    release();
    await upload;
    expect(fs.readFileSync(path.join(dir, 'big.tar.gz'), 'utf8')).toBe('first half, second half');
    expect(heldTempFiles.has(tmp)).toBe(false);
    expect(fs.readdirSync(dir)).toEqual(['big.tar.gz']);
  });

  it('accepts the keys every location passes (caCert, credentialsFile) and still refuses unknown ones', async () => {
    const store = new FilesystemObjectStore();
    await expect(store.init({ root, bucket: 'b', prefix: '', caCert: 'pem', credentialsFile: '/nonexistent' })).resolves.toBeUndefined();
    await expect(store.init({ root, s3Url: 'http://x' })).rejects.toThrow('unknown config key(s) s3Url');
  });
});
