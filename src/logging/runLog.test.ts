import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretSet } from './format.js';
import { createRunLogger, runLogFileName, runLogJournal, type RunLog } from './runLog.js';
import { jsonLines, jsonServerLogger } from './capture.testkit.js';

type Rec = Record<string, unknown>;

let dir: string;
let serverText: string;
let open: RunLog[];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'stowage-runlog-'));
  serverText = '';
  open = [];
});
afterEach(async () => {
  await Promise.allSettled(open.map((r) => r.close()));
  rmSync(dir, { recursive: true, force: true });
});

const server = (level = 'debug') => jsonServerLogger((t) => (serverText += t), level);
const serverLines = (): Promise<Rec[]> => jsonLines(() => serverText);

function run(opts: Partial<Parameters<typeof createRunLogger>[0]> = {}): RunLog {
  const r = createRunLogger({ server: server(), kind: 'backup', namespace: 'stowage', name: 'b1', dir, ...opts });
  open.push(r);
  return r;
}

function fileRecords(file: string): Rec[] {
  const text = zlib.gunzipSync(readFileSync(file)).toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Rec);
}

describe('createRunLogger', () => {
  it('writes every line as JSON into a valid gzip file named after the run', async () => {
    const r = run();
    expect(r.path).toBe(path.join(dir, runLogFileName('backup', 'stowage', 'b1')));
    expect(runLogFileName('restore', 'ns', 'r1')).toMatch(/^restore-[0-9a-f]{32}\.log\.gz$/);
    expect(runLogFileName('restore', 'ns', 'r1')).toBe(runLogFileName('restore', 'ns', 'r1'));
    expect(runLogFileName('restore', 'ns', 'r1')).not.toBe(runLogFileName('restore', 'ns', 'r2'));
    // The longest valid names still make a short file name.
    expect(runLogFileName('backup', 'n'.repeat(63), 'x'.repeat(253)).length).toBeLessThan(64);
    for (let i = 0; i < 500; i++) r.logger.info(`item ${i}`, { index: i });
    r.logger.warn('almost done');
    await r.close();
    expect(r.closed).toBe(true);
    const recs = fileRecords(r.path);
    expect(recs).toHaveLength(501);
    expect(recs.slice(0, 500).map((x) => x.index)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(recs[0]).toMatchObject({ level: 'info', msg: 'item 0', backup: 'stowage/b1', logSource: 'backup', index: 0 });
    expect(Object.keys(recs[0] ?? {}).slice(0, 5)).toEqual(['time', 'level', 'msg', 'backup', 'logSource']);
    expect(recs[500]).toMatchObject({ level: 'warn', msg: 'almost done' });
  });

  it('mirrors every line to the server logger tagged with the run and its source', async () => {
    const r = run({ kind: 'restore', name: 'r1' });
    r.logger.info('restoring', { items: 3 });
    r.logger.child({ logSource: 'restore/ordering' }).debug('tier 1');
    r.logger.warn('from plugin', { plugin: 'example.com/widgets' });
    await r.close();
    const lines = await serverLines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'restoring', restore: 'stowage/r1', logSource: 'restore', items: 3 });
    expect(lines[1]).toMatchObject({ level: 'debug', msg: 'tier 1', restore: 'stowage/r1', logSource: 'restore/ordering' });
    expect(lines[2]).toMatchObject({
      level: 'warn',
      msg: 'from plugin',
      restore: 'stowage/r1',
      logSource: 'plugin/example.com/widgets',
      plugin: 'example.com/widgets',
    });
    // The file holds the same lines.
    expect(fileRecords(r.path).map((x) => x.msg)).toEqual(['restoring', 'tier 1', 'from plugin']);
  });

  it('keeps warnings and errors, plugin lines and foreign level names included', async () => {
    const r = run();
    r.logger.info('fine');
    r.logger.warn('w1');
    r.logger.error('e1');
    r.logger.log({ level: 'warning', message: 'plugin w', plugin: 'stowage.dev/aws' });
    r.logger.log({ level: 'fatal', message: 'plugin e', plugin: 'stowage.dev/aws' });
    r.logger.log({ level: 'error', message: 'plugin e2', plugin: 'stowage.dev/aws' });
    r.logger.debug('fine too');
    await r.close();
    const recs = fileRecords(r.path);
    expect(recs.filter((x) => x.level === 'warn')).toHaveLength(2);
    expect(recs.filter((x) => x.level === 'error')).toHaveLength(3);
  });

  it('redacts added secrets and their base64 form from the file and the server log', async () => {
    const shared = createSecretSet();
    shared.add('server-wide-token');
    const r = run({ secrets: shared });
    const secret = 'Pa55word-xyz';
    const b64 = Buffer.from(secret).toString('base64');
    r.addSecret(secret);
    r.logger.info(`secret value ${secret}`, { data: { password: b64 }, list: [secret], other: 'server-wide-token' });
    r.logger.error(new Error(`failed with ${secret}`).message);
    r.logger.error(new Error(`thrown with ${secret}`));
    r.logger.warn('wrapped', new Error(`meta error ${b64}`));
    await r.close();
    const fileText = zlib.gunzipSync(readFileSync(r.path)).toString('utf8');
    const server = JSON.stringify(await serverLines());
    for (const text of [fileText, server]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(b64);
      expect(text).not.toContain('server-wide-token');
      expect(text).toContain('[REDACTED]');
    }
    const recs = fileRecords(r.path);
    expect(recs[0]).toMatchObject({ msg: 'secret value [REDACTED]', list: ['[REDACTED]'] });
    expect(recs.map((x) => x.msg)).toEqual([
      'secret value [REDACTED]',
      'failed with [REDACTED]',
      'thrown with [REDACTED]',
      'wrapped meta error [REDACTED]',
    ]);
  });

  it('keeps warnings even when asked for error level only, and honours the server level for debug', async () => {
    const r1 = run({ level: 'error', name: 'lvl1' });
    r1.logger.warn('kept');
    r1.logger.info('dropped');
    await r1.close();
    expect(fileRecords(r1.path).map((x) => x.msg)).toEqual(['kept']);

    const r2 = createRunLogger({ server: server('info'), kind: 'backup', namespace: 'stowage', name: 'lvl2', dir });
    open.push(r2);
    r2.logger.debug('not at info');
    r2.logger.info('at info');
    await r2.close();
    expect(fileRecords(r2.path).map((x) => x.msg)).toEqual(['at info']);
  });

  it('linesSoFar reads a running log back, then the complete one', async () => {
    const r = run();
    expect(await r.linesSoFar()).toEqual([]);
    // Enough incompressible text to make gzip emit data on its own before the flush.
    for (let i = 0; i < 2000; i++) r.logger.info(`line ${i} ${Math.random().toString(36)}`);
    const sofar = await r.linesSoFar();
    expect(sofar).toHaveLength(2000);
    expect((JSON.parse(sofar[1999] ?? '{}') as Rec).msg).toMatch(/^line 1999 /);
    r.logger.info('after the read');
    expect(await r.linesSoFar()).toHaveLength(2001);
    await r.close();
    const all = await r.linesSoFar();
    expect(all).toHaveLength(2001);
    expect(all.slice(0, 2000)).toEqual(sofar);
    // The flushes left a valid gzip file behind.
    expect(fileRecords(r.path)).toHaveLength(2001);
  });

  it('follow delivers live lines until unsubscribed, and reports the end', async () => {
    const r = run();
    r.logger.info('before');
    const got: string[] = [];
    let ended = 0;
    const stop = r.follow((l) => got.push(l), { onEnd: () => ended++ });
    r.logger.info('one');
    r.logger.warn('two');
    expect(got.map((l) => (JSON.parse(l) as Rec).msg)).toEqual(['one', 'two']);
    const other: string[] = [];
    const stopOther = r.follow((l) => other.push(l));
    stopOther();
    r.logger.info('three');
    expect(other).toEqual([]);
    await r.close();
    expect(ended).toBe(1);
    stop();
    expect(got).toHaveLength(3);
  });

  it('follow fromStart replays earlier lines then live ones, with no gap or duplicate', async () => {
    const r = run();
    for (let i = 0; i < 300; i++) r.logger.info(`early ${i}`);
    const got: string[] = [];
    // The replay reads the file back asynchronously: its end, not a guessed pause, says it is done.
    const ended = new Promise<void>((resolve) => r.follow((l) => got.push((JSON.parse(l) as Rec).msg as string), { fromStart: true, onEnd: resolve }));
    // Lines logged while the replay reads the file back.
    for (let i = 0; i < 50; i++) r.logger.info(`late ${i}`);
    await r.close();
    await ended;
    expect(got).toEqual([...Array.from({ length: 300 }, (_, i) => `early ${i}`), ...Array.from({ length: 50 }, (_, i) => `late ${i}`)]);
  });

  it('follow fromStart on a closed log delivers the whole log and ends', async () => {
    const r = run();
    r.logger.info('a');
    r.logger.info('b');
    await r.close();
    const got: string[] = [];
    await new Promise<void>((resolve) => r.follow((l) => got.push(l), { fromStart: true, onEnd: resolve }));
    expect(got.map((l) => (JSON.parse(l) as Rec).msg)).toEqual(['a', 'b']);
  });

  it('a throwing follower does not break logging', async () => {
    const r = run();
    r.follow(() => {
      throw new Error('bad follower');
    });
    r.logger.info('still logged');
    await r.close();
    expect(fileRecords(r.path).map((x) => x.msg)).toEqual(['still logged']);
  });

  it('after close, late lines reach only the server log and the file stays valid', async () => {
    const r = run();
    r.logger.info('in file');
    await r.close();
    await r.close(); // idempotent
    r.logger.warn('late plugin line', { plugin: 'stowage.dev/aws' });
    await new Promise((res) => setImmediate(res));
    expect(fileRecords(r.path).map((x) => x.msg)).toEqual(['in file']);
    expect((await serverLines()).map((x) => x.msg)).toEqual(['in file', 'late plugin line']);
  });

  it('close rejects when the file cannot be written', async () => {
    // A directory where the file should go makes the open fail.
    const file = runLogFileName('backup', 'stowage', 'blocked');
    mkdirSync(path.join(dir, file));
    const r = run({ name: 'blocked' });
    r.logger.info('x');
    await expect(r.close()).rejects.toThrow(new RegExp(`^run log .*${file.replace(/\./g, '\\.')} could not be written: EISDIR`));
  });

  it('refuses names that are not Kubernetes names', () => {
    expect(() => run({ name: '../etc' })).toThrow('run log name "../etc" is not a valid Kubernetes name');
    expect(() => run({ namespace: 'A' })).toThrow('run log namespace "A" is not a valid Kubernetes name');
  });
});

describe('the run log journal', () => {
  it('holds every line uncompressed by the next turn of the event loop, and is removed at close', async () => {
    const r = run();
    r.logger.info('first');
    r.logger.warn('second', { n: 2 });
    await new Promise((res) => setImmediate(res));
    await new Promise((res) => setImmediate(res));
    const journal = runLogJournal(r.path);
    const lines = readFileSync(journal, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Rec);
    expect(lines.map((l) => l.msg)).toEqual(['first', 'second']);
    expect(lines[1]).toMatchObject({ level: 'warn', n: 2, backup: 'stowage/b1' });
    await r.close();
    expect(existsSync(journal)).toBe(false);
    expect(existsSync(r.path)).toBe(true);
  });
});
