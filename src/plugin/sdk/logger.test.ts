import { afterEach, describe, expect, it } from 'vitest';
import { inCallScope, log, setLogLevel, setLogSink } from './logger.js';

const lines: Record<string, unknown>[] = [];
setLogSink((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
afterEach(() => {
  lines.length = 0;
  setLogLevel('info');
});

describe('plugin logger', () => {
  it('stamps the plugin and run of the current call, also after awaits', async () => {
    await inCallScope({ plugin: 'example.com/a', method: 'BackupItemAction.Execute', run: { kind: 'backup', namespace: 'ns', name: 'b1' } }, async () => {
      await new Promise((r) => setTimeout(r, 5));
      log.warn('inside', { item: 'cm' });
    });
    log.info('outside');
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'inside', item: 'cm', plugin: 'example.com/a', run: { kind: 'backup', namespace: 'ns', name: 'b1' } });
    expect(lines[1]).toMatchObject({ level: 'info', msg: 'outside' });
    expect(lines[1]).not.toHaveProperty('run');
    expect(lines[1]).not.toHaveProperty('plugin');
  });

  it('drops lines below the level the server asked for', () => {
    setLogLevel('warn');
    log.info('dropped');
    log.error('kept');
    expect(lines.map((l) => l.msg)).toEqual(['kept']);
    setLogLevel('nonsense'); // ignored
    log.info('still dropped');
    expect(lines).toHaveLength(1);
  });

  it('survives fields that cannot be serialised', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    log.info('cyclic', { cyclic });
    expect(lines[0]).toMatchObject({ msg: 'cyclic', note: 'fields were not serialisable' });
  });
});
