// The server logger: one line per entry on stdout, as readable text or JSON (--log-format).

import winston from 'winston';
import type { LogFormat } from '../config/config.js';
import { LEVEL, MESSAGE, infoFields, isLogLevel, redactFormat, renderJson, renderText, type SecretSet } from './format.js';
import { TailTransport, type LogTail } from './tail.js';

export type { LogFormat };

export interface ServerLoggerOptions {
  /** npm level name (error, warn, info, http, verbose, debug, silly). Default 'info'. */
  level?: string;
  format?: LogFormat;
  /** Where lines go; default process.stdout. */
  stream?: NodeJS.WritableStream;
  /** Values scrubbed from every line; well-known credential shapes are scrubbed regardless. */
  secrets?: SecretSet;
  /** Also keeps the rendered lines here (served to `stowage debug`). */
  tail?: LogTail;
}

/** A winston format rendering `time level message key=value ...` or a JSON object per line. */
export function lineFormat(format: LogFormat): winston.Logform.Format {
  return winston.format((info) => {
    const rec = info as Record<string | symbol, unknown>;
    const time = new Date().toISOString();
    const level = String(rec[LEVEL] ?? info.level);
    const message = typeof info.message === 'string' ? info.message : String(info.message ?? '');
    const fields = infoFields(info as Record<string, unknown>);
    rec[MESSAGE] = format === 'json' ? renderJson(time, level, message, fields) : renderText(time, level, message, fields);
    return info;
  })();
}

export function createServerLogger(opts: ServerLoggerOptions = {}): winston.Logger {
  const level = opts.level ?? 'info';
  if (!isLogLevel(level)) throw new Error(`log level "${level}" is not one of error, warn, info, http, verbose, debug, silly`);
  const format = opts.format ?? 'text';
  if (format !== 'text' && format !== 'json') throw new Error(`log format "${String(format)}" is not one of text, json`);
  const logger = winston.createLogger({
    levels: winston.config.npm.levels,
    level,
    format: winston.format.combine(redactFormat(opts.secrets), lineFormat(format)),
    transports: [
      new winston.transports.Stream({ stream: opts.stream ?? process.stdout }),
      ...(opts.tail !== undefined ? [new TailTransport(opts.tail)] : []),
    ],
    exitOnError: false,
  });
  return logger;
}
