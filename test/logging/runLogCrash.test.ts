// A crashed run's log loses no line written more than 100 ms before the crash. A process writes a
// run log through the real run logger (the built dist/logging), printing each line's number and
// time as it logs it; it is SIGKILLed at a random point, 20 times. Each time the log left on disk
// is salvaged the way a restarted server does (salvageLocalRunLog, controller/run/staleRuns.ts), and every line
// logged more than 100 ms before the kill must be in it. The figures are printed: lines lost
// (younger than 100 ms, allowed) and what the gzip file alone would have kept.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { salvageLocalRunLog, salvageRunLog } from '../../src/logging/salvage.js';
import { ensureBuilt } from '../cli/helpers.js';
import { ROOT } from '../support/server.js';

const KILLS = 20;
const BOUND_MS = 100;
const WRITER = path.join(ROOT, 'test/fixtures/runlog/writer.mjs');

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

interface Written {
  seq: number;
  at: number;
}

/** Starts the writer, lets it log for `afterMs` after its first line, SIGKILLs it; what it said it wrote, and when it was killed. */
async function writeAndKill(dir: string, afterMs: number): Promise<{ file: string; written: Written[]; killedAt: number }> {
  const child = spawn(process.execPath, [WRITER, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let killedAt = 0;
  await new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (timer === undefined && /"seq":0/.test(out)) {
        timer = setTimeout(() => {
          killedAt = Date.now();
          child.kill('SIGKILL');
          resolve();
        }, afterMs);
      }
    });
    child.once('exit', (code) => {
      if (killedAt === 0) reject(new Error(`the writer exited (${code}) before it was killed: ${err}`));
    });
  });
  await exited;
  const records = out.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Partial<Written> & { file?: string });
  const file = records.find((r) => r.file !== undefined)?.file;
  if (file === undefined) throw new Error(`the writer printed no log file name: ${out.slice(0, 500)} ${err}`);
  const written = records.filter((r): r is Written => typeof r.seq === 'number' && typeof r.at === 'number');
  return { file: path.join(dir, file), written, killedAt };
}

/** The `seq` of every line in a salvaged (complete) gzip log. */
function seqsIn(file: string): Set<number> {
  const lines = gunzipSync(fs.readFileSync(file)).toString('utf8').split('\n').filter((l) => l !== '');
  return new Set(lines.map((l) => (JSON.parse(l) as { seq?: number }).seq).filter((s): s is number => s !== undefined));
}

describe('a run log killed with SIGKILL', () => {
  it(`keeps every line written more than ${BOUND_MS} ms before the kill (${KILLS} kills at random points)`, async () => {
    await ensureBuilt();
    let lostOld = 0;
    let lostYoung = 0;
    let written = 0;
    let gzipOnlyLostOld = 0;
    for (let i = 0; i < KILLS; i++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-runlog-crash-'));
      dirs.push(dir);
      const run = await writeAndKill(dir, 50 + Math.floor(Math.random() * 1500));
      written += run.written.length;
      const salvaged = path.join(dir, 'salvaged.gz');
      await salvageLocalRunLog(run.file, salvaged, () => []);
      const kept = seqsIn(salvaged);
      // What the gzip file alone held (the salvage before the journal), for the figure.
      const gzOnly = path.join(dir, 'gzip-only.gz');
      await salvageRunLog(fs.createReadStream(run.file), gzOnly, () => []);
      const keptByGzip = seqsIn(gzOnly);
      for (const w of run.written) {
        const old = w.at < run.killedAt - BOUND_MS;
        if (!kept.has(w.seq)) {
          if (old) lostOld++;
          else lostYoung++;
        }
        if (old && !keptByGzip.has(w.seq)) gzipOnlyLostOld++;
      }
      expect(run.written.length).toBeGreaterThan(0);
    }
    process.stderr.write(
      `[runLogCrash] ${KILLS} SIGKILLs, ${written} lines written: ${lostOld} lost that were older than ${BOUND_MS} ms, ` +
        `${lostYoung} lost younger than that; the gzip file alone would have lost ${gzipOnlyLostOld} older than ${BOUND_MS} ms\n`,
    );
    expect(lostOld).toBe(0);
  }, 300_000);
});
