import { Writable } from 'node:stream';
import winston from 'winston';
import { describe, expect, it } from 'vitest';
import { LogRouter } from './logRouter.js';

function memory(): { logger: winston.Logger; entries: Record<string, unknown>[] } {
  const entries: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      entries.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] }), entries };
}

const run = { kind: 'backup', namespace: 'ns', name: 'b1' };

describe('LogRouter', () => {
  it("routes a run's lines to its logger, tagged with plugin and pid, without letting the plugin override reserved fields", () => {
    const server = memory();
    const runLog = memory();
    const router = new LogRouter(server.logger);
    const unregister = router.register(run, runLog.logger);
    router.route('/p/x', 42, JSON.stringify({ level: 'WARNING', msg: 'hi', plugin: 'example.com/x', run, item: 'cm', logSource: 'forged', message: 'forged' }));
    expect(runLog.entries).toEqual([{ level: 'warn', message: 'hi', item: 'cm', plugin: 'example.com/x', logSource: 'plugin', pluginPid: 42 }]);
    expect(server.entries).toEqual([]);
    unregister();
    router.route('/p/x', 42, JSON.stringify({ level: 'debug', msg: 'late', run }));
    expect(server.entries).toEqual([{ level: 'debug', message: 'late', plugin: '/p/x', logSource: 'plugin', pluginPid: 42, run: 'backup/ns/b1' }]);
  });

  it('sends non-JSON lines to the server log as warnings and ignores blank ones', () => {
    const server = memory();
    const router = new LogRouter(server.logger);
    router.route('/p/x', 7, 'TypeError: boom');
    router.route('/p/x', 7, '   ');
    router.route('/p/x', 7, '[1,2]');
    expect(server.entries).toEqual([
      { level: 'warn', message: 'TypeError: boom', logSource: 'plugin', pluginExecutable: '/p/x', pluginPid: 7 },
      { level: 'warn', message: '[1,2]', logSource: 'plugin', pluginExecutable: '/p/x', pluginPid: 7 },
    ]);
  });

  it('uses the most recent logger registered for a run', () => {
    const server = memory();
    const first = memory();
    const second = memory();
    const router = new LogRouter(server.logger);
    router.register(run, first.logger);
    const un2 = router.register(run, second.logger);
    router.route('/p/x', 1, JSON.stringify({ msg: 'a', run }));
    un2();
    router.route('/p/x', 1, JSON.stringify({ msg: 'b', run }));
    expect(second.entries.map((e) => e.message)).toEqual(['a']);
    expect(first.entries.map((e) => e.message)).toEqual(['b']);
  });
});
