// uploadRunLog's fall-back to the spool: a log of an encrypting location is kept sealed, since the
// spool uploads its files as they are once the location is back.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import winston from 'winston';
import { afterEach, describe, expect, it } from 'vitest';
import { decryptBuffer, newDataKey } from '../../encryption/index.js';
import { LogSpool } from '../../logging/index.js';
import type { ControllerContext } from './context.js';
import { uploadRunLog } from './runs.js';
import { sealBody } from '../../persistence/sealing.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(): { ctx: ControllerContext; spool: LogSpool; logFile: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-runs-'));
  dirs.push(dir);
  const logger = winston.createLogger({ silent: true });
  const spool = new LogSpool(path.join(dir, 'spool'), logger);
  const logFile = path.join(dir, 'backup-ns-b1.log.gz');
  fs.writeFileSync(logFile, 'the log lines, gzipped as the run logger writes them');
  // uploadRunLog uses the spool and the server logger, nothing else of the context.
  return { ctx: { spool, logger } as unknown as ControllerContext, spool, logFile };
}

const down = (): Promise<void> => Promise.reject(new Error('the location is down'));

describe('uploadRunLog into the spool', () => {
  it('keeps an encrypting location\'s log sealed with the run\'s key, and no plaintext copy', async () => {
    const { ctx, spool, logFile } = setup();
    const key = { dataKey: newDataKey(), wrapped: { algorithm: 'AES-256-GCM-CHUNKED-v1', keyManager: 'stowage.dev/secret', keyId: 'k1', wrappedKey: Buffer.alloc(61) } };
    const ref = { backup: 'b1', artifact: 'log' } as const;
    const plain = fs.readFileSync(logFile);
    expect(await uploadRunLog(ctx, { path: logFile }, 'default', 'backups/b1/b1-logs.gz', down, (body) => sealBody(key, ref, body))).toBe('spooled');
    const [kept, ...more] = await spool.list();
    expect(more).toEqual([]);
    expect(kept?.target).toEqual({ location: 'default', key: 'backups/b1/b1-logs.gz' });
    const stored = fs.readFileSync(kept?.file ?? '');
    expect(stored.subarray(0, 6).toString('latin1')).toBe('STWENC');
    expect(stored.includes(plain)).toBe(false);
    expect(await decryptBuffer(stored, key.dataKey, 'backup/b1/log', { what: 'the log' })).toEqual(plain);
    expect(fs.existsSync(logFile)).toBe(false);
    expect(fs.existsSync(`${logFile}.sealed`)).toBe(false);
  });

  it('keeps an unencrypted location\'s log as it is', async () => {
    const { ctx, spool, logFile } = setup();
    const plain = fs.readFileSync(logFile);
    expect(await uploadRunLog(ctx, { path: logFile }, 'default', 'backups/b1/b1-logs.gz', down)).toBe('spooled');
    const [kept] = await spool.list();
    expect(fs.readFileSync(kept?.file ?? '')).toEqual(plain);
  });

  it('does not spool a log whose key the store refuses for good, and says so once', async () => {
    const { spool, logFile } = setup();
    const lines: string[] = [];
    const warn = (msg: string): void => { lines.push(msg); };
    const ctx = { spool, logger: { warn } } as unknown as ControllerContext;
    const refused = (): Promise<void> => Promise.reject(Object.assign(new Error('the object store refuses PutObject b/k: KeyTooLongError'), { code: 'Refused' }));
    expect(await uploadRunLog(ctx, { path: logFile }, 'default', 'backups/b1/b1-logs.gz', refused)).toBe('refused');
    expect(await spool.list()).toEqual([]);
    expect(fs.existsSync(logFile)).toBe(false);
    expect(lines).toEqual(['the run log of backup b1 is not stored: location default refuses it for good (the object store refuses PutObject b/k: KeyTooLongError); its lines are in this server log only']);
  });
});
