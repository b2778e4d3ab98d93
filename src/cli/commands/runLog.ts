// `backup logs` / `restore logs`: fetch a run log through a DownloadRequest and print it as text
// lines (or the stored JSON lines with -o json). For a run still going, the server serves the lines
// so far and, with --follow, keeps the response open and streams new lines until the run ends.
import type { DownloadTargetKind } from '../../apis/v1/index.js';
import { renderText } from '../../logging/format.js';
import { download, lines, maybeGunzip, type TlsOptions } from './download.js';
import type { CliContext } from './kubeContext.js';

/** One stored JSON log line as `time level message key=value ...`; other lines unchanged. */
export function renderLogLine(line: string, kind: 'backup' | 'restore'): string {
  if (!line.startsWith('{')) return line;
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) return line;
  const r = rec as Record<string, unknown>;
  const time = typeof r.time === 'string' ? r.time : '';
  const level = typeof r.level === 'string' ? r.level : 'info';
  const msg = typeof r.msg === 'string' ? r.msg : typeof r.message === 'string' ? r.message : '';
  // The run's own name is on every line of its log: leave it out.
  const fields = Object.entries(r).filter(([k]) => k !== 'time' && k !== 'level' && k !== 'msg' && k !== 'message' && k !== kind);
  return renderText(time, level, msg, fields);
}

export interface PrintLogOptions extends TlsOptions {
  follow: boolean;
  json: boolean;
  timeoutMs: number;
  /** Stop after this many lines (the demo shows the head of a log). */
  maxLines?: number;
  write?: (line: string) => void;
}

export interface PrintedLog {
  lines: number;
  /** Ctrl-C ended a --follow before the log did. */
  interrupted: boolean;
}

export async function printRunLog(ctx: CliContext, targetKind: Extract<DownloadTargetKind, 'BackupLog' | 'RestoreLog'>, name: string, opts: PrintLogOptions): Promise<PrintedLog> {
  const kind = targetKind === 'BackupLog' ? 'backup' : 'restore';
  const write = opts.write ?? ((l: string) => void process.stdout.write(`${l}\n`));
  const abort = new AbortController();
  const onSigint = (): void => abort.abort();
  if (opts.follow) process.once('SIGINT', onSigint);
  const body = await download(ctx, { kind: targetKind, name }, { ...opts, signal: abort.signal });
  let n = 0;
  try {
    for await (const line of lines(maybeGunzip(body.stream))) {
      if (line === '') continue;
      write(opts.json ? line : renderLogLine(line, kind));
      n++;
      if (opts.maxLines !== undefined && n >= opts.maxLines) break;
    }
  } catch (err) {
    // Ctrl-C during --follow ends the stream: not an error.
    if (!abort.signal.aborted) throw err;
  } finally {
    process.off('SIGINT', onSigint);
    await body.close();
  }
  return { lines: n, interrupted: abort.signal.aborted };
}
