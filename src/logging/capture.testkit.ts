// A server logger whose JSON lines a unit test reads back (what the server log says, and what it
// must not say); left out of the build (tsconfig.build.json).
import { PassThrough } from 'node:stream';
import type winston from 'winston';
import { createServerLogger } from './server.js';

/** A JSON server logger at `level` that hands every chunk it writes to `sink`. */
export function jsonServerLogger(sink: (text: string) => void, level = 'debug'): winston.Logger {
  const stream = new PassThrough();
  stream.on('data', (d: Buffer) => sink(d.toString('utf8')));
  return createServerLogger({ level, format: 'json', stream });
}

/** The records of `text()`, read once the lines written so far have reached the sink. */
export async function jsonLines(text: () => string): Promise<Record<string, unknown>[]> {
  await new Promise((r) => setImmediate(r));
  return text()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
