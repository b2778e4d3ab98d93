// The scheduled sweep. The schedule is module state, and unit test files share a worker's modules
// (isolate: false), so the store and its sweep are imported afresh after vi.resetModules: another
// file's store may have started the real interval already. Only setInterval is faked; file times
// and I/O are real.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TEMP_PREFIX } from './keys.js';

vi.resetModules();
const { setLogSink } = await import('../sdk/logger.js');
const { FilesystemObjectStore } = await import('./filesystem.js');
const { STALE_TEMP_AGE_MS, SWEEP_INTERVAL_MS } = await import('./fsSweep.js');

let root: string;
const logged: string[] = [];

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  setLogSink((line) => logged.push(line));
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-fs-schedule-')));
});
afterEach(() => {
  vi.useRealTimers();
  fs.rmSync(root, { recursive: true, force: true });
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('scheduled temp-file sweep', () => {
  it('removes a temp file left behind after Init on the next scheduled sweep; an upload in progress keeps its own', async () => {
    const store = new FilesystemObjectStore();
    await store.init({ root, bucket: 'b', prefix: '' });

    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    async function* slow(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('first, ');
      await gate;
      yield Buffer.from('second');
    }
    const upload = store.putObject('b', 'backups/live/live.tar.gz', slow());
    const liveDir = path.join(root, 'b/backups/live');
    await until(() => fs.existsSync(liveDir) && fs.readdirSync(liveDir).some((f) => f.startsWith(TEMP_PREFIX)));
    const inProgress = path.join(liveDir, fs.readdirSync(liveDir).find((f) => f.startsWith(TEMP_PREFIX)) as string);
    // Made old on purpose: only this process holding it protects it.
    const old = (Date.now() - STALE_TEMP_AGE_MS - 60_000) / 1000;
    fs.utimesSync(inProgress, old, old);

    // Left by another writer of this root after Init ran (a peer that crashed an hour ago).
    const left = path.join(root, 'b/backups/dead', `${TEMP_PREFIX}dead.tar.gz-0123456789ab`);
    fs.mkdirSync(path.dirname(left), { recursive: true });
    fs.writeFileSync(left, 'partial');
    fs.utimesSync(left, old, old);

    vi.advanceTimersByTime(SWEEP_INTERVAL_MS);
    const sweptLine = () => logged.map((l) => JSON.parse(l) as { msg?: string; message?: string; count?: number; files?: string[] })
      .find((l) => (l.msg ?? l.message) === 'removed temp files left by killed uploads');
    // The sweep reports once its whole walk is done, after the file is gone: wait for the report, not the removal.
    await until(() => sweptLine() !== undefined);
    expect(fs.existsSync(left)).toBe(false);
    expect(fs.existsSync(inProgress)).toBe(true);
    expect(sweptLine()).toMatchObject({ count: 1, files: [left] });

    release();
    await upload;
    expect(fs.readFileSync(path.join(liveDir, 'live.tar.gz'), 'utf8')).toBe('first, second');
    expect(fs.readdirSync(liveDir)).toEqual(['live.tar.gz']);
  });
});
