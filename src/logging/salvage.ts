// Salvaging a run log whose run ended without its server: the gzip file ends wherever the process
// stopped (no trailer, often mid-block), or it was complete but lacks the run's real end. What
// inflates is kept up to the last whole line, closing lines are appended, and the result is a
// complete gzip file again. Streamed, so a large log never sits in memory whole.

import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, rmSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { Writable } from 'node:stream';
import zlib from 'node:zlib';
import { runLogJournal } from './runLog.js';

export interface SalvageResult {
  /** Whole lines kept from the source (the appended ones not counted). */
  recovered: number;
  /** Why inflating stopped before the end of the source (damaged bytes), if it did. */
  damage?: string;
}

async function write(w: Writable, text: string): Promise<void> {
  if (!w.write(text)) await once(w, 'drain');
}

/**
 * Inflates `source` into a new gzip file at `dest`, keeping every whole line, then appends
 * `closing(recovered)`'s lines. Inflating uses Z_SYNC_FLUSH as its finish mode, which yields what a
 * cut-off stream holds instead of failing on its missing end; a last line with no newline was being
 * written when the process stopped and is dropped. Bytes that do not inflate end the salvage there.
 */
export async function salvageRunLog(
  source: AsyncIterable<Uint8Array>, dest: string, closing: (recovered: number) => string[], opts: { plain?: boolean } = {},
): Promise<SalvageResult> {
  const gzip = zlib.createGzip();
  const out = createWriteStream(dest);
  gzip.pipe(out);
  const written = new Promise<void>((resolve, reject) => {
    out.once('close', resolve);
    out.once('error', reject);
    gzip.once('error', reject);
  });
  const gunzip = zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH });
  let damage: string | undefined;
  // A plain source (the run log's journal) is read as it is.
  const feeding = opts.plain === true ? Promise.resolve() : (async () => {
    try {
      for await (const chunk of source) {
        if (gunzip.destroyed) return;
        if (!gunzip.write(chunk)) await once(gunzip, 'drain');
      }
      gunzip.end();
    } catch (err) {
      // A source that fails to read ends the salvage as damaged bytes would.
      gunzip.destroy(err instanceof Error ? err : new Error(String(err)));
    }
  })();
  const decoder = new StringDecoder('utf8');
  let carry = '';
  let recovered = 0;
  try {
    for await (const chunk of (opts.plain === true ? source : gunzip) as AsyncIterable<Buffer>) {
      const parts = (carry + decoder.write(chunk)).split('\n');
      carry = parts.pop() ?? '';
      const whole = parts.filter((l) => l !== '');
      recovered += whole.length;
      if (whole.length > 0) await write(gzip, `${whole.join('\n')}\n`);
    }
  } catch (err) {
    damage = err instanceof Error ? err.message : String(err);
  }
  await feeding;
  for (const line of closing(recovered)) await write(gzip, `${line}\n`);
  gzip.end();
  await written;
  return { recovered, ...(damage !== undefined ? { damage } : {}) };
}

/** Whether a dead run left a log in the scratch directory: its gzip file or its journal. */
export function hasLocalRunLog(gzipPath: string): boolean {
  return existsSync(gzipPath) || existsSync(runLogJournal(gzipPath));
}

/** Removes what a run's log left in the scratch directory. */
export function removeLocalRunLog(gzipPath: string): void {
  rmSync(gzipPath, { force: true });
  rmSync(runLogJournal(gzipPath), { force: true });
}

/**
 * Salvages a dead run's local log into `dest`: from its journal, which has every line written up
 * to the crash, or from the gzip file when there is no journal (one that could not be written).
 */
export function salvageLocalRunLog(gzipPath: string, dest: string, closing: (recovered: number) => string[]): Promise<SalvageResult> {
  const journal = runLogJournal(gzipPath);
  if (existsSync(journal)) return salvageRunLog(createReadStream(journal), dest, closing, { plain: true });
  return salvageRunLog(createReadStream(gzipPath), dest, closing);
}
