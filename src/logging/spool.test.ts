import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jsonLines, jsonServerLogger } from './capture.testkit.js';
import { LogSpool, type SpoolTarget } from './spool.js';

type Rec = Record<string, unknown>;

let root: string;
let spoolDir: string;
let serverText: string;

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'stowage-spool-'));
  spoolDir = path.join(root, 'spool');
  serverText = '';
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const logger = () => jsonServerLogger((t) => (serverText += t));
const serverLines = (): Promise<Rec[]> => jsonLines(() => serverText);

function runLog(name: string, content: string): string {
  const file = path.join(root, name);
  writeFileSync(file, content);
  return file;
}

const target = (b: string): SpoolTarget => ({ location: 'default', key: `backups/${b}/${b}-logs.gz` });

describe('LogSpool', () => {
  it('keep moves the log into the spool with a sidecar and says where it is', async () => {
    const spool = new LogSpool(spoolDir, logger());
    const file = runLog('backup-stowage-b1.log.gz', 'log one');
    const kept = await spool.keep(file, target('b1'));
    expect(existsSync(file)).toBe(false);
    expect(path.dirname(kept.file)).toBe(spoolDir);
    expect(path.basename(kept.file)).toMatch(/^\d{15}-\d{6}-[0-9a-f]{8}-backup-stowage-b1\.log\.gz$/);
    expect(readFileSync(kept.file, 'utf8')).toBe('log one');
    const sidecar = JSON.parse(readFileSync(`${kept.file}.spool.json`, 'utf8')) as Rec;
    expect(sidecar).toMatchObject({ version: 1, target: target('b1'), attempts: 0 });
    expect(kept).toMatchObject({ target: target('b1'), attempts: 0 });

    const [line] = await serverLines();
    expect(line).toMatchObject({
      level: 'warn',
      msg: 'log upload failed; the log is kept in the spool and will be uploaded when storage is back',
      spooledFile: kept.file,
      location: 'default',
      key: 'backups/b1/b1-logs.gz',
    });
  });

  it('flush uploads every log oldest first and removes it from the spool', async () => {
    const spool = new LogSpool(spoolDir, logger());
    await spool.keep(runLog('a.log.gz', 'A'), target('a'));
    await new Promise((r) => setTimeout(r, 2));
    await spool.keep(runLog('b.log.gz', 'B'), target('b'));
    const uploaded: Array<{ key: string; body: string }> = [];
    const result = await spool.flush(async (file, t) => {
      uploaded.push({ key: t.key, body: readFileSync(file, 'utf8') });
    });
    expect(uploaded).toEqual([
      { key: 'backups/a/a-logs.gz', body: 'A' },
      { key: 'backups/b/b-logs.gz', body: 'B' },
    ]);
    expect(result.uploaded.map((s) => s.target.key)).toEqual(['backups/a/a-logs.gz', 'backups/b/b-logs.gz']);
    expect(result.failed).toEqual([]);
    expect(readdirSync(spoolDir)).toEqual([]);
    expect(await spool.list()).toEqual([]);
    const infos = (await serverLines()).filter((l) => l.msg === 'uploaded spooled log');
    expect(infos).toHaveLength(2);
  });

  it('keeps failed uploads, records the attempt and a sanitised reason, and survives a restart', async () => {
    const first = new LogSpool(spoolDir, logger());
    await first.keep(runLog('b1.log.gz', 'one'), target('b1'));
    await first.keep(runLog('b2.log.gz', 'two'), target('b2'));

    const down = async (): Promise<void> => {
      throw new Error('connect ECONNREFUSED https://AKID:SECRETKEY@minio:9000');
    };
    const r1 = await first.flush(down);
    expect(r1.uploaded).toEqual([]);
    expect(r1.failed.map((f) => [f.target.key, f.attempts])).toEqual([
      ['backups/b1/b1-logs.gz', 1],
      ['backups/b2/b2-logs.gz', 1],
    ]);
    expect(r1.failed[0]?.lastError).toBe('connect ECONNREFUSED https://[REDACTED]@minio:9000');
    expect(serverText).not.toContain('SECRETKEY');
    const warn = (await serverLines()).find((l) => l.msg === 'spooled log upload failed; will retry');
    expect(warn).toMatchObject({ level: 'warn', key: 'backups/b1/b1-logs.gz', attempts: 1 });

    // A new server process: same directory, fresh object.
    const second = new LogSpool(spoolDir, logger());
    const listed = await second.list();
    expect(listed.map((s) => [s.target.key, s.attempts])).toEqual([
      ['backups/b1/b1-logs.gz', 1],
      ['backups/b2/b2-logs.gz', 1],
    ]);
    // Storage partly back: b1 fails again, b2 goes through.
    const r2 = await second.flush(async (_file, t) => {
      if (t.key.includes('b1')) throw new Error('still down');
    });
    expect(r2.uploaded.map((s) => s.target.key)).toEqual(['backups/b2/b2-logs.gz']);
    expect(r2.failed.map((s) => [s.target.key, s.attempts, s.lastError])).toEqual([['backups/b1/b1-logs.gz', 2, 'still down']]);

    const third = new LogSpool(spoolDir, logger());
    const bodies: string[] = [];
    const r3 = await third.flush(async (file) => {
      bodies.push(readFileSync(file, 'utf8'));
    });
    expect(bodies).toEqual(['one']);
    expect(r3.uploaded).toHaveLength(1);
    expect(readdirSync(spoolDir)).toEqual([]);
  });

  it('gives up once, naming the run and the reason, on a log the store refuses for good', async () => {
    const spool = new LogSpool(spoolDir, logger());
    await spool.keep(runLog('long.log.gz', 'one'), target('b-long'));
    await spool.keep(runLog('ok.log.gz', 'two'), target('b-ok'));
    await spool.keepDelete({ location: 'default', key: 'restores/r1/restore-r1-results.gz' });
    const refusal = Object.assign(new Error('the object store refuses PutObject: KeyTooLongError'), { code: 'Refused' });
    const r1 = await spool.flush(async (_file, t) => {
      if (t.key.includes('b-long')) throw new Error('upload failed', { cause: refusal });
      if (t.action === 'delete') throw refusal;
    });
    expect(r1.dropped.map((s) => s.target.key)).toEqual(['backups/b-long/b-long-logs.gz', 'restores/r1/restore-r1-results.gz']);
    expect(r1.uploaded.map((s) => s.target.key)).toEqual(['backups/b-ok/b-ok-logs.gz']);
    expect(r1.failed).toEqual([]);
    const warns = (await serverLines()).filter((l) => typeof l.msg === 'string' && l.msg.includes('for good'));
    expect(warns).toHaveLength(2);
    expect(warns[0]).toMatchObject({ level: 'warn', msg: 'the object store refuses a spooled log of backup b-long for good; gave it up', key: 'backups/b-long/b-long-logs.gz', error: 'upload failed: the object store refuses PutObject: KeyTooLongError' });
    expect(warns[1]).toMatchObject({ msg: 'the object store refuses a spooled deletion of restore r1 for good; gave it up' });
    // Nothing is left to retry: the next pass makes no call and says nothing.
    expect(readdirSync(spoolDir)).toEqual([]);
    let calls = 0;
    const r2 = await spool.flush(async () => { calls++; });
    expect(calls).toBe(0);
    expect(r2).toEqual({ uploaded: [], failed: [], dropped: [] });
  });

  it('concurrent flushes share one pass', async () => {
    const spool = new LogSpool(spoolDir, logger());
    await spool.keep(runLog('x.log.gz', 'x'), target('x'));
    let calls = 0;
    const upload = async (): Promise<void> => {
      calls++;
      await new Promise((r) => setTimeout(r, 10));
    };
    const [a, b] = await Promise.all([spool.flush(upload), spool.flush(upload)]);
    expect(calls).toBe(1);
    expect(a).toBe(b);
  });

  it('works on a missing directory and skips broken entries', async () => {
    const spool = new LogSpool(path.join(root, 'does-not-exist'), logger());
    expect(await spool.list()).toEqual([]);
    expect(await spool.flush(async () => undefined)).toEqual({ uploaded: [], failed: [], dropped: [] });

    const s2 = new LogSpool(spoolDir, logger());
    const kept = await s2.keep(runLog('k.log.gz', 'k'), target('k'));
    writeFileSync(path.join(spoolDir, 'garbage.log.gz.spool.json'), '{not json');
    writeFileSync(
      path.join(spoolDir, 'evil.spool.json'),
      JSON.stringify({ version: 1, id: 'e', dataFile: '../outside', target: target('e'), keptAt: '', attempts: 0 }),
    );
    writeFileSync(
      path.join(spoolDir, 'orphan.log.gz.spool.json'),
      JSON.stringify({ version: 1, id: 'o', dataFile: 'orphan.log.gz', target: target('o'), keptAt: '', attempts: 0 }),
    );
    const files: string[] = [];
    const r = await s2.flush(async (file) => {
      files.push(file);
    });
    expect(files).toEqual([kept.file]);
    expect(r.uploaded).toHaveLength(1);
    // The orphan sidecar is removed; unreadable and malformed ones are left for an operator.
    expect(readdirSync(spoolDir).sort()).toEqual(['evil.spool.json', 'garbage.log.gz.spool.json']);
    const msgs = (await serverLines()).map((l) => l.msg);
    expect(msgs).toContain('ignoring unreadable log spool entry');
    expect(msgs).toContain('ignoring malformed log spool entry');
    expect(msgs).toContain('log spool entry has lost its data file; removing the entry');
  });
});

describe('LogSpool deletions', () => {
  it('keeps a deletion in order with the uploads, survives a restart, and says what it did', async () => {
    const spool = new LogSpool(spoolDir, logger());
    await spool.keepDelete({ location: 'default', key: 'backups/b1/b1.tar.gz', unlessKey: 'backups/b1/stowage-backup.json' });
    await spool.keep(runLog('results.gz', 'results'), { location: 'default', key: 'backups/b1/b1-results.gz' });
    // A restarted server reads the same entries.
    const again = new LogSpool(spoolDir, logger());
    const listed = await again.list();
    expect(listed.map((s) => s.target)).toEqual([
      { location: 'default', key: 'backups/b1/b1.tar.gz', unlessKey: 'backups/b1/stowage-backup.json', action: 'delete' },
      { location: 'default', key: 'backups/b1/b1-results.gz' },
    ]);
    const seen: string[] = [];
    const r = await again.flush(async (file, t) => {
      seen.push(`${t.action ?? 'put'} ${t.key} ${readFileSync(file, 'utf8')}`);
    });
    expect(seen).toEqual(['delete backups/b1/b1.tar.gz ', 'put backups/b1/b1-results.gz results']);
    expect(r.uploaded).toHaveLength(2);
    expect(readdirSync(spoolDir)).toEqual([]);
    const lines = await serverLines();
    expect(lines.some((l) => l.msg === 'the object store could not be reached to delete an object; the deletion is kept in the spool and done when storage is back')).toBe(true);
    expect(lines.some((l) => l.msg === 'did a spooled deletion' && l.key === 'backups/b1/b1.tar.gz')).toBe(true);
  });
});
