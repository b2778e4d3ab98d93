import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { takeRealNodeLock } from './hostLock.js';

describe('takeRealNodeLock', () => {
  it('makes a second taker wait until the first releases, and frees the lock when its holder dies', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hostlock-')), 'node.lock');
    const first = await takeRealNodeLock(() => {}, file);
    // While held, a non-blocking flock fails.
    expect(spawnSync('flock', ['--nonblock', file, 'true']).status).not.toBe(0);
    const order: string[] = [];
    const second = takeRealNodeLock(() => {}, file).then((l) => { order.push('second'); return l; });
    await new Promise((r) => setTimeout(r, 200));
    order.push('released');
    await first.release();
    const held = await second;
    expect(order).toEqual(['released', 'second']);
    await held.release();
    expect(spawnSync('flock', ['--nonblock', file, 'true']).status).toBe(0);

    // A holder killed without releasing (a crashed test worker) leaves the lock free.
    const child = spawnSync(process.execPath, ['--import', 'tsx', '-e',
      `import('${path.join(import.meta.dirname, 'hostLock.ts')}').then(async (m) => { await m.takeRealNodeLock(() => {}, ${JSON.stringify(file)}); process.exit(0); })`], { encoding: 'utf8', timeout: 15_000 });
    expect(child.status, child.stderr).toBe(0);
    expect(spawnSync('flock', ['--wait', '5', file, 'true']).status).toBe(0);
  });
});
